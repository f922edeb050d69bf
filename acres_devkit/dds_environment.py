# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The Fast DDS environment of the processes a test, benchmark or demo starts.

Discovery kept on this host for the distribution of a process's Fast DDS, the variables by
which a user configures Fast DDS (cleared for a stock run), and those that give a process the
package's shipped profile. The bridge itself never sets these; its own settings are
acres_bridge.runtime.dds's.
"""

from collections.abc import MutableMapping

from acres_bridge.runtime.dds import FastDds
from acres_bridge.runtime.dds import profile_variable
from acres_bridge.runtime.dds import PROFILE_VARIABLES
from acres_bridge.runtime.dds import shipped_profile


def is_humble(fast_dds: FastDds) -> bool:
    """Whether ``fast_dds`` is Humble's (2.6), whose rcl knows ``ROS_LOCALHOST_ONLY`` only."""
    return fast_dds.major == 2 and fast_dds.minor < 10


def local_graph_environment(fast_dds: FastDds | None) -> dict[str, str]:
    """
    Return the variables that keep discovery on this host, for the distribution of ``fast_dds``.

    ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` everywhere, and ``ROS_LOCALHOST_ONLY=1`` on
    Humble only: Jazzy honours it with two deprecation warnings in every process, Kilted
    ignores it.
    """
    environment = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    if fast_dds is not None and is_humble(fast_dds):
        environment['ROS_LOCALHOST_ONLY'] = '1'
    return environment


def keep_discovery_local(environ: MutableMapping[str, str],
                         fast_dds: FastDds | None) -> MutableMapping[str, str]:
    """
    Confine discovery in ``environ`` to this host (changed in place and returned).

    The variables of :func:`local_graph_environment`, and no ``ROS_LOCALHOST_ONLY`` where that
    does not want it: for a child process's environment, or this process's before rclpy loads.
    """
    environ.pop('ROS_LOCALHOST_ONLY', None)
    environ.update(local_graph_environment(fast_dds))
    return environ


# Every variable by which a user configures Fast DDS for rmw_fastrtps.
USER_VARIABLES = (*PROFILE_VARIABLES.values(), 'RMW_FASTRTPS_USE_QOS_FROM_XML',
                  'FASTDDS_BUILTIN_TRANSPORTS')


def shipped_profile_environment(fast_dds: FastDds) -> dict[str, str]:
    """Return the variables that give a process the package's profile, as its usage says."""
    return {profile_variable(fast_dds): shipped_profile(fast_dds),
            'RMW_FASTRTPS_USE_QOS_FROM_XML': '1'}
