# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

from glob import glob

from setuptools import find_packages
from setuptools import setup

package_name = 'acres_bridge'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'acres_devkit', 'acres_devkit.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml') + glob('config/*.xml')
         + glob('config/*.rviz') + glob('config/*.json')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='acres_bridge maintainers',
    maintainer_email='acres-bridge@example.com',
    description='ROS 2 bridge of the ACRES farm simulator',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'sensor_bridge = acres_bridge.nodes.sensor_bridge:main',
            'sim_control = acres_bridge.nodes.sim_control:main',
            'acres_bridge = acres_bridge.nodes.acres_bridge:main',
            'acres_sim_emulator = acres_bridge.emulator.server:main',
            'acres_fault_proxy = acres_bridge.emulator.fault_tool:main',
            'lidar_recorder = acres_bridge.nodes.lidar_recorder:main',
            'foxglove_view = acres_bridge.nodes.foxglove_view:main',
        ],
    },
)
