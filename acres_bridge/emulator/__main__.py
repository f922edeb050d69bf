# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Run the emulator: ``python -m acres_bridge.emulator --help``."""

import sys

from acres_bridge.emulator.server import main

sys.exit(main())
