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

"""pep257 with ament_pep257's convention (its default ignore list)."""

from pathlib import Path
import subprocess
import sys

ROOT = Path(__file__).resolve().parent.parent
# ament_pep257 ignores these (D100-D107: missing docstrings; D203, D212, D404: style choices).
AMENT_IGNORES = 'D100,D101,D102,D103,D104,D105,D106,D107,D203,D212,D404'


def test_pep257_finds_nothing():
    result = subprocess.run(
        [sys.executable, '-m', 'pydocstyle', f'--ignore={AMENT_IGNORES}',
         '--match-dir', r'^(?!data$|\.).*', 'acres_bridge', 'launch', 'test', 'tools'],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f'pydocstyle found:\n{result.stdout}{result.stderr}'
