# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Shared fixtures: a local-only DDS graph per test run, rclpy contexts, the emulator.

DDS discovery never leaves this machine: the environment is set before rclpy is imported by
any test. Each run takes its own ROS_DOMAIN_ID (unless the caller set one): one that no other
run on this machine holds (:func:`claim_domain_id`), so runs side by side do not see each other.
"""

from collections.abc import Callable
from collections.abc import Iterator
import fcntl
import functools
import importlib.metadata
import os
import tempfile
import threading
import time
from typing import Any

import pytest

from acres_bridge.nodes import dds


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


def local_discovery(environ: dict[str, str]) -> dict[str, str]:
    """
    Keep DDS discovery on this host in an environment (changed in place and returned).

    The bridge's own rule (dds.keep_discovery_local). Use it for the environment of a child
    process: ``local_discovery(dict(os.environ))``.
    """
    return dds.keep_discovery_local(environ, _fast_dds())


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


# Set before any test module imports rclpy (conftest.py is imported first).
local_discovery(os.environ)
if 'ROS_DOMAIN_ID' not in os.environ:
    os.environ['ROS_DOMAIN_ID'] = str(claim_domain_id())


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


class SpinningExecutor:
    """
    A multi-threaded executor spinning on a background thread, for integration tests.

    :meth:`shutdown` stops the spinning thread before it shuts the executor down: an executor
    shut down from another thread while it waits can use its guard condition after it is gone
    (InvalidHandle in the spinning thread). An exception that ends the spinning thread fails
    :meth:`wait` and :meth:`shutdown`: a test whose answers never come then says why.
    """

    SPIN_PERIOD_S = 0.05

    def __init__(self, context: object) -> None:
        from rclpy.executors import MultiThreadedExecutor
        self.executor = MultiThreadedExecutor(num_threads=4, context=context)
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._spin, name='test-executor', daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.exceptions import InvalidHandle
        from rclpy.executors import ExternalShutdownException
        try:
            while not self._stop.is_set():
                try:
                    self.executor.spin_once(timeout_sec=self.SPIN_PERIOD_S)
                except InvalidHandle:
                    # A node destroyed while this thread waited (a test closing one rig of
                    # two): rclpy skips destroyed subscriptions, timers and services but not
                    # waitables such as QoS event handlers. The next wait leaves it out.
                    continue
        except ExternalShutdownException:
            pass
        except BaseException as failure:
            self._failure = failure
            raise

    def check(self) -> None:
        """Raise if the spinning thread has died of an exception."""
        if self._failure is not None:
            raise RuntimeError('the test executor stopped spinning') from self._failure

    def add(self, node: object) -> object:
        self.executor.add_node(node)
        return node

    def wait(self, future: object, timeout_s: float = 10.0) -> object:
        """Wait for an rclpy future that the executor completes; return its result."""
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout_s):
            self.check()
            raise TimeoutError(f'no result within {timeout_s} s')
        return future.result()

    def shutdown(self) -> None:
        """Stop the spinning thread, then the executor (waiting for callbacks in flight)."""
        if not self._stop.is_set():     # a test may stop it before the fixture does
            self._stop.set()
            self._thread.join(timeout=30.0)
            assert not self._thread.is_alive(), 'the test executor did not stop spinning'
            self.executor.shutdown(timeout_sec=5.0)
        self.check()


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


def wait_until(predicate: Callable[[], Any], timeout_s: float = 10.0,
               what: str = 'a condition') -> Any:
    """
    Poll a condition that no callback announces, every 10 ms; return its first true value.

    The one polling helper of the tests (sim_control_graph calls it ``wait_for``): where a
    callback or a condition variable can announce the change, wait on that instead.

    :raises AssertionError: naming ``what`` when the condition is not true within timeout_s.
    """
    deadline = time.monotonic() + timeout_s
    pause = threading.Event()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}')
        pause.wait(0.01)


def call_across_processes(executor: Any, client: Any, request: Any, *, timeout_s: float = 30.0,
                          resend_after_s: float = 5.0) -> Any:
    """
    Call a server of another process and return its response; send again while none comes.

    wait_for_service says that the client's request can reach the server, not that the
    server's response writer has matched the client's response reader; rmw_fastrtps waits a
    moment for that match and then drops the response, with only a warning in the server's
    process. On a loaded machine the first response can be lost that way, so the request goes
    again every ``resend_after_s``. Only for requests that may be served more than once.

    :param executor: spins the client's node (spin_until_future_complete).
    :raises AssertionError: when no answer came within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        future = client.call_async(request)
        remaining_s = deadline - time.monotonic()
        executor.spin_until_future_complete(future, timeout_sec=min(resend_after_s,
                                                                    max(remaining_s, 0.0)))
        if future.done():
            return future.result()
        client.remove_pending_request(future)
        if time.monotonic() >= deadline:
            raise AssertionError(f'no answer from {client.srv_name} within {timeout_s} s')
