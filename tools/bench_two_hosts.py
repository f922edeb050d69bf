#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the bridge across two hosts (network namespaces; root) in every configuration.

The command line of acres_devkit.bench.two_hosts, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.two_hosts import main

if __name__ == '__main__':
    sys.exit(main())
