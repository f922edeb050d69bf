# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Launch a whole ACRES session: the ``acres_bridge`` executable, and rviz2 when asked.

The ``acres_bridge`` executable serves the control channel and runs one sensor bridge per agent.

    ros2 launch acres_bridge acres_session.launch.py
    ros2 launch acres_bridge acres_session.launch.py rviz:=true use_sim_time:=true
    ros2 launch acres_bridge acres_session.launch.py port:=5700 sensor_ports:=5701,5702
    profile=$(ros2 pkg prefix acres_bridge)/share/acres_bridge/config/fastdds_large_data.xml
    ros2 launch acres_bridge acres_session.launch.py dds_profile:=$profile

Parameters come from ``config/acres_session.yaml`` (or ``params_file``); an argument given on
the command line overrides the file's value, an empty one leaves it. ``sensor_ports`` empty
means: each agent's port from the simulator's ``hello`` reply. ``dds_profile`` sets
``FASTDDS_DEFAULT_PROFILES_FILE`` (and ``FASTRTPS_DEFAULT_PROFILES_FILE`` on the distributions
with Fast DDS 2.x, which read only that name) and ``RMW_FASTRTPS_USE_QOS_FROM_XML=1`` for the
processes of this launch, rviz2 included.
Works with the launch and launch_ros of Humble to Kilted.
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
from launch_ros.substitutions import FindPackageShare
import yaml

PACKAGE = 'acres_bridge'
FAST_DDS_2_DISTROS = ('humble', 'iron', 'jazzy')
_CONFIG = FindPackageShare(PACKAGE)

# (argument, default, description); an empty default keeps the parameters file's value.
ARGUMENTS = (
    ('namespace', '', "the session's namespace (agents' topics go under /<namespace>/<agent>)"),
    ('params_file', PathJoinSubstitution([_CONFIG, 'config', 'acres_session.yaml']),
     'the parameters of the acres_bridge node'),
    ('host', '', 'the simulator host (loopback only)'),
    ('port', '', 'the control channel port (-SimControl=; the file says 5600)'),
    ('sensor_ports', '', 'sensor stream ports, one per agent, comma separated; empty: from '
     'the hello reply'),
    ('frame_prefix', '', 'prepended to every frame id; empty: the agent name when there are '
     'several agents'),
    ('publish_tf', '', 'world -> base_footprint on /tf: none, ins or truth'),
    ('point_fields', '', 'xyzi or xyzirt'),
    ('use_sim_time', 'false', 'the nodes (and rviz2) follow /clock'),
    ('dds_profile', '', 'a Fast DDS XML profile for this launch (e.g. the package\'s '
     'config/fastdds_large_data.xml); empty: none'),
    ('rviz', 'false', 'start rviz2 too'),
    ('rviz_config', PathJoinSubstitution([_CONFIG, 'config', 'acres.rviz']),
     'the rviz2 configuration'),
    ('log_level', 'info', 'the ROS log level'),
)


def _ports(text: str) -> list[int]:
    """Return '5601,5602' (or '[5601, 5602]') as a list of ints."""
    return [int(item) for item in text.strip('[] ').replace(' ', '').split(',') if item]


def _launch_setup(context: LaunchContext) -> list:
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

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
    }
    overrides = {name: yaml.safe_load(text)
                 for name, text in acres_bridge_parameters.items() if text}
    if value('sensor_ports'):
        overrides['sensor_ports'] = _ports(value('sensor_ports'))
    use_sim_time = yaml.safe_load(value('use_sim_time'))
    overrides['use_sim_time'] = use_sim_time
    namespace = value('namespace')
    actions.append(Node(
        package=PACKAGE,
        executable='acres_bridge',
        name='acres_bridge',
        namespace=namespace,
        parameters=[value('params_file'), overrides],
        arguments=['--ros-args', '--log-level', value('log_level')],
        output='screen',
        emulate_tty=True,
    ))
    if yaml.safe_load(value('rviz')) is True:
        actions.append(Node(
            package='rviz2',
            executable='rviz2',
            name='rviz2',
            arguments=['-d', value('rviz_config')],
            parameters=[{'use_sim_time': use_sim_time}],
            output='screen',
        ))
    return actions


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and start the nodes once they are known."""
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in ARGUMENTS),
        OpaqueFunction(function=_launch_setup),
    ])
