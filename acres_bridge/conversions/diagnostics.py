# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The statistics of a sensor stream and of the control channel as ``diagnostic_msgs`` statuses.

The input is ``SensorStreamClient.stats`` (see ``protocol/stream_client.py``), optionally with the
bridge's own counters merged in: ``published`` and ``dropped`` in each ``by_type`` entry (frames
converted and published, frames received but not published) and their totals at the top.

Level: ERROR while disconnected (the message is the reason); WARN when connected without a
Hello for :data:`HELLO_WAIT_S` (another client holds the stream: the simulator serves one at a
time), when the stream went silent for :data:`STALL_S` after anything but a Hello or a barrier
(a lockstep world rests there; a running one sends 120 clock frames a second; a paused one
looks like a stall, and the message says both), or when bad frames, callback errors or drops
grew since the ``previous`` snapshot; OK otherwise. Keys: the connection counters
(``connected``, ``reason``, ``idle_s``, ``last_frame``, ``reconnects``, ``bad_frames``, ...) and
for each frame type ``<type>.frames``, ``.published``, ``.dropped``, ``.bad``, ``.rate_hz``,
``.latency_p50_ms``, ``.latency_max_ms`` (transport latency: receive time minus the frame's
publish time), ``n/a`` for a figure without data. With the stream's Hello, also
``georeferenced`` and ``ins.datum`` (the datum of ``ins/fix``: ``nad83_2011`` or
``wgs84_g2139``; NavSatFix is meant for WGS 84, and NAD83(2011) is about 1.3 m from it around
the ACRE tile). With a ``compressed`` entry (the bridge's camera/image_raw/compressed encoder),
``compressed.format``, ``.encoded`` (images encoded: 0 while nobody subscribes), ``.dropped``
(handed over, replaced by a newer one before encoding), ``.failed`` and ``.last_encode_ms``.

The control channel's status (``control_stats_to_status``) comes from ``ControlClient.stats``;
both report problems by the same rule, counters that grew since the last report
(``grown_counters``).
"""

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from std_msgs.msg import Header

from acres_bridge.protocol.frames import FRAME_NAMES
from acres_bridge.protocol.hello import Hello

FRAME_TYPES = tuple(FRAME_NAMES.values())
CONNECTION_KEYS = ('connected', 'reason', 'connected_for_s', 'idle_s', 'last_frame',
                   'connections', 'reconnects',
                   'connect_failures', 'disconnects', 'bad_frames', 'last_bad_frame',
                   'unknown_frames', 'sequence_gaps', 'callback_errors', 'frames', 'bytes',
                   'published', 'dropped')
HELLO_KEYS = ('georeferenced', 'ins.datum')
TYPE_KEYS = ('frames', 'published', 'dropped', 'bad', 'rate_hz', 'latency_p50_ms',
             'latency_max_ms')
COMPRESSED_KEYS = ('format', 'encoded', 'dropped', 'failed', 'last_encode_ms')
_PROBLEM_COUNTERS = ('bad_frames', 'callback_errors', 'dropped')
HELLO_WAIT_S = 2.0
STALL_S = 2.0


def format_value(value: Any) -> str:
    """Return a statistic as diagnostic text: floats to 3 decimals, None as ``n/a``."""
    if value is None:
        return 'n/a'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float):
        return f'{value:.3f}'
    return str(value)


def stream_stats_to_status(stats: Mapping[str, Any], *, name: str, hardware_id: str = '',
                           previous: Mapping[str, Any] | None = None,
                           hello: Hello | None = None) -> DiagnosticStatus:
    """
    Return the diagnostic status of one sensor stream.

    :param stats: a snapshot of the stream's statistics (with the bridge's counters merged).
    :param name: the status name, e.g. ``sensor_bridge: polaris sensor stream``.
    :param hardware_id: the stream's address, e.g. ``127.0.0.1:5601``.
    :param previous: the snapshot of the last report, to tell new problems from old ones.
    :param hello: the stream's Hello, for ``georeferenced`` and ``ins.datum`` (``n/a`` without).
    """
    values = [KeyValue(key=key, value=format_value(stats.get(key))) for key in CONNECTION_KEYS]
    described = (hello.georeferenced, hello.ins.datum) if hello is not None else (None, None)
    values.extend(KeyValue(key=key, value=format_value(value))
                  for key, value in zip(HELLO_KEYS, described))
    by_type = stats.get('by_type', {})
    for frame_type in FRAME_TYPES:
        figures = by_type.get(frame_type, {})
        values.extend(KeyValue(key=f'{frame_type}.{key}', value=format_value(figures.get(key)))
                      for key in TYPE_KEYS)
    compressed = stats.get('compressed')
    if compressed is not None:
        values.extend(KeyValue(key=f'compressed.{key}', value=format_value(compressed.get(key)))
                      for key in COMPRESSED_KEYS)
    idle_s = stats.get('idle_s') or 0.0
    last_frame = stats.get('last_frame') or ''
    if not stats.get('connected'):
        level = DiagnosticStatus.ERROR
        message = f'disconnected: {stats.get("reason") or "not connected"}'
    elif not last_frame and idle_s >= HELLO_WAIT_S:
        level = DiagnosticStatus.WARN
        message = (f'connected but no Hello for {idle_s:.0f} s: another client may hold the '
                   'stream')
    elif last_frame not in ('', 'hello', 'barrier') and idle_s >= STALL_S:
        level = DiagnosticStatus.WARN
        message = (f'no frame for {idle_s:.0f} s after a {last_frame} frame: the world is '
                   'paused or the stream stalled')
    else:
        grown = grown_counters(stats, previous, _PROBLEM_COUNTERS)
        if grown:
            level = DiagnosticStatus.WARN
            message = 'streaming with new ' + ', '.join(key.replace('_', ' ') for key in grown)
        else:
            level = DiagnosticStatus.OK
            message = 'streaming'
    return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id,
                            values=values)


def grown_counters(stats: Mapping[str, Any], previous: Mapping[str, Any] | None,
                   keys: Iterable[str]) -> list[str]:
    """Return the keys whose counter is larger than in the ``previous`` snapshot (or 0)."""
    return [key for key in keys if (stats.get(key) or 0) > ((previous or {}).get(key) or 0)]


# --- the control channel ---------------------------------------------------------------------

CONTROL_KEYS = ('connected', 'reason', 'connected_for_s', 'connections', 'reconnects',
                'connect_failures', 'disconnects', 'pending', 'requests', 'replies',
                'timeouts', 'late_replies', 'unknown_replies', 'replies_without_id',
                'bad_lines', 'events', 'progress_events', 'orphan_progress', 'failed_on_close',
                'refused_disconnected', 'send_failures', 'queue_full', 'unsent_timeouts',
                'queued_bytes', 'callback_errors', 'round_trip_p50_ms', 'round_trip_max_ms')
_CONTROL_PROBLEMS = ('timeouts', 'late_replies', 'bad_lines', 'unknown_replies',
                     'send_failures', 'queue_full', 'callback_errors')


def control_stats_to_status(stats: Mapping[str, Any], *, name: str, hardware_id: str = '',
                            previous: Mapping[str, Any] | None = None) -> DiagnosticStatus:
    """
    Return the diagnostic status of the control channel from ``ControlClient.stats``.

    Level: ERROR while disconnected (the message is the reason); WARN when time-outs, late or
    unknown replies, lines that were not JSON, send failures, requests refused for a full send
    queue or callback errors grew since the ``previous`` snapshot; OK otherwise. Values:
    ``CONTROL_KEYS``, ``n/a`` without data.
    """
    values = [KeyValue(key=key, value=format_value(stats.get(key))) for key in CONTROL_KEYS]
    if not stats.get('connected'):
        level = DiagnosticStatus.ERROR
        message = f'disconnected: {stats.get("reason") or "not connected"}'
    else:
        grown = grown_counters(stats, previous, _CONTROL_PROBLEMS)
        level = DiagnosticStatus.WARN if grown else DiagnosticStatus.OK
        message = ('connected with new ' + ', '.join(key.replace('_', ' ') for key in grown)
                   if grown else 'connected')
    return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id,
                            values=values)


def diagnostic_array(statuses: Iterable[DiagnosticStatus], stamp: Time) -> DiagnosticArray:
    """Return a ``/diagnostics`` message of statuses."""
    return DiagnosticArray(header=Header(stamp=stamp), status=list(statuses))
