# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The real rosdep resolves every key of both packages, for each distribution the README names.

rosdep (PyPI) runs against the rosdistro snapshot that ACRES_ROSDISTRO names
(support/rosdep_snapshot.py), as a ROS user's ``rosdep`` runs against the published files:
``rosdep check`` of both package paths for Humble on Ubuntu jammy and for Jazzy and Kilted on
noble, and the README's own ``rosdep install`` line, simulated, in a workspace laid out as the
README lays it out. Nothing is installed and no network is used.
"""

import functools
import os
from pathlib import Path

import pytest
from support.paths import ROOT
from support.readme import readme_command
from support.rosdep_snapshot import resolve
from support.rosdep_snapshot import rosdep
from support.rosdep_snapshot import TARGETS

PATHS = (str(ROOT), str(ROOT / 'msg'))


@functools.cache
def _keys() -> list[str]:
    """Return the keys of both packages (not the packages themselves), as rosdep reads them."""
    result = rosdep('keys', '--from-paths', *PATHS, '--ignore-src')
    assert result.returncode == 0, result.stdout
    return sorted(line for line in result.stdout.splitlines()
                  if line and not line.startswith('WARNING'))


@pytest.mark.parametrize(('distro', 'platform'), TARGETS)
def test_rosdep_check_resolves_every_key_of_both_packages(distro: str, platform: str) -> None:
    keys = _keys()
    assert 'rclpy' in keys and 'acres_interfaces' not in keys, keys   # msg/ is a source
    unresolved = sorted(set(keys) - set(resolve(keys, distro, platform)))
    assert not unresolved, f'{distro} on {platform}: no rosdep rule for {unresolved}'
    checked = rosdep('check', '--from-paths', *PATHS, '--ignore-src', '--rosdistro', distro,
                     '--os', platform)
    # Exit 1 with a list of what is not installed here is a resolved check; an error is not.
    lines = [line for line in checked.stdout.splitlines()
             if line and not line.startswith('WARNING')]
    listed = [line for line in lines if line.split('\t')[0] in ('apt', 'pip')]
    others = [line for line in lines if line not in listed]
    assert others in ([], ['System dependencies have not been satisfied:'],
                      ['All system dependencies have been satisfied']), checked.stdout
    assert checked.returncode in (0, 1) and (checked.returncode == 0) == (not listed), (
        checked.stdout)


def test_the_readme_rosdep_line_resolves_in_its_workspace(tmp_path: Path) -> None:
    """The README's line, in a workspace with the clone in src/acres_bridge, simulated."""
    line = readme_command('rosdep install')
    (tmp_path / 'src').mkdir()
    os.symlink(ROOT, tmp_path / 'src' / 'acres_bridge')
    distro, platform = TARGETS[1]
    result = rosdep(*line.split()[1:], '--simulate', '--rosdistro', distro, '--os', platform,
                    cwd=tmp_path)
    assert result.returncode == 0, f'{line} (simulated, {distro} on {platform}):\n{result.stdout}'
    assert 'ERROR' not in result.stdout, result.stdout
