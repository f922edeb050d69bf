# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Launch the simulator emulator and a whole session against it: try the bridge without the game.

    ros2 launch acres_bridge emulator_session.launch.py
    ros2 launch acres_bridge emulator_session.launch.py vehicles:=polaris,maxxum rviz:=true
    ros2 launch acres_bridge emulator_session.launch.py lockstep:=true mode:=core
    ros2 launch acres_bridge emulator_session.launch.py view:=foxglove    # ws://127.0.0.1:8765
    ros2 launch acres_bridge emulator_session.launch.py record_dataset:=true dataset_set:=emu

Starts ``acres_sim_emulator`` (the control channel on ``port``, one sensor stream per vehicle
on ``sensor_ports``, or 5601, 5602, ... when empty) and includes ``acres_session.launch.py``
with the same ports; the other arguments pass through to it, and ``dataset_agents`` is
``vehicles`` (one recorder per vehicle with ``record_dataset:=true``). The bridge connects when
the emulator listens (it retries every ``reconnect_s``). The emulator is a plain process named
``acres_sim_emulator`` (no ROS node); the nodes are those of acres_session.launch.py. Ctrl-C
ends the emulator and the session with exit 0. ``rviz:=true`` without rviz2 installed stops the
launch before the emulator starts. Works with the launch and launch_ros of Humble to Kilted.
"""

from launch import LaunchContext
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.actions import ExecuteProcess
from launch.actions import IncludeLaunchDescription
from launch.actions import OpaqueFunction
from launch.launch_description_sources import load_python_launch_file_as_module
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import ExecutableInPackage
from launch_ros.substitutions import FindPackageShare
import yaml

PACKAGE = 'acres_bridge'

# (argument, default, description) of the emulator.
EMULATOR_ARGUMENTS = (
    ('vehicles', 'polaris', 'the agents, comma separated: polaris, maxxum'),
    ('mode', 'game', 'emulate the Unreal game (game) or the ACRES Core server (core)'),
    ('lockstep', 'false', 'start paused: the world advances on step requests only'),
    ('rate', '1.0', 'the real-time factor of the playing state'),
    ('seed', '42', 'the sensor noise seed'),
    ('port', '5600', 'the control channel port'),
    ('sensor_ports', '', 'sensor stream ports, one per vehicle, comma separated; empty: '
     '5601, 5602, ...'),
)
# Arguments handed to acres_session.launch.py unchanged.
SESSION_ARGUMENTS = (
    ('namespace', '', "the session's namespace"),
    ('publish_tf', '', 'world -> base_footprint on /tf: none, ins or truth'),
    ('point_fields', '', 'xyzi, xyzirt, autoware or autoware_dense'),
    ('compressed', '', 'camera/image_raw/compressed: jpeg, png or none (the parameter '
     'compressed.format; encoded only while subscribed)'),
    ('sensor_processes', '', "where the agents' sensor streams run: auto, in_process or "
     'per_agent; empty: auto'),
    ('use_sim_time', 'true', 'the clients (rviz2, the recorders) follow /clock; the bridge '
     'keeps the system clock'),
    ('dds_profile', '', 'a Fast DDS XML profile for the ROS processes; empty: none'),
    ('rviz', 'false', 'start rviz2 too (it must be installed)'),
    ('view', 'none', 'a live view: none, or foxglove (ws://127.0.0.1:8765)'),
    ('view_port', '8765', 'the port of the view (0: any free port, in its log line)'),
    ('record_dataset', 'false', 'start a lidar_recorder for each vehicle'),
    ('dataset_set', '', "the recorders' dataset set; empty: the recorder's default"),
    ('dataset_sequence', '', 'the sequence name (-<vehicle> added for several vehicles); '
     "empty: the recorder's default"),
    ('dataset_split', '', "the sequences' split tag; empty: the recorder's default"),
    ('log_level', 'info', 'the ROS log level'),
)


def _launch_setup(context: LaunchContext) -> list:
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    command = [ExecutableInPackage('acres_sim_emulator', PACKAGE),
               '--control-port', value('port'), '--vehicles', value('vehicles'),
               '--mode', value('mode'), '--rate', value('rate'), '--seed', value('seed')]
    if value('sensor_ports'):
        command += ['--sensor-ports', value('sensor_ports')]
    if yaml.safe_load(value('lockstep')) is True:
        command.append('--lockstep')
    session_file = PathJoinSubstitution(
        [FindPackageShare(PACKAGE), 'launch', 'acres_session.launch.py']).perform(context)
    # The session's own check, here too: nothing, not even the emulator, starts when it fails.
    load_python_launch_file_as_module(session_file).require_executables(context)
    emulator = ExecuteProcess(cmd=command, name='acres_sim_emulator', output='screen')
    passed = [(name, value(name)) for name in
              ['port', 'sensor_ports'] + [item[0] for item in SESSION_ARGUMENTS]]
    session = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(session_file),
        launch_arguments=passed + [('dataset_agents', value('vehicles'))])
    return [emulator, session]


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and start the emulator and the session once they are known."""
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in EMULATOR_ARGUMENTS + SESSION_ARGUMENTS),
        OpaqueFunction(function=_launch_setup),
    ])
