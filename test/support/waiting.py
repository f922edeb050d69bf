# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Waiting without sleeping on events that nothing announces.

:func:`wait_until` polls a condition that no callback announces; :func:`call_across_processes`
calls a service of another process until it answers.
"""

from collections.abc import Callable
import threading
import time
from typing import Any


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
