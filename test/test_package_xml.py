# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
package.xml names every dependency the code imports, so that a rosdep install has everything.

Every module of ``acres_bridge/`` and ``launch/`` and every test is parsed (no import runs);
each top-level module it imports that is neither the standard library nor the project's own is
looked up in :data:`MODULE_KEYS` (Python module -> rosdep key). The package's own code needs the
key as ``exec_depend`` (or ``depend``); a test's import may be any of those or ``test_depend``.
A Python library key in package.xml that nothing imports any more is reported too.
"""

import ast
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Python module -> rosdep key. ROS packages are imported under their own name.
ROS_PACKAGES = frozenset((
    'acres_interfaces', 'action_msgs', 'ament_index_python', 'builtin_interfaces',
    'diagnostic_msgs', 'geometry_msgs', 'launch', 'launch_ros', 'launch_testing',
    'launch_testing_ros', 'nav_msgs', 'rcl_interfaces', 'rclpy', 'rosgraph_msgs', 'sensor_msgs',
    'simulation_interfaces', 'std_msgs', 'tf2_msgs'))
PYTHON_LIBRARIES = {
    'PIL': 'python3-pil', 'hypothesis': 'python3-hypothesis', 'mcap': 'python3-mcap',
    'numpy': 'python3-numpy', 'psutil': 'python3-psutil', 'pyproj': 'python3-pyproj',
    'pytest': 'python3-pytest', 'rosbags': 'python3-rosbags', 'websockets': 'python3-websockets',
    'yaml': 'python3-yaml'}
# Modules that no rosdep key installs: what a colcon user runs instead (the README says so).
PIP_ONLY = {'foxglove': 'pip install foxglove-sdk (foxglove_view only)'}
MODULE_KEYS = {**{name: name for name in ROS_PACKAGES}, **PYTHON_LIBRARIES}
RUNTIME_TAGS = ('depend', 'exec_depend')
TEST_TAGS = RUNTIME_TAGS + ('test_depend',)


def imported_modules(path: pathlib.Path) -> set[str]:
    """Return the top-level modules a file imports by absolute name (``a.b`` gives ``a``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition('.')[0])
    return names


def third_party(paths: list[pathlib.Path], local: set[str]) -> dict[str, set[str]]:
    """Return module -> the files that import it, for modules neither stdlib nor ``local``."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for name in imported_modules(path) - local - set(sys.stdlib_module_names):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def declared(tags: tuple[str, ...]) -> set[str]:
    """Return the keys of package.xml under the given tags."""
    root = ElementTree.parse(ROOT / 'package.xml').getroot()
    return {element.text.strip() for tag in tags for element in root.iter(tag)}


def _package_code() -> list[pathlib.Path]:
    return sorted((ROOT / 'acres_bridge').rglob('*.py')) + sorted((ROOT / 'launch').glob('*.py'))


def _test_code() -> list[pathlib.Path]:
    return sorted((ROOT / 'test').glob('*.py')) + sorted((ROOT / 'test' / 'support').glob('*.py'))


def _test_helpers() -> set[str]:
    """Return the modules a test may import from the tree: test/, its support and tools/."""
    return ({path.stem for path in (ROOT / 'test').glob('*.py')} | {'support'}
            | {path.stem for path in (ROOT / 'tools').glob('*.py')})


def _missing(found: dict[str, set[str]], keys: set[str]) -> list[str]:
    return [f'{module} ({MODULE_KEYS[module]}), imported by {", ".join(sorted(files)[:3])}'
            for module, files in sorted(found.items())
            if module in MODULE_KEYS and MODULE_KEYS[module] not in keys]


def test_every_import_has_a_known_rosdep_key():
    found = {**third_party(_package_code(), {'acres_bridge'}),
             **third_party(_test_code(), {'acres_bridge'} | _test_helpers())}
    unknown = {module: files for module, files in found.items()
               if module not in MODULE_KEYS and module not in PIP_ONLY}
    assert not unknown, (f'imports without a rosdep key in MODULE_KEYS of {__name__}: '
                         f'{unknown}')


def test_package_xml_names_every_import_of_the_package_as_a_run_dependency():
    missing = _missing(third_party(_package_code(), {'acres_bridge'}), declared(RUNTIME_TAGS))
    assert not missing, f'package.xml lacks an exec_depend for: {missing}'


def test_package_xml_names_every_import_of_the_tests():
    missing = _missing(third_party(_test_code(), {'acres_bridge'} | _test_helpers()),
                       declared(TEST_TAGS))
    assert not missing, f'package.xml lacks a test_depend (or exec_depend) for: {missing}'


def test_package_xml_names_no_python_library_that_nothing_imports():
    used = set(third_party(_package_code() + _test_code(), {'acres_bridge'}))
    stale = {key for module, key in PYTHON_LIBRARIES.items() if module not in used}
    assert not stale & declared(TEST_TAGS), f'package.xml names unused {stale}'


def test_the_check_sees_a_missing_key(tmp_path):
    module = tmp_path / 'probe.py'
    module.write_text('import json\nimport numpy.linalg\nfrom mcap.reader import make_reader\n'
                      'from . import sibling\nfrom acres_bridge.protocol import frames\n')
    assert imported_modules(module) == {'json', 'numpy', 'mcap', 'acres_bridge'}
    found = {'mcap': {'probe.py'}, 'numpy': {'probe.py'}}
    assert _missing(found, {'python3-numpy'}) == ['mcap (python3-mcap), imported by probe.py']
