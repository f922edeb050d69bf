# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
An action client that one thread both calls and spins, for tests on every distribution.

Jazzy's rclpy ``ActionClient`` sends a goal, cancel or result request and only then records
the future that the response completes, with no lock (Kilted's holds one). An executor thread
that takes the response in between drops it ("Ignoring unexpected goal response") and the
future never completes: under load a step goal went unanswered for 90 s. Here the client has a
node and a single-threaded executor of its own, and the thread that sends a request is the one
that spins until the answer is in, so no response can come before its future is recorded.
The futures' done callbacks run on that thread too, and only while it waits: take answers
from the return values.

Feedback is read from a subscription of the caller's own: rclpy drops a goal's feedback
callback once the goal's result is in, and feedback, a topic, may arrive after the result, a
service (under load both come in one take).
"""

import threading
import time
from typing import Any
from typing import Callable

import rclpy
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile

SPIN_PERIOD_S = 0.05
FEEDBACK_DEPTH = 100        # reliable, as rclpy's feedback subscription; none replaced here


class ActionCaller:
    """An action client on a node of its own, used and spun by the thread that made it."""

    def __init__(self, context: Any, action_type: type, name: str, *,
                 node_name: str = 'action_test_client', namespace: str = '',
                 on_feedback: Callable[[Any], None] | None = None) -> None:
        self._owner = threading.get_ident()
        self.node = rclpy.create_node(node_name, context=context, namespace=namespace)
        self.client = ActionClient(self.node, action_type, name)
        self._feedback: dict[bytes, list[Any]] = {}
        self._on_feedback = on_feedback
        self.node.create_subscription(action_type.Impl.FeedbackMessage,
                                      f'{name}/_action/feedback', self._record_feedback,
                                      QoSProfile(depth=FEEDBACK_DEPTH))
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)

    def _record_feedback(self, message: Any) -> None:
        self._feedback.setdefault(bytes(message.goal_id.uuid), []).append(message.feedback)
        if self._on_feedback is not None:
            self._on_feedback(message.feedback)

    def _check_thread(self) -> None:
        assert threading.get_ident() == self._owner, (
            'an ActionCaller is called and spun by the thread that made it')

    def wait_for_server(self, timeout_s: float) -> bool:
        return self.client.wait_for_server(timeout_sec=timeout_s)

    def send_goal(self, goal: Any, *, timeout_s: float) -> Any:
        """Send a goal; return its goal handle once the server answered."""
        self._check_thread()
        return self.wait(self.client.send_goal_async(goal), timeout_s, 'goal response')

    def feedback(self, goal_handle: Any) -> list[Any]:
        """Return the goal's feedback that has arrived so far (while this thread spun)."""
        return self._feedback.get(bytes(goal_handle.goal_id.uuid), [])

    def request_result(self, goal_handle: Any) -> Any:
        """Ask for a goal's result; return the future (completed only while this thread waits)."""
        self._check_thread()
        return goal_handle.get_result_async()

    def result(self, goal_handle: Any, timeout_s: float) -> Any:
        """Ask for a goal's result and wait for it (the wrapped result, with its status)."""
        return self.wait(self.request_result(goal_handle), timeout_s, 'result')

    def cancel(self, goal_handle: Any, timeout_s: float) -> Any:
        """Ask to cancel a goal; return the CancelGoal response."""
        self._check_thread()
        return self.wait(goal_handle.cancel_goal_async(), timeout_s, 'cancel response')

    def wait(self, future: Any, timeout_s: float, what: str = 'answer') -> Any:
        """Spin this client until the future is done; return its result."""
        self._check_thread()
        self._executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        if not future.done():
            raise TimeoutError(f'no {what} within {timeout_s:g} s')
        return future.result()

    def spin_until(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Spin this client (feedback comes in) until the predicate holds."""
        self._check_thread()
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f'no {what} within {timeout_s:g} s')
            self._executor.spin_once(timeout_sec=SPIN_PERIOD_S)

    def close(self) -> None:
        """Destroy the client, then its node."""
        # Left to the garbage collector, the client may go at the interpreter's exit, after
        # the context: Fast DDS 3.2 deadlocked there.
        self._executor.shutdown(timeout_sec=5.0)
        self.client.destroy()
        self.node.destroy_node()
