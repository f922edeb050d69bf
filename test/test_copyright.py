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

"""Every source file of the project carries the license header."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# test/data holds the seed's own reader example, kept verbatim.
SOURCE_DIRS = ('acres_bridge', 'launch', 'test', 'tools')
EXCLUDED = (ROOT / 'test' / 'data',)


def project_python_files() -> list[Path]:
    files = [ROOT / 'setup.py']
    for folder in SOURCE_DIRS:
        files += sorted((ROOT / folder).rglob('*.py'))
    return [path for path in files
            if not any(path.is_relative_to(excluded) for excluded in EXCLUDED)]


def test_every_python_file_has_the_apache_header():
    missing = []
    for path in project_python_files():
        head = path.read_text(encoding='utf-8')[:1000]
        if 'Copyright' not in head or 'Apache License, Version 2.0' not in head:
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f'files without the license header: {missing}'
