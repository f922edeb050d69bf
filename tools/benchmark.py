#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the sensor bridge against the DDS floor: delivery, latency, CPU and memory.

The command line of acres_devkit.bench.sensor, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.sensor import main

if __name__ == '__main__':
    sys.exit(main())
