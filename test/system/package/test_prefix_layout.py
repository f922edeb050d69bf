# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The prefix tools/bootstrap.py makes is laid out as colcon lays out a package.

The real ros2 tools find a package's executables in lib/<package>/ and its launch and config
files by walking share/<package>/ (os.walk does not enter a directory symlink), through the
ament index of AMENT_PREFIX_PATH, which <prefix>/setup.bash sets. These tests read the
prefix of the interpreter that runs them; the ros2 commands themselves are tested on top.
"""

import importlib.metadata
import os
from pathlib import Path
import subprocess
import sys

import pytest
from support.paths import ROOT

from acres_devkit.environment import ros_distro

PREFIX = Path(sys.prefix)
PACKAGE = 'acres_bridge'


@pytest.fixture
def ament_prefix(monkeypatch):
    """Point the ament index at this interpreter's prefix, as its setup.bash does."""
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(PREFIX))
    return PREFIX


def _console_scripts() -> set[str]:
    """Name the console scripts of the installed acres_bridge distribution (setup.py's)."""
    distribution = importlib.metadata.distribution(PACKAGE)
    return {entry.name for entry in distribution.entry_points
            if entry.group == 'console_scripts'}


def _walked(directory: Path) -> set[str]:
    """Return the names of the files os.walk finds under a directory, as ros2 launch looks."""
    return {name for _, _, files in os.walk(directory) for name in files}


def test_every_console_script_is_an_executable_of_lib_package():
    lib = PREFIX / 'lib' / PACKAGE
    scripts = _console_scripts()
    assert {'acres_bridge', 'acres_sim_emulator', 'sensor_bridge', 'sim_control'} <= scripts
    found = {path.name for path in lib.iterdir()
             if path.is_file() and os.access(path, os.X_OK)}
    assert found == scripts, f'{lib} holds {sorted(found)}; setup.py has {sorted(scripts)}'


def test_an_executable_of_lib_package_runs():
    result = subprocess.run([str(PREFIX / 'lib' / PACKAGE / 'acres_sim_emulator'), '--help'],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert '--control-port' in result.stdout


def test_the_ament_index_finds_every_launch_and_config_file(ament_prefix):
    from ament_index_python.packages import get_package_share_directory

    share = Path(get_package_share_directory(PACKAGE))
    assert share == PREFIX / 'share' / PACKAGE
    for name, patterns in (('launch', ['*.py']), ('config', ['*.yaml', '*.xml', '*.rviz'])):
        directory = share / name
        assert directory.is_dir() and not directory.is_symlink(), f'{directory}'
        expected = {path.name for pattern in patterns for path in (ROOT / name).glob(pattern)}
        assert expected, f'no {patterns} in {ROOT / name}'
        missing = expected - _walked(directory)
        assert not missing, (f'{sorted(missing)} of {ROOT / name} are not in {directory}: run '
                             'python3 tools/bootstrap.py, which links new files')
    assert (share / 'package.xml').read_bytes() == (ROOT / 'package.xml').read_bytes()


def test_the_ament_index_lists_the_package(ament_prefix):
    from ament_index_python.packages import get_packages_with_prefixes

    assert get_packages_with_prefixes()[PACKAGE] == str(PREFIX)


def _sourced(script: Path, times: int, environment: dict[str, str]) -> dict[str, str]:
    """Source a setup.bash `times` times in a clean bash and return the variables it set."""
    names = ('AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH', 'PATH', 'ROS_DISTRO', 'ROS_VERSION')
    command = f'. {script}; ' * times + ''.join(f'echo "${name}"; ' for name in names)
    result = subprocess.run(['bash', '--noprofile', '--norc', '-c', command], env=environment,
                            capture_output=True, text=True, timeout=30, check=True)
    return dict(zip(names, result.stdout.splitlines()))


def test_setup_bash_sets_the_environment_of_the_ros2_commands():
    script = PREFIX / 'setup.bash'
    environment = {'PATH': '/usr/bin:/bin', 'HOME': os.environ.get('HOME', '/')}
    once = _sourced(script, 1, environment)
    assert once['AMENT_PREFIX_PATH'] == str(PREFIX)
    assert once['CMAKE_PREFIX_PATH'] == str(PREFIX)
    assert once['PATH'] == f'{PREFIX}/bin:/usr/bin:/bin'
    assert once['ROS_DISTRO'] == ros_distro()
    assert once['ROS_VERSION'] == '2'
    # Sourcing it again (a new terminal tab, a second script) changes nothing.
    assert _sourced(script, 2, environment) == once


def test_setup_bash_keeps_other_prefixes_after_its_own():
    other = '/opt/other_ws/install'
    environment = {'PATH': '/usr/bin:/bin', 'AMENT_PREFIX_PATH': other}
    sourced = _sourced(PREFIX / 'setup.bash', 1, environment)
    assert sourced['AMENT_PREFIX_PATH'] == f'{PREFIX}:{other}'
