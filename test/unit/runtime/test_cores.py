# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The cores sensor_processes auto counts: the affinity, capped by a cgroup's CPU quota."""

import os
from pathlib import Path

import pytest

from acres_bridge.runtime.cores import cgroup_cpu_quota
from acres_bridge.runtime.cores import usable_cores

AFFINITY = len(os.sched_getaffinity(0))


def _v2(tmp_path: Path, cpu_max: str | None) -> dict[str, str]:
    """A cgroup v2 tree with the process in /app, and its cpu.max (None: no such file)."""
    (tmp_path / 'app').mkdir()
    if cpu_max is not None:
        (tmp_path / 'app' / 'cpu.max').write_text(cpu_max + '\n')
    membership = tmp_path / 'self_cgroup'
    membership.write_text('0::/app\n')
    return {'cgroup_root': str(tmp_path), 'self_cgroup': str(membership)}


def _v1(tmp_path: Path, quota: str, period: str = '100000') -> dict[str, str]:
    """A cgroup v1 tree with the cpu controller mounted at cpu/, the process in /docker/x."""
    directory = tmp_path / 'cpu' / 'docker' / 'x'
    directory.mkdir(parents=True)
    (directory / 'cpu.cfs_quota_us').write_text(quota + '\n')
    (directory / 'cpu.cfs_period_us').write_text(period + '\n')
    membership = tmp_path / 'self_cgroup'
    membership.write_text('5:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n0::/\n')
    return {'cgroup_root': str(tmp_path), 'self_cgroup': str(membership)}


def test_a_v2_quota_of_one_and_a_half_cores_counts_as_two(tmp_path):
    paths = _v2(tmp_path, '150000 100000')
    assert cgroup_cpu_quota(**paths) == 1.5
    assert usable_cores(**paths) == min(AFFINITY, 2)


@pytest.mark.parametrize('cpu_max', ['max 100000', None, 'garbage'])
def test_without_a_v2_quota_the_affinity_counts(tmp_path, cpu_max):
    paths = _v2(tmp_path, cpu_max)
    assert cgroup_cpu_quota(**paths) is None
    assert usable_cores(**paths) == AFFINITY


def test_a_v1_quota_caps_the_affinity(tmp_path):
    paths = _v1(tmp_path, '100000')
    assert cgroup_cpu_quota(**paths) == 1.0
    assert usable_cores(**paths) == 1


def test_a_v1_quota_of_minus_one_is_no_quota(tmp_path):
    paths = _v1(tmp_path, '-1')
    assert cgroup_cpu_quota(**paths) is None
    assert usable_cores(**paths) == AFFINITY


def test_a_quota_above_the_affinity_leaves_the_affinity(tmp_path):
    assert usable_cores(**_v2(tmp_path, f'{(AFFINITY + 8) * 100000} 100000')) == AFFINITY


def test_no_readable_membership_leaves_the_affinity(tmp_path):
    paths = {'cgroup_root': str(tmp_path), 'self_cgroup': str(tmp_path / 'missing')}
    assert cgroup_cpu_quota(**paths) is None
    assert usable_cores(**paths) == AFFINITY
