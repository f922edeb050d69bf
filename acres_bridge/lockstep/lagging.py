# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Topics with a lagging reader: a stalled reader costs one acknowledgement time-out, not one a step.

A reader that stops answering (a process stopped with Ctrl-Z, paused in a debugger) never
acknowledges, and its participant's lease keeps it matched for about 20 s more. DDS says whether
*every* reader of a writer acknowledged (``wait_for_all_acked``), never which one did not: so the
unit that lags is the topic. Once a topic's acknowledgement wait has run out, later steps do not
wait for that topic's writer beyond ``LAG_GRACE_S``; the step's other topics are waited for as
before, and the answer names the topics not waited for and their reliable readers.

The topic has *caught up* when its writer has every sample acknowledged by every reader still
matched (``wait_for_all_acked`` true): the stalled reader came back and took it all, or it left
and DDS unmatched it. A lagging topic is given ``LAG_GRACE_S`` after each step's own waits, and
``LAG_PROBE_S`` once every ``LAG_PROBE_INTERVAL_S``: in lockstep the world is paused while a
step waits, so no newer sample can come in the meantime and hide a reader that caught up. The
grace is what a reader that is back needs to acknowledge a step (a heartbeat period and a stock
reader's 5 ms response delay), so that the step after it resumed already counts it; the probe is
for a reader that takes longer (a backlog to take, a slow link).
"""

import threading
import time

from rclpy.exceptions import InvalidHandle
from rclpy.publisher import Publisher

# How long each step gives a lagging topic's writer to be acknowledged by every reader.
LAG_GRACE_S = 0.01
# How often a lagging topic's writer is given LAG_PROBE_S instead.
LAG_PROBE_INTERVAL_S = 1.0
LAG_PROBE_S = 0.1


class LaggingTopics:
    """The topics of one process whose acknowledgement wait ran out, and their probes."""

    def __init__(self, grace_s: float = LAG_GRACE_S,
                 probe_interval_s: float = LAG_PROBE_INTERVAL_S,
                 probe_s: float = LAG_PROBE_S) -> None:
        self._lock = threading.Lock()
        self._since: dict[str, int] = {}
        self._probed: dict[str, float] = {}
        self._grace_s = grace_s
        self._probe_interval_s = probe_interval_s
        self._probe_s = probe_s

    def split(self, publishers: list[Publisher]) -> tuple[list[Publisher], list[Publisher]]:
        """Return the publishers to wait for, and those of lagging topics."""
        with self._lock:
            lagging = set(self._since)
        waited, behind = [], []
        for publisher in publishers:
            topic = topic_of(publisher)
            if topic is not None:
                (behind if topic in lagging else waited).append(publisher)
        return waited, behind

    def probe_s(self, publishers: list[Publisher], limit_s: float) -> float:
        """
        Return how long to wait for the lagging ``publishers`` now: the grace or the probe.

        The probe at most once per probe interval for a topic; never more than ``limit_s``.
        """
        now = time.monotonic()
        with self._lock:
            due = [publisher for publisher in publishers
                   if now - self._probed.get(topic_of(publisher), 0.0) >= self._probe_interval_s]
            for publisher in due:
                self._probed[topic_of(publisher)] = now
        return min(self._probe_s if due else self._grace_s, limit_s)

    def update(self, step: int, late: set[str], behind: set[str], caught_up: set[str]) -> None:
        """
        Record a step: ``late`` topics start to lag, ``caught_up`` ones stop.

        :param behind: the topics that were lagging before and still are.
        """
        now = time.monotonic()
        with self._lock:
            for topic in late:
                self._since.setdefault(topic, step)
                self._probed[topic] = now
            for topic in caught_up - late - behind:
                self._since.pop(topic, None)
                self._probed.pop(topic, None)


def topic_of(publisher: Publisher) -> str | None:
    """Return a publisher's topic, None once it is destroyed (its bridge went)."""
    try:
        return publisher.topic_name
    except InvalidHandle:
        return None
