#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the LiDAR data set's recording loss and its reader's speed.

The command line of acres_devkit.bench.dataset, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.dataset import main

if __name__ == '__main__':
    sys.exit(main())
