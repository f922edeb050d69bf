# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What a step's delivery gave: the reports of streams and steps, their texts, the status.

Plain data, so that a sensor process can send a :class:`StreamReport` to the control process.
A reader that did not acknowledge in time does not fail the step (the world did step): the
answer succeeds, and its message says which topics were late, lagging or unmatched and names
their readers (DDS does not say which reader lags). :func:`lockstep_stats_to_status` is the
lockstep's line in ``/diagnostics``.
"""

import dataclasses
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue

from acres_bridge.conversions.diagnostics import format_value


@dataclasses.dataclass(frozen=True, slots=True)
class StreamReport:
    """
    How one stream delivered a step: plain data, so it can cross a process boundary.

    :param stream: the stream's name (the agent).
    :param step: the step whose barrier was published.
    :param ack_wait_s: from the start of the wait, right after the barrier was published, to
        the last acknowledgement (or the time-out).
    :param late: topic -> the reliable readers of that topic, for each topic whose readers did
        not all acknowledge within the time-out.
    :param unmatched: topic -> the readers that the stream's writer of that topic had not
        matched when the acknowledgement wait began (see :func:`wait_for_matches`).
    :param lagging: topic -> the reliable readers of that topic, for each topic not waited
        for because a reader of it lags since an earlier step (lockstep/lagging.py).
    :param published_at: when the barrier was out (``time.monotonic()``, CLOCK_MONOTONIC: the
        same clock in every process of the host), 0.0 when unknown.
    """

    stream: str
    step: int
    ack_wait_s: float
    late: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    unmatched: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    lagging: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    published_at: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class StepReport:
    """How every stream of a session delivered one step."""

    step: int
    streams: tuple[StreamReport, ...]

    @property
    def ack_wait_s(self) -> float:
        """The longest acknowledgement wait of the step's streams."""
        return max((report.ack_wait_s for report in self.streams), default=0.0)

    @property
    def late(self) -> dict[str, tuple[str, ...]]:
        """Topic -> reliable readers, for every topic not acknowledged in time."""
        return {topic: readers for report in self.streams
                for topic, readers in report.late.items()}

    @property
    def unmatched(self) -> dict[str, tuple[str, ...]]:
        """Topic -> readers, for every topic whose writer had not matched them in time."""
        return {topic: readers for report in self.streams
                for topic, readers in report.unmatched.items()}

    @property
    def lagging(self) -> dict[str, tuple[str, ...]]:
        """Topic -> reliable readers, for every topic not waited for as a reader of it lags."""
        return {topic: readers for report in self.streams
                for topic, readers in report.lagging.items()}

    @property
    def warning(self) -> str | None:
        """One line saying what was late or lagging, None when everything was acknowledged."""
        parts = [text for text in (unmatched_text(self.unmatched), late_text(self.late),
                                   lagging_text(self.lagging)) if text]
        return '; '.join(parts) or None


def late_text(late: dict[str, tuple[str, ...]]) -> str | None:
    """Say which topics were not acknowledged in time and by whom (None: none)."""
    return _reliable_readers_text('not acknowledged in time', late)


def lagging_text(lagging: dict[str, tuple[str, ...]]) -> str | None:
    """Say which topics were not waited for as a reader of them lags (None: none)."""
    return _reliable_readers_text('not waited for until a lagging reader catches up', lagging)


def _reliable_readers_text(lead: str, topics: dict[str, tuple[str, ...]]) -> str | None:
    if not topics:
        return None
    return f'{lead}: ' + '; '.join(
        f'{topic} (reliable readers: {", ".join(readers) or "none left"})'
        for topic, readers in sorted(topics.items()))


def unmatched_text(unmatched: dict[str, tuple[str, ...]]) -> str | None:
    """Say which topics' writers had not matched which readers in time (None: none)."""
    if not unmatched:
        return None
    return 'readers not matched in time: ' + '; '.join(
        f'{topic} ({", ".join(readers)})' for topic, readers in sorted(unmatched.items()))


@dataclasses.dataclass(frozen=True, slots=True)
class MatchReport:
    """
    How the writers of a session's streams matched the known readers before a step was sent.

    :param wait_s: the longest wait of a stream.
    :param unmatched: topic -> the readers not matched within the time-out.
    """

    wait_s: float
    unmatched: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def warning(self) -> str | None:
        """One line naming the readers not matched before the step, None when all were."""
        text = unmatched_text(self.unmatched)
        return None if text is None else f'before the step, {text}'


def lockstep_stats_to_status(stats: dict[str, Any], *, name: str, late_now: bool,
                             unmatched_now: bool = False) -> DiagnosticStatus:
    """Return the lockstep diagnostic status from :attr:`Lockstep.stats`."""
    values = [KeyValue(key=key, value=format_value(value)) for key, value in stats.items()]
    if late_now:
        level = DiagnosticStatus.WARN
        message = f'step {stats["last_late_step"]} {stats["last_late"]}'
    elif stats.get('lagging'):
        level = DiagnosticStatus.WARN
        message = f'step {stats["last_step"]} {stats["lagging"]}'
    elif unmatched_now:
        level = DiagnosticStatus.WARN
        message = stats['last_unmatched']
    elif stats['steps'] or stats['failed_steps']:
        level = DiagnosticStatus.OK
        message = (f'{stats["steps"]} steps delivered, last acknowledged in '
                   f'{format_value(stats["ack_wait_last_ms"])} ms')
    else:
        level = DiagnosticStatus.OK
        message = 'no step yet'
    return DiagnosticStatus(level=level, name=name, message=message, values=values)
