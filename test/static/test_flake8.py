# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""flake8 with ament_flake8's choices (setup.cfg): 99 columns, Google import order, quotes."""

import subprocess
import sys

from support.paths import ROOT


def test_flake8_finds_nothing():
    result = subprocess.run(
        [sys.executable, '-m', 'flake8', '--config', 'setup.cfg',
         'setup.py', 'acres_bridge', 'acres_devkit', 'launch', 'test', 'tools'],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f'flake8 found:\n{result.stdout}{result.stderr}'
