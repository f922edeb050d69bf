# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Every source file of the project opens with the SPDX licence header (REUSE's short form)."""

from pathlib import Path
import re

from support.paths import ROOT

# test/data holds the seed's own reader example, kept verbatim.
SOURCE_DIRS = ('acres_bridge', 'acres_devkit', 'launch', 'test', 'tools')
EXCLUDED = (ROOT / 'test' / 'data',)
# The two lines, in the comment syntax of the file, within its first lines (after a shebang
# or an XML declaration).
SPDX = re.compile(r'^(?:#|<!--) SPDX-FileCopyrightText: \d{4} The acres_bridge authors(?: -->)?\n'
                  r'(?:#|<!--) SPDX-License-Identifier: Apache-2\.0(?: -->)?$', re.MULTILINE)
HEAD_LINES = 3


def project_source_files() -> list[Path]:
    files = [ROOT / 'setup.py', ROOT / 'msg' / 'CMakeLists.txt', ROOT / 'tools' / 'test',
             ROOT / 'tools' / 'demo', ROOT / '.ci' / 'run']
    for folder in SOURCE_DIRS:
        files += sorted((ROOT / folder).rglob('*.py'))
    files += sorted((ROOT / 'tools' / 'interfaces').rglob('CMakeLists.txt'))
    files += sorted((ROOT / 'config').glob('*.xml')) + sorted((ROOT / 'config').glob('*.yaml'))
    return [path for path in files
            if not any(path.is_relative_to(excluded) for excluded in EXCLUDED)]


def has_spdx_header(text: str) -> bool:
    """Whether the SPDX lines stand at the top (within the first three lines)."""
    return SPDX.search('\n'.join(text.splitlines()[:HEAD_LINES + 1])) is not None


def test_every_source_file_has_the_spdx_header():
    missing = [str(path.relative_to(ROOT)) for path in project_source_files()
               if not has_spdx_header(path.read_text(encoding='utf-8'))]
    assert not missing, f'files without the SPDX header: {missing}'


def test_the_check_knows_a_header_from_a_file_without_one():
    assert has_spdx_header('# SPDX-FileCopyrightText: 2026 The acres_bridge authors\n'
                           '# SPDX-License-Identifier: Apache-2.0\n\n"""Doc."""\n')
    assert has_spdx_header('<?xml version="1.0"?>\n'
                           '<!-- SPDX-FileCopyrightText: 2026 The acres_bridge authors -->\n'
                           '<!-- SPDX-License-Identifier: Apache-2.0 -->\n<dds/>\n')
    assert not has_spdx_header('"""Doc."""\n# SPDX-License-Identifier: Apache-2.0\n')
    assert not has_spdx_header('# SPDX-FileCopyrightText: 2026 The acres_bridge authors\n'
                               '# SPDX-License-Identifier: MIT\n')
