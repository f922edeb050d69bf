# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
package.xml names every dependency the code imports, so that a rosdep install has everything.

Every module of ``acres_bridge/`` and ``launch/`` and every test is parsed (no import runs).
Each top-level module it imports that is neither the standard library nor the project's own
must come from a key of package.xml, as the real rosdep resolves that key on the rosdistro
snapshot (support/rosdep_snapshot.py; Jazzy on Ubuntu noble): a ROS package's key is its
name; a system key provides the module when it installs Debian's package of it
(``python3-<module>``, Debian's naming) or the PyPI distribution that has it installed in
this prefix. The package's own code needs the key as ``exec_depend`` (or ``depend``); a
test's import may be any of those or ``test_depend``. A Python library key that nothing
imports any more is reported too. The imports no key provides are :data:`PIP_ONLY`, each
with what a ROS user installs instead.
"""

import functools
import importlib.metadata
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

from support.imports import imported_modules
from support.paths import ROOT
from support.rosdep_snapshot import resolve

# Where keys are resolved (the rosdep test checks every distribution the README names).
DISTRO, PLATFORM = 'jazzy', 'ubuntu:noble'
# Imports that no rosdep key provides, and what a colcon user runs instead (the README says so).
PIP_ONLY = {'foxglove': 'pip install foxglove-sdk (foxglove_view only)',
            'mcap': "pip install mcap (the emulator's episode log only)"}
RUNTIME_TAGS = ('depend', 'exec_depend')
TEST_TAGS = RUNTIME_TAGS + ('test_depend',)
# A resolution: key -> (installer, packages), as support.rosdep_snapshot.resolve gives it.
Resolution = dict[str, tuple[str, list[str]]]


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


def provides(key: str, resolution: tuple[str, list[str]], module: str) -> bool:
    """Tell whether a key, resolved by rosdep, installs ``module``."""
    installer, packages = resolution
    if key == module:
        return True                                     # a ROS package: its own name
    if installer == 'apt':
        return f'python3-{module.lower().replace("_", "-")}' in packages
    if installer == 'pip':
        names = {_normal(name) for name in packages}
        return any(_normal(name) in names for name in _distributions().get(module, []))
    return False


def _normal(name: str) -> str:
    return name.lower().replace('_', '-').replace('.', '-')


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _package_code() -> list[pathlib.Path]:
    return sorted((ROOT / 'acres_bridge').rglob('*.py')) + sorted((ROOT / 'launch').glob('*.py'))


def _test_code() -> list[pathlib.Path]:
    """
    Return the Python files of test/ that pytest imports, and the client scripts tests start.

    Not test/data (the seed's files, verbatim) nor the launch tests, which run in the
    ``launch_test`` tool of the ros2 tools (as the launch files run in ``ros2 launch``). The
    clients live in acres_devkit/clients/, as benchmarks start them too.
    """
    skipped = (ROOT / 'test' / 'data', ROOT / 'test' / 'system' / 'launch' / 'launch_tests')
    return sorted([path for path in (ROOT / 'test').rglob('*.py')
                   if not any(path.is_relative_to(folder) for folder in skipped)]
                  + list((ROOT / 'acres_devkit' / 'clients').glob('*.py')))


def _test_helpers() -> set[str]:
    """
    Return the modules a test may import from the tree.

    The package support of test/, any module above by its name (a client script imports its
    sibling, a launch test its checks), and the development kit.
    """
    return {path.stem for path in _test_code()} | {'support', 'acres_devkit'}


def _missing(found: dict[str, set[str]], keys: set[str], resolved: Resolution) -> list[str]:
    """Return the modules of ``found`` (but PIP_ONLY's) that no key of ``keys`` installs."""
    return [f'{module}, imported by {", ".join(sorted(files)[:3])}'
            for module, files in sorted(found.items())
            if module not in PIP_ONLY and not any(
                provides(key, resolved[key], module) for key in keys if key in resolved)]


def _sources() -> set[str]:
    """Return the packages of this repository besides acres_bridge (msg/: acres_interfaces)."""
    return {ElementTree.parse(path).getroot().findtext('name')
            for path in ROOT.glob('*/package.xml')}


@functools.cache
def _resolved() -> Resolution:
    """Resolve package.xml's keys with rosdep; a package of this repository is a source."""
    keys = sorted(declared(TEST_TAGS) - _sources())
    resolved = resolve(keys, DISTRO, PLATFORM)
    unresolved = sorted(set(keys) - set(resolved))
    assert not unresolved, f'rosdep resolves no rule for {unresolved} ({DISTRO}, {PLATFORM})'
    return {**resolved, **{name: ('source', []) for name in _sources()}}


def test_package_xml_names_every_import_of_the_package_as_a_run_dependency():
    missing = _missing(third_party(_package_code(), {'acres_bridge'}), declared(RUNTIME_TAGS),
                       _resolved())
    assert not missing, f'no exec_depend of package.xml installs: {missing}'


def test_package_xml_names_every_import_of_the_tests():
    missing = _missing(third_party(_test_code(), {'acres_bridge'} | _test_helpers()),
                       declared(TEST_TAGS), _resolved())
    assert not missing, f'no key of package.xml installs: {missing}'


def test_package_xml_names_no_python_library_that_nothing_imports():
    used = set(third_party(_package_code() + _test_code(), {'acres_bridge'} | _test_helpers()))
    libraries = {key: resolution for key, resolution in _resolved().items()
                 if resolution[0] == 'pip' or any(name.startswith('python3-')
                                                  for name in resolution[1])}
    stale = sorted(key for key, resolution in libraries.items()
                   if not any(provides(key, resolution, module) for module in used))
    assert libraries and not stale, f'package.xml names Python libraries nothing imports: {stale}'


def test_no_rosdep_key_installs_the_pip_only_imports():
    """If a key appears for one of them, package.xml should name it instead."""
    candidates = {module: [f'python3-{module.lower()}', *(
        f'python3-{_normal(name)}{suffix}' for name in _distributions().get(module, [])
        for suffix in ('', '-pip'))] for module in PIP_ONLY}
    resolved = resolve(sorted({key for keys in candidates.values() for key in keys}),
                       DISTRO, PLATFORM)
    assert all(module in _distributions() for module in PIP_ONLY), _distributions()
    assert not resolved, f'rosdep now has keys for {resolved}: use them in package.xml'


def test_the_check_sees_a_missing_key(tmp_path):
    module = tmp_path / 'probe.py'
    module.write_text('import json\nimport numpy.linalg\nfrom PIL import Image\n'
                      'from . import sibling\nfrom acres_bridge.protocol import frames\n')
    assert imported_modules(module) == {'json', 'numpy', 'PIL', 'acres_bridge'}
    resolved = {'python3-numpy': ('apt', ['python3-numpy']), 'rclpy': ('apt', ['ros-x-rclpy']),
                'python3-rosbags-pip': ('pip', ['rosbags'])}
    found = {'PIL': {'probe.py'}, 'numpy': {'probe.py'}, 'rclpy': {'probe.py'},
             'rosbags': {'probe.py'}, 'mcap': {'probe.py'}}
    assert _missing(found, set(resolved), resolved) == ['PIL, imported by probe.py']
    assert _missing(found, {'python3-numpy'}, resolved) == [
        'PIL, imported by probe.py', 'rclpy, imported by probe.py',
        'rosbags, imported by probe.py']
