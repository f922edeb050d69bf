# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
How many cores this process may use: its CPU affinity, capped by its cgroup's CPU quota.

A container started with ``--cpus=2`` on a 16-core host sees 16 cores in its affinity but gets
the time of two: the quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` over
``cpu.cfs_period_us``) says so. ``sensor_processes`` auto decides by this count.
"""

import math
import os

CGROUP_ROOT = '/sys/fs/cgroup'
SELF_CGROUP = '/proc/self/cgroup'


def usable_cores(*, cgroup_root: str = CGROUP_ROOT, self_cgroup: str = SELF_CGROUP) -> int:
    """Return the cores of this process's affinity, at most its cgroup's quota (rounded up)."""
    cores = len(os.sched_getaffinity(0))
    quota = cgroup_cpu_quota(cgroup_root=cgroup_root, self_cgroup=self_cgroup)
    if quota is None:
        return cores
    return max(1, min(cores, math.ceil(quota)))


def cgroup_cpu_quota(*, cgroup_root: str = CGROUP_ROOT,
                     self_cgroup: str = SELF_CGROUP) -> float | None:
    """Return this process's CPU quota in cores; None without one or where it cannot be read."""
    try:
        with open(self_cgroup, encoding='utf-8') as membership:
            lines = membership.read().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, path = (line.split(':', 2) + ['', ''])[:3]
        relative = path.lstrip('/')
        if hierarchy == '0' and not controllers:        # v2: "max 100000" or "200000 100000"
            fields = _read(os.path.join(cgroup_root, relative, 'cpu.max')).split()
            if len(fields) == 2 and fields[0] != 'max':
                return _ratio(fields[0], fields[1])
        elif 'cpu' in controllers.split(','):           # cgroup v1: quota -1 for none
            directory = os.path.join(cgroup_root, 'cpu', relative)
            quota = _read(os.path.join(directory, 'cpu.cfs_quota_us'))
            period = _read(os.path.join(directory, 'cpu.cfs_period_us'))
            if quota and not quota.startswith('-'):
                return _ratio(quota, period)
    return None


def _read(path: str) -> str:
    try:
        with open(path, encoding='utf-8') as file:
            return file.read().strip()
    except OSError:
        return ''


def _ratio(quota: str, period: str) -> float | None:
    try:
        value, base = int(quota), int(period)
    except ValueError:
        return None
    return value / base if value > 0 and base > 0 else None
