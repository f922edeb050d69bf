# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The Foxglove view: the ROS graph served to Foxglove clients over WebSocket.

definitions needs no rclpy (message definitions as ``ros2msg`` text); the rest is the node, its
subscriptions and its parameters.
"""
