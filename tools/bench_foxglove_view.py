#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the Foxglove view's CPU against the cheapest reader of the same topics.

The command line of acres_devkit.bench.foxglove_view, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.foxglove_view import main

if __name__ == '__main__':
    sys.exit(main())
