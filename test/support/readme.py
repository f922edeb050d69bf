# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The commands the README gives users, read from its bash blocks, for tests to run as given."""

from pathlib import Path
import re

README = Path(__file__).resolve().parents[2] / 'README.md'


def readme_command(start: str) -> str:
    """
    Return the one command line of the README's bash blocks that begins with ``start``.

    :raises AssertionError: when there is none, or two that differ.
    """
    blocks = re.findall(r'^```(?:bash|sh|shell|console)\n(.*?)^```', README.read_text(),
                        re.MULTILINE | re.DOTALL)
    lines = {line.strip().removeprefix('$ ') for block in blocks for line in block.splitlines()}
    found = sorted(line for line in lines if line.startswith(start))
    assert len(found) == 1, (f'README.md: {len(found)} different lines begin with {start!r}: '
                             f'{found}')
    return found[0]
