#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Print throughput and latency figures of the protocol layer.

The command line of acres_devkit.bench.protocol, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.protocol import main

if __name__ == '__main__':
    sys.exit(main())
