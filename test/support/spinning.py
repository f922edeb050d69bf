# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""SpinningExecutor: nodes spun on a background thread, for the integration tests."""

import threading


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
