#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure a session of agents (one process or one per agent) against the DDS floor.

The command line of acres_devkit.bench.session, where the benchmark lives (``--help``).
"""

import sys

from acres_devkit.bench.session import main

if __name__ == '__main__':
    sys.exit(main())
