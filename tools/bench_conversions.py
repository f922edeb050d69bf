#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Time each conversion of a simulator frame to its message, in ms per call.

The command line of acres_devkit.bench.conversions, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.conversions import main

if __name__ == '__main__':
    sys.exit(main())
