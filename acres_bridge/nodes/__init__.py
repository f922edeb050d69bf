# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The executables' thin mains: each composes a wing into a process (``ros2 run``)."""
