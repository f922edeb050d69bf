#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the emulator's real-time factor, lockstep or playing.

The command line of acres_devkit.bench.emulator, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.emulator import main

if __name__ == '__main__':
    sys.exit(main())
