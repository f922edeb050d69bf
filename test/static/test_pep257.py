# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""pep257 with ament_pep257's convention (its default ignore list)."""

import subprocess
import sys

from support.paths import ROOT

# ament_pep257 ignores these (D100-D107: missing docstrings; D203, D212, D404: style choices).
AMENT_IGNORES = 'D100,D101,D102,D103,D104,D105,D106,D107,D203,D212,D404'


def test_pep257_finds_nothing():
    result = subprocess.run(
        [sys.executable, '-m', 'pydocstyle', f'--ignore={AMENT_IGNORES}',
         '--match-dir', r'^(?!data$|\.).*', 'acres_bridge', 'acres_devkit', 'launch', 'test',
         'tools'],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f'pydocstyle found:\n{result.stdout}{result.stderr}'
