# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The lidar_recorder node: clouds from the graph written as a dataset sequence (dataset/)."""
