# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""flake8 with ament_flake8's choices (setup.cfg): 99 columns, Google import order, quotes."""

from pathlib import Path
import subprocess
import sys

ROOT = Path(__file__).resolve().parent.parent


def test_flake8_finds_nothing():
    result = subprocess.run(
        [sys.executable, '-m', 'flake8', '--config', 'setup.cfg',
         'setup.py', 'acres_bridge', 'launch', 'test', 'tools'],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f'flake8 found:\n{result.stdout}{result.stderr}'
