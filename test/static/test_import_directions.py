# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The tree's folders depend one way: test/ and tools/ on acres_devkit/, all three on the package.

The package (acres_bridge/, launch/) carries nothing of the tests: it imports neither the
development kit, test/'s modules nor pytest. tools/ and acres_devkit/ never reach into test/,
by import or by a path, and tools/ and test/ do not import each other: what they share lives in
acres_devkit/. Nothing edits ``sys.path`` to reach a module (flake8's E402 would then be
silenced), since every module is importable from the prefix. Files are parsed, not run.
"""

import ast
from pathlib import Path
import re

from support.imports import imported_modules
from support.paths import ROOT

# A silenced "module level import not at top of file": the mark of an import after a path edit.
SILENCED_E402 = re.compile(r'noqa:\s*E402')


def python_files(*folders: str) -> list[Path]:
    """Return the Python files below the folders of the repository."""
    return sorted(path for folder in folders for path in (ROOT / folder).rglob('*.py'))


def offenders(paths: list[Path], modules: set[str]) -> dict[str, list[str]]:
    """Return file -> the modules of ``modules`` it imports, for the files that import any."""
    found = {str(path.relative_to(ROOT)): sorted(imported_modules(path) & modules)
             for path in paths}
    return {path: names for path, names in found.items() if names}


def modules_of_test() -> set[str]:
    """Return the names under which test/'s modules import: support and each file's stem."""
    return {path.stem for path in python_files('test')} | {'support', 'conftest'}


def tool_modules() -> set[str]:
    """Return the stems of tools/'s scripts (tools/ is no package: only a sys.path edit)."""
    return {path.stem for path in python_files('tools')} - modules_of_test()


def test_the_package_imports_nothing_of_the_tests():
    assert offenders(python_files('acres_bridge', 'launch'),
                     modules_of_test() | {'acres_devkit', 'pytest'}) == {}


def test_tools_and_the_devkit_import_nothing_of_test():
    assert offenders(python_files('tools', 'acres_devkit'), modules_of_test()) == {}


def test_test_imports_nothing_of_tools():
    assert offenders(python_files('test'), tool_modules()) == {}


def test_tools_and_the_devkit_name_no_path_into_test():
    """A script started by path counts too: ``ROOT / 'test' / ...`` or ``'test/...'``."""
    named = {}
    for path in python_files('tools', 'acres_devkit'):
        tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
        strings = [node.value for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        hits = [text for text in strings if text == 'test' or text.startswith('test/')]
        if hits:
            named[str(path.relative_to(ROOT))] = hits
    assert named == {}


def test_nothing_edits_sys_path_to_import():
    edits = {}
    for path in python_files('acres_bridge', 'launch', 'tools', 'acres_devkit', 'test'):
        text = path.read_text(encoding='utf-8')
        lines = [number for number, line in enumerate(text.splitlines(), 1)
                 if SILENCED_E402.search(line)
                 or line.lstrip().startswith(('sys.path.insert', 'sys.path.append'))]
        if lines:
            edits[str(path.relative_to(ROOT))] = lines
    assert edits == {}


def test_the_check_sees_an_import_of_a_test_module(tmp_path: Path):
    probe = tmp_path / 'probe.py'
    probe.write_text('import os\nfrom support.waiting import wait_until\n'
                     'from . import sibling\nimport acres_devkit.ports\n')
    assert imported_modules(probe) == {'os', 'support', 'acres_devkit'}
    assert 'support' in modules_of_test() and 'bootstrap' in tool_modules()
