#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Capture host B's end of a two-host link and read its RTPS fragments (root, tcpdump).

The command line of acres_devkit.bench.capture_two_hosts, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.capture_two_hosts import main

if __name__ == '__main__':
    sys.exit(main())
