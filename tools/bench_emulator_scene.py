#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Time the emulator's sensor models, in ms per call.

The command line of acres_devkit.bench.emulator_scene, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.emulator_scene import main

if __name__ == '__main__':
    sys.exit(main())
