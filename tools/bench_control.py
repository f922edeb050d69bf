#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Time a lockstep step's round trip through ROS: services and the action.

The command line of acres_devkit.bench.control, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.control import main

if __name__ == '__main__':
    sys.exit(main())
