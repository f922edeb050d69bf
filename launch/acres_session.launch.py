# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Launch a whole ACRES session: the ``acres_bridge`` executable, and rviz2 and recorders when asked.

    ros2 launch acres_bridge acres_session.launch.py
    ros2 launch acres_bridge acres_session.launch.py rviz:=true
    ros2 launch acres_bridge acres_session.launch.py port:=5700 sensor_ports:=5701,5702
    ros2 launch acres_bridge acres_session.launch.py record_dataset:=true dataset_set:=field_a
    profile=$(ros2 pkg prefix acres_bridge)/share/acres_bridge/config/fastdds_large_data.xml
    ros2 launch acres_bridge acres_session.launch.py dds_profile:=$profile

Nodes (``ros2 node list``), each once:

- ``/<namespace>/acres_bridge`` and ``/<namespace>/sim_control``: the two nodes of the
  ``acres_bridge`` process, the sensor side (one sensor bridge per agent) and the control
  channel. The launch gives this process no ``name``: launch_ros turns ``name`` into
  ``-r __node:=NAME``, which would rename both nodes to one name;
- ``/rviz2`` with ``rviz:=true``;
- ``/foxglove_view`` with ``view:=foxglove``: the graph on ws://127.0.0.1:8765 for Foxglove;
- ``/<namespace>/<agent>/lidar_recorder`` for each agent of ``dataset_agents`` with
  ``record_dataset:=true``: its cloud and odometry to the LiDAR dataset under ``$ACRES_DATA``
  (parameters ``set``, ``sequence``, ``split``; a ``dataset_sequence`` given for several agents
  becomes ``<sequence>-<agent>``, and an empty one the recorder's own name, the start time in
  UTC and the agent).

Time: the clients this launch starts (rviz2, the recorders) follow /clock, as ``use_sim_time``
says (true by default). The bridge's own nodes keep the system clock: they publish /clock, every
stamp they take from a frame is simulation time already, and their timers (diagnostics,
reconnects, time-outs) must run while a lockstep simulation is paused.

Parameters come from ``config/acres_session.yaml`` (or ``params_file``); an argument given on
the command line overrides the file's value, an empty one leaves it. ``sensor_ports`` empty
means: each agent's port from the simulator's ``hello`` reply. ``dds_profile`` sets
``FASTDDS_DEFAULT_PROFILES_FILE`` (and ``FASTRTPS_DEFAULT_PROFILES_FILE`` on the distributions
with Fast DDS 2.x, which read only that name) and ``RMW_FASTRTPS_USE_QOS_FROM_XML=1`` for the
processes of this launch, rviz2 included. ``rviz:=true`` without rviz2 installed (or
``record_dataset:=true`` without ``lidar_recorder``) stops the launch with one line before any
process starts. After Ctrl-C, launch gives acres_bridge 20 s (``sigterm_timeout``) to stop its
sensor processes and itself, and each lidar_recorder as long to commit what it holds, before
it sends SIGTERM. Works with the launch and launch_ros of
Humble to Kilted.
"""

import os

from launch import LaunchContext
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.actions import OpaqueFunction
from launch.actions import SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import ExecutableInPackage
from launch_ros.substitutions import FindPackageShare
import yaml

PACKAGE = 'acres_bridge'
FAST_DDS_2_DISTROS = ('humble', 'iron', 'jazzy')
VIEWS = ('none', 'foxglove')
# How long launch waits after Ctrl-C before it escalates to SIGTERM on acres_bridge and each
# lidar_recorder: above the bridge's own bounded stop (each sensor process gets 5 s to end,
# then SIGTERM, then SIGKILL) and the recorder's (it converts the clouds it holds and commits
# the open shard), where launch's 5 s default cut a clean stop short on a loaded machine, and
# a recorder's SIGTERM loses what it had not committed. A sigterm_timeout:= argument on the
# command line still wins.
STOP_SIGTERM_TIMEOUT_S = '20'
_CONFIG = FindPackageShare(PACKAGE)

# (argument, default, description); an empty default keeps the parameters file's value.
ARGUMENTS = (
    ('namespace', '', "the session's namespace (agents' topics go under /<namespace>/<agent>)"),
    ('params_file', PathJoinSubstitution([_CONFIG, 'config', 'acres_session.yaml']),
     'the parameters of the acres_bridge process (its nodes acres_bridge and sim_control)'),
    ('host', '', 'the simulator host (loopback only)'),
    ('port', '', 'the control channel port (-SimControl=; the file says 5600)'),
    ('sensor_ports', '', 'sensor stream ports, one per agent, comma separated; empty: from '
     'the hello reply'),
    ('frame_prefix', '', 'prepended to every frame id; empty: the agent name when there are '
     'several agents'),
    ('publish_tf', '', 'world -> base_footprint on /tf: none, ins or truth'),
    ('point_fields', '', 'xyzi, xyzirt, autoware or autoware_dense'),
    ('compressed', '', 'camera/image_raw/compressed: jpeg, png or none (the parameter '
     'compressed.format; encoded only while subscribed)'),
    ('sensor_processes', '', "where the agents' sensor streams run: auto, in_process or "
     "per_agent; empty: the file's value (auto)"),
    ('use_sim_time', 'true', 'the clients of this launch (rviz2, the recorders) follow /clock; '
     'the bridge keeps the system clock'),
    ('dds_profile', '', 'a Fast DDS XML profile for this launch (e.g. the package\'s '
     'config/fastdds_large_data.xml); empty: none'),
    ('rviz', 'false', 'start rviz2 too (it must be installed)'),
    ('view', 'none', 'a live view: none, or foxglove (the foxglove_view node, '
     'ws://127.0.0.1:8765, for Foxglove or Lichtblick)'),
    ('view_port', '8765', 'the port of the view (0: any free port, in its log line)'),
    ('rviz_config', PathJoinSubstitution([_CONFIG, 'config', 'acres.rviz']),
     'the rviz2 configuration'),
    ('record_dataset', 'false', 'start a lidar_recorder for each agent of dataset_agents'),
    ('dataset_agents', 'polaris', 'the agents to record, comma separated'),
    ('dataset_set', '', "the recorders' dataset set; empty: the recorder's default"),
    ('dataset_sequence', '', 'the sequence name (-<agent> added for several agents); empty: '
     "the recorder's default (start time in UTC and agent)"),
    ('dataset_split', '', "the sequences' split tag (train, val, test, guard, excluded or "
     "none); empty: the recorder's default"),
    ('log_level', 'info', 'the ROS log level'),
)


def _ports(text: str) -> list[int]:
    """Return '5601,5602' (or '[5601, 5602]') as a list of ints."""
    return [int(item) for item in text.strip('[] ').replace(' ', '').split(',') if item]


def _names(text: str) -> list[str]:
    """Return 'polaris, maxxum' as ['polaris', 'maxxum']."""
    return [item.strip() for item in text.split(',') if item.strip()]


def _flag(context: LaunchContext, name: str) -> bool:
    return yaml.safe_load(LaunchConfiguration(name).perform(context)) is True


def require_executables(context: LaunchContext) -> None:
    """
    Fail the launch, before any process starts, when an asked-for executable is missing.

    emulator_session.launch.py calls this too, so that nothing starts there either.

    :raises RuntimeError: one line naming the argument, the executable and what to do.
    """
    wanted = []
    view = LaunchConfiguration('view').perform(context)
    if view not in VIEWS:
        raise RuntimeError(f'view:={view} is not one of {", ".join(VIEWS)}')
    if view == 'foxglove':
        wanted.append(('view:=foxglove', PACKAGE, 'foxglove_view',
                       'install acres_bridge with its foxglove_view'))
    if _flag(context, 'rviz'):
        wanted.append(('rviz:=true', 'rviz2', 'rviz2', 'install rviz2 (ros-$ROS_DISTRO-rviz2)'))
    if _flag(context, 'record_dataset'):
        wanted.append(('record_dataset:=true', PACKAGE, 'lidar_recorder',
                       'install acres_bridge with its lidar_recorder'))
    for argument, package, executable, remedy in wanted:
        try:
            ExecutableInPackage(executable, package).perform(context)
        except Exception as exc:    # PackageNotFoundError or SubstitutionFailure
            reason = exc.args[0] if exc.args else exc
            raise RuntimeError(
                f'{argument} needs the executable {executable} of package {package}, which is '
                f'not installed ({reason}): {remedy}, or launch without {argument}') from None


def _recorders(context: LaunchContext, namespace: str, use_sim_time: bool) -> list[Node]:
    """Return one lidar_recorder node per agent to record."""
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    agents = _names(value('dataset_agents'))
    sequence = value('dataset_sequence')
    nodes = []
    for agent in agents:
        parameters = {'use_sim_time': use_sim_time}
        if sequence:
            parameters['sequence'] = f'{sequence}-{agent}' if len(agents) > 1 else sequence
        for name in ('set', 'split'):
            if value(f'dataset_{name}'):
                parameters[name] = value(f'dataset_{name}')
        nodes.append(Node(
            package=PACKAGE,
            executable='lidar_recorder',
            name='lidar_recorder',       # one node per process: the name renames only it
            namespace='/'.join(part for part in (namespace.strip('/'), agent) if part),
            parameters=[parameters],
            arguments=['--ros-args', '--log-level', value('log_level')],
            output='screen',
            emulate_tty=True,
            sigterm_timeout=LaunchConfiguration('sigterm_timeout',
                                                default=STOP_SIGTERM_TIMEOUT_S),
        ))
    return nodes


def _launch_setup(context: LaunchContext) -> list:
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    require_executables(context)
    actions = []
    profile = value('dds_profile')
    if profile:
        actions += [
            SetEnvironmentVariable('FASTDDS_DEFAULT_PROFILES_FILE', profile),
            SetEnvironmentVariable('RMW_FASTRTPS_USE_QOS_FROM_XML', '1'),
        ]
        if os.environ.get('ROS_DISTRO', '') in FAST_DDS_2_DISTROS:
            # Fast DDS 2.x reads only the old name; 3.x (Kilted on) warns that it is deprecated.
            actions.append(SetEnvironmentVariable('FASTRTPS_DEFAULT_PROFILES_FILE', profile))
    acres_bridge_parameters = {
        'host': value('host'),
        'port': value('port'),
        'frame_prefix': value('frame_prefix'),
        'publish_tf': value('publish_tf'),
        'point_fields': value('point_fields'),
        'compressed.format': value('compressed'),
        'sensor_processes': value('sensor_processes'),
    }
    overrides = {name: yaml.safe_load(text)
                 for name, text in acres_bridge_parameters.items() if text}
    if value('sensor_ports'):
        overrides['sensor_ports'] = _ports(value('sensor_ports'))
    use_sim_time = _flag(context, 'use_sim_time')
    namespace = value('namespace')
    actions.append(Node(
        # No name=: it would become -r __node:=NAME and rename both nodes of the process.
        package=PACKAGE,
        executable='acres_bridge',
        namespace=namespace,
        parameters=[value('params_file'), overrides],
        arguments=['--ros-args', '--log-level', value('log_level')],
        output='screen',
        emulate_tty=True,
        sigterm_timeout=LaunchConfiguration('sigterm_timeout', default=STOP_SIGTERM_TIMEOUT_S),
    ))
    if _flag(context, 'rviz'):
        actions.append(Node(
            package='rviz2',
            executable='rviz2',
            name='rviz2',
            arguments=['-d', value('rviz_config')],
            parameters=[{'use_sim_time': use_sim_time}],
            output='screen',
        ))
    if value('view') == 'foxglove':
        actions.append(Node(
            package=PACKAGE,
            executable='foxglove_view',
            name='foxglove_view',        # one node per process: the name renames only it
            parameters=[{'use_sim_time': use_sim_time, 'port': int(value('view_port'))}],
            arguments=['--ros-args', '--log-level', value('log_level')],
            output='screen',
        ))
    if _flag(context, 'record_dataset'):
        actions += _recorders(context, namespace, use_sim_time)
    return actions


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and start the nodes once they are known."""
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in ARGUMENTS),
        OpaqueFunction(function=_launch_setup),
    ])
