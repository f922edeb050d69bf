# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Launch the sensor bridge of one agent: its sensor stream to topics under its namespace.

    ros2 launch acres_bridge sensor_bridge.launch.py                      # the Polaris, 5601
    ros2 launch acres_bridge sensor_bridge.launch.py namespace:=maxxum    # config/maxxum.yaml
    ros2 launch acres_bridge sensor_bridge.launch.py namespace:=polaris port:=5611
    ros2 launch acres_bridge sensor_bridge.launch.py view:=foxglove       # ws://127.0.0.1:8765

The node is ``/<namespace>/sensor_bridge``, alone in its process (so ``name`` renames only
it). The parameters come from ``config/<vehicle>.yaml`` (``vehicle`` defaults to the namespace);
an argument given on the command line overrides the file's value, an empty one leaves it. The
node keeps the system clock by default: it is the source of /clock, and every stamp it takes
from a frame is simulation time anyway. Ctrl-C ends the launch with exit 0.
Works with the launch and launch_ros of Humble to Kilted.
"""

from launch import LaunchContext
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.actions import OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare
import yaml

PACKAGE = 'acres_bridge'

# (argument, default, description); an empty default keeps the parameters file's value.
ARGUMENTS = (
    ('namespace', 'polaris', 'the agent: its topics are /<namespace>/lidar/points, ...'),
    ('vehicle', LaunchConfiguration('namespace'),
     'picks config/<vehicle>.yaml (polaris or maxxum; default: the namespace)'),
    ('params_file', '', 'a parameters file instead of config/<vehicle>.yaml'),
    ('host', '', 'the sensor stream host (loopback only)'),
    ('port', '', 'the sensor stream port'),
    ('frame_prefix', '', 'prepended to every frame id (e.g. polaris)'),
    ('publish_clock', '', 'publish /clock (true for agent 0)'),
    ('publish_tf', '', 'world -> base_footprint on /tf: none, ins or truth'),
    ('point_fields', '', 'xyzi, xyzirt, autoware or autoware_dense'),
    ('compressed', '', 'camera/image_raw/compressed: jpeg, png or none (the parameter '
     'compressed.format; encoded only while subscribed)'),
    ('use_sim_time', 'false', "the node's own clock (the /diagnostics stamps) follows /clock; "
     'the stamps of the sensor topics are simulation time either way'),
    ('view', 'none', 'a live view: none, or foxglove (the foxglove_view node, '
     'ws://127.0.0.1:8765)'),
    ('view_port', '8765', 'the port of the view (0: any free port, in its log line)'),
    ('log_level', 'info', 'the ROS log level'),
)


def _launch_setup(context: LaunchContext) -> list:
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    params_file = value('params_file') or PathJoinSubstitution(
        [FindPackageShare(PACKAGE), 'config', value('vehicle') + '.yaml']).perform(context)
    sensor_bridge_parameters = {
        'host': value('host'),
        'port': value('port'),
        'frame_prefix': value('frame_prefix'),
        'publish_clock': value('publish_clock'),
        'publish_tf': value('publish_tf'),
        'point_fields': value('point_fields'),
        'compressed.format': value('compressed'),
    }
    overrides = {name: yaml.safe_load(text)
                 for name, text in sensor_bridge_parameters.items() if text}
    overrides['use_sim_time'] = yaml.safe_load(value('use_sim_time'))
    if value('view') not in ('none', 'foxglove'):
        raise RuntimeError(f'view:={value("view")} is not one of none, foxglove')
    view = [Node(
        package=PACKAGE,
        executable='foxglove_view',
        name='foxglove_view',
        # The timeline shows simulation time.
        parameters=[{'use_sim_time': True, 'port': int(value('view_port'))}],
        arguments=['--ros-args', '--log-level', value('log_level')],
        output='screen',
    )] if value('view') == 'foxglove' else []
    return view + [Node(
        package=PACKAGE,
        executable='sensor_bridge',
        name='sensor_bridge',
        namespace=value('namespace'),
        parameters=[params_file, overrides],
        arguments=['--ros-args', '--log-level', value('log_level')],
        output='screen',
        emulate_tty=True,
    )]


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and start the node once they are known."""
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in ARGUMENTS),
        OpaqueFunction(function=_launch_setup),
    ])
