# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
docs/design.md's layout names every module of the package, and only modules that exist.

The layout is the first fenced block under the heading "Layout": a tree in which a folder is
``name/`` and a module ``name.py``, each two spaces deeper than its folder, followed by what it
is. Lines indented deeper than a folder's children continue a description. ``__init__.py`` and
``__main__.py`` are left out of the tree: every folder has the first, and the second only runs
the folder's package.
"""

import re

from support.paths import ROOT

DESIGN = ROOT / 'docs' / 'design.md'
ENTRY = re.compile(r'^( *)([A-Za-z_][A-Za-z0-9_]*(?:\.py|/))(?:\s|$)')
UNLISTED = {'__init__.py', '__main__.py'}


def layout_block(text: str) -> list[str]:
    """Return the lines of the first fenced block after the heading "Layout"."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r'^#+\s+Layout\s*$', line))
    opening = next(i for i in range(start + 1, len(lines)) if lines[i].startswith('```'))
    closing = next(i for i in range(opening + 1, len(lines)) if lines[i].startswith('```'))
    return lines[opening + 1:closing]


def listed_paths(block: list[str]) -> set[str]:
    """Return the paths the tree names, folders with a trailing slash."""
    parents: dict[int, str] = {}
    paths = set()
    for line in block:
        match = ENTRY.match(line)
        if not match:
            continue
        depth, name = len(match.group(1)), match.group(2)
        if depth % 2 or (depth and depth - 2 not in parents):
            continue  # a description's continuation, not an entry of the tree
        path = parents.get(depth - 2, '') + name
        parents = {level: folder for level, folder in parents.items() if level < depth}
        if name.endswith('/'):
            parents[depth] = path
        paths.add(path)
    return paths


def package_modules() -> set[str]:
    """Return the package's modules as paths from the repository root."""
    return {str(path.relative_to(ROOT)) for path in (ROOT / 'acres_bridge').rglob('*.py')
            if path.name not in UNLISTED}


def test_the_layout_parser_reads_a_tree_and_skips_continuations():
    block = ['acres_bridge/',
             '  protocol/     the wire',
             '    frames.py  TSS1 frames; encoders',
             '               and.py decoders (a continuation, not a module)',
             '  geometry.py   rotations',
             'tools/           set-up']
    assert listed_paths(block) == {'acres_bridge/', 'acres_bridge/protocol/',
                                   'acres_bridge/protocol/frames.py',
                                   'acres_bridge/geometry.py', 'tools/'}


def test_every_module_of_the_package_is_in_the_design_layout():
    listed = listed_paths(layout_block(DESIGN.read_text()))
    missing = sorted(package_modules() - listed)
    assert missing == [], f'docs/design.md\'s layout leaves out {missing}'


def test_the_design_layout_names_no_module_that_is_gone():
    listed = listed_paths(layout_block(DESIGN.read_text()))
    gone = sorted(path for path in listed
                  if path.startswith('acres_bridge/') and not (ROOT / path).exists())
    assert gone == [], f'docs/design.md\'s layout names {gone}, which the tree no longer has'
