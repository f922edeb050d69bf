# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The Foxglove view's parts that need no rclpy: ROS 2 message definitions as ``ros2msg`` text.

Standard library and ament_index_python only; the node is :mod:`acres_bridge.nodes.foxglove_view`.
"""
