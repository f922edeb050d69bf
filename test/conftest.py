# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The fixtures of the tests, defined once: rclpy contexts, executors, emulators, a fault proxy.

DDS discovery never leaves this machine: the environment is set before rclpy is imported by
any test. Each run takes its own ROS_DOMAIN_ID (unless the caller set one): one that no other
run on this machine holds (:func:`claim_domain_id`), so runs side by side do not see each other.
The helpers that tests import are the ``support`` package's; no test imports this file.
"""

from collections.abc import Iterator
import os

import pytest
from support.spinning import SpinningExecutor

from acres_devkit.environment import claim_domain_id
from acres_devkit.environment import local_discovery
from acres_devkit.ros2_tools import require_tooling

# Set when this run claimed its ROS_DOMAIN_ID (not when the caller gave one).
_CLAIMED = 'ACRES_TEST_DOMAIN_CLAIMED'

# Set before any test module imports rclpy (conftest.py is imported first).
local_discovery(os.environ)
# A worker of pytest-xdist (tools/test runs two per suite) inherits the ID its controller
# claimed; it claims one of its own, so that workers side by side never share a graph (a
# second /acres_bridge in `ros2 node list`, a ros2 daemon of another test).
if 'ROS_DOMAIN_ID' not in os.environ or (
        os.environ.get('PYTEST_XDIST_WORKER') and os.environ.get(_CLAIMED) == 'yes'):
    os.environ['ROS_DOMAIN_ID'] = str(claim_domain_id())
    os.environ[_CLAIMED] = 'yes'


# The order files run in: by file name, whatever their folder (a name is unique in test/).
# tools/test runs Kilted and Jazzy side by side, each handing whole files to two workers in
# this order (pytest-xdist's loadfile), so the two lanes reach the same files at about the same
# time. In the order of the folders all four workers were in test/system at once (sessions of
# the real executables, a colcon build) and CI took longer; by name, the heavy files of system/
# and graph/ fall between the short ones of unit/ and static/. docs/benchmarks.md ("Set-up and CI
# time") has the measurements.


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files in the order of their names; a file's tests keep their order."""
    items.sort(key=lambda item: item.path.name)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Gate a test marked ``ros2_tools`` on the ros2 tools before any fixture of it starts."""
    if item.get_closest_marker('ros2_tools') is not None:
        require_tooling()


@pytest.fixture
def ros_context() -> Iterator[object]:
    """Give an initialised rclpy Context of its own, shut down after the test."""
    rclpy = pytest.importorskip('rclpy')
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def spinning(ros_context: object) -> Iterator[SpinningExecutor]:
    """Spin nodes added with ``spinning.add(node)`` until the test ends."""
    spinner = SpinningExecutor(ros_context)
    try:
        yield spinner
    finally:
        spinner.shutdown()


@pytest.fixture
def emulator_factory() -> Iterator[object]:
    """Give a function that starts emulators on free loopback ports and stops them after."""
    from acres_bridge.emulator.server import Emulator
    started = []

    def start(**options: object) -> Emulator:
        emulator = Emulator(**options).start()
        started.append(emulator)
        return emulator

    try:
        yield start
    finally:
        for emulator in started:
            emulator.stop()


@pytest.fixture
def emulator(emulator_factory: object) -> object:
    """Give an emulator of the game in lockstep, its vehicles holding still, on free ports."""
    return emulator_factory(lockstep=True, drive='hold')


@pytest.fixture
def control_proxy(emulator: object) -> Iterator[object]:
    """Give a control-channel FaultProxy in front of ``emulator``, stopped after the test."""
    from acres_bridge.emulator.faults import FaultProxy
    with FaultProxy(emulator.control_port, protocol='control', name='control') as proxy:
        yield proxy


@pytest.fixture
def two_hosts() -> Iterator[object]:
    """
    Give a function that makes two hosts (network namespaces and a link) for the test.

    Skipped, with the reason, where namespaces cannot be made (not root, no iproute2). Every
    pair is removed after the test, failed or not, and then nothing of the run may be left.
    """
    from acres_devkit import two_hosts as hosts
    reason = hosts.unavailable()
    if reason:
        pytest.skip(f'two hosts need network namespaces: {reason}')
    made = []

    def make(mtu: int | None = None, env: dict[str, str] | None = None) -> hosts.TwoHosts:
        pair = hosts.TwoHosts(mtu=mtu, env=env)
        made.append(pair)
        return pair

    with hosts.one_pair_at_a_time():
        hosts.remove_stale()
        try:
            yield make
        finally:
            for pair in made:
                pair.remove()
            left = hosts.leftovers()
            assert not left, f'namespaces or links of this run left behind: {left}'
