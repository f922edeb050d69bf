# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The real rosdep (PyPI, in the prefix) against a rosdistro snapshot, without a network.

The snapshot is a folder of ros/rosdistro's files: ``index-v4.yaml``, ``rosdep/base.yaml``,
``rosdep/python.yaml`` and each distribution's ``distribution.yaml``; ``ACRES_ROSDISTRO``
names it (.ci/run does). rosdep reads it through ``ROSDEP_SOURCE_PATH`` (a sources list of
file:// URLs) and ``ROSDISTRO_INDEX_URL``, and keeps its cache in a ``ROS_HOME`` of its own,
made once per test process by ``rosdep update``; no prefix is on its paths. Without the
variable the tests that need it are skipped with one reason (:data:`SKIP_REASON`); under
``CI=true`` that is a failure.
"""

import atexit
import functools
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile

import pytest

from acres_devkit.environment import in_ci

SNAPSHOT_VARIABLE = 'ACRES_ROSDISTRO'
SKIP_REASON = (f'no rosdistro snapshot: set {SNAPSHOT_VARIABLE}=DIR, a folder of ros/rosdistro '
               'with index-v4.yaml and rosdep/*.yaml')
ROSDEP = Path(sys.executable).with_name('rosdep')
# The distributions the README names, each on the Ubuntu it is released for.
TARGETS = (('humble', 'ubuntu:jammy'), ('jazzy', 'ubuntu:noble'), ('kilted', 'ubuntu:noble'))


def require_snapshot() -> Path:
    """Return the snapshot's folder; skip without one (fail under CI=true or when misnamed)."""
    named = os.environ.get(SNAPSHOT_VARIABLE)
    if not named:
        if in_ci():
            pytest.fail(f'{SNAPSHOT_VARIABLE} is not set (CI=true: .ci/run sets it)')
        pytest.skip(SKIP_REASON)
    folder = Path(named).resolve()
    missing = [name for name in ('index-v4.yaml', 'rosdep/base.yaml', 'rosdep/python.yaml')
               if not (folder / name).is_file()]
    if missing:
        pytest.fail(f'{SNAPSHOT_VARIABLE}={named} lacks {", ".join(missing)}')
    if not ROSDEP.is_file():
        pytest.fail(f'no {ROSDEP}: tools/requirements.txt installs rosdep; run tools/bootstrap.py')
    return folder


@functools.cache
def _environment(folder: Path) -> dict[str, str]:
    home = Path(tempfile.mkdtemp(prefix='acres_rosdep-'))
    atexit.register(shutil.rmtree, home, True)
    sources = home / 'sources.list.d'
    sources.mkdir()
    (sources / '20-default.list').write_text(
        ''.join(f'yaml {(folder / "rosdep" / name).as_uri()}\n'
                for name in ('base.yaml', 'python.yaml')))
    # A clean machine's: with --ignore-src rosdep also skips every package of the prefixes on
    # AMENT_PREFIX_PATH (this prefix has rclpy...), which would leave their keys unchecked.
    env = {key: value for key, value in os.environ.items()
           if key not in ('AMENT_PREFIX_PATH', 'ROS_PACKAGE_PATH', 'CMAKE_PREFIX_PATH',
                          'ROS_DISTRO')
           and not key.startswith('ROSDISTRO')}
    env.update(ROSDEP_SOURCE_PATH=str(sources), ROS_HOME=str(home / 'ros_home'),
               ROSDISTRO_INDEX_URL=(folder / 'index-v4.yaml').as_uri(), ROS_PYTHON_VERSION='3')
    updated = subprocess.run([str(ROSDEP), 'update', '--include-eol-distros'], env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert updated.returncode == 0, f'rosdep update: {updated.stdout}{updated.stderr}'
    return env


def rosdep(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``rosdep ARGS`` on the snapshot (its output and errors in ``stdout``)."""
    return subprocess.run([str(ROSDEP), *args], env=_environment(require_snapshot()), cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)


def resolve(keys: list[str], distro: str, platform: str) -> dict[str, tuple[str, list[str]]]:
    """
    Return what ``rosdep resolve`` gives for each key: (installer, packages).

    A key that rosdep cannot resolve is left out.
    """
    output = rosdep('resolve', *keys, '--rosdistro', distro, '--os', platform).stdout
    resolved: dict[str, tuple[str, list[str]]] = {}
    key = installer = None
    for line in output.splitlines():
        if line.startswith('#ROSDEP[') and line.endswith(']'):
            key, installer = line[len('#ROSDEP['):-1], None
        elif line.startswith('#') and key is not None:
            installer = line[1:]
            resolved[key] = (installer, [])
        elif line.strip() and key is not None and installer is not None:
            resolved[key][1].extend(line.split())
    return resolved
