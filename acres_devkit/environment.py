# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The environment of a test run: its ROS distribution, DDS discovery on this host, a domain ID.

conftest.py applies :func:`local_discovery` and :func:`claim_domain_id` to the run before any
test imports rclpy; tests that start child processes give them ``local_discovery(env)``.
"""

import fcntl
import functools
import importlib.metadata
import os
import tempfile

from acres_bridge.runtime import dds

from acres_devkit.dds_environment import keep_discovery_local


def ros_distro() -> str:
    """
    Name the ROS 2 distribution of this interpreter's rclpy, in lower case.

    The version of the prefix's rclpy wheel decides (3.x Humble, 4.x Iron, 7.x Jazzy, 9.x
    Kilted); ROS_DISTRO, which a distribution's setup.bash and ours set, is the fallback where
    rclpy has no such metadata (a colcon workspace) or the version is not one of those.
    """
    fallback = os.environ.get('ROS_DISTRO', 'rolling').lower()
    try:
        major = int(importlib.metadata.version('ros-rclpy').split('.')[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return fallback
    return {3: 'humble', 4: 'iron', 7: 'jazzy', 9: 'kilted'}.get(major, fallback)


def in_ci() -> bool:
    """Tell whether this run is CI's (``CI=true``), where nothing may be skipped for a tool."""
    return os.environ.get('CI', '').lower() in ('true', '1', 'yes')


def local_discovery(environ: dict[str, str]) -> dict[str, str]:
    """
    Keep DDS discovery on this host in an environment (changed in place and returned).

    The rule of dds_environment.keep_discovery_local, for this interpreter's Fast DDS. Use it
    for the environment of a child process: ``local_discovery(dict(os.environ))``.
    """
    return keep_discovery_local(environ, _fast_dds())


@functools.cache
def _fast_dds() -> object:
    return dds.find_fast_dds()


# The domain IDs a run may take: 1 to 100 give every participant its ports on Linux.
DOMAIN_IDS = range(1, 101)
_DOMAIN_LOCKS = os.path.join(tempfile.gettempdir(), 'acres_bridge-domains')
_held_domains: list[object] = []


def claim_domain_id() -> int:
    """
    Take a ROS_DOMAIN_ID that no other process on this machine holds, until this one exits.

    Each ID is a lock file under the temporary directory, held with ``flock``: the kernel
    lets it go when the holder exits in any way, SIGKILL included. Test runs side by side
    (two clones, or a benchmark beside the suite) then never share a graph. The search
    starts at an ID from the process id, so that concurrent runs seldom contend.

    :raises RuntimeError: when every ID is held.
    """
    os.makedirs(_DOMAIN_LOCKS, exist_ok=True)
    start = os.getpid() % len(DOMAIN_IDS)
    for offset in range(len(DOMAIN_IDS)):
        domain_id = DOMAIN_IDS[(start + offset) % len(DOMAIN_IDS)]
        lock = open(os.path.join(_DOMAIN_LOCKS, str(domain_id)), 'a')
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        _held_domains.append(lock)
        return domain_id
    raise RuntimeError(f'every ROS_DOMAIN_ID of {DOMAIN_IDS} is held by another process')
