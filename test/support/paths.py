# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Where the tests find the repository and their shared files, from any folder of test/.

The test files sit at different depths (test/unit/protocol/, test/system/launch/, ...); a path
counted from this module's place does not change when a test file moves.
"""

from pathlib import Path

# The repository's root: acres_bridge/, launch/, tools/, docs/ and test/ are its folders.
ROOT = Path(__file__).resolve().parents[2]
TEST = ROOT / 'test'
# The seed's Hello and reader example, read by the tests of several layers.
DATA = TEST / 'data'
