# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Stamps and the simulation clock.

Every stamp of the sensor stream is the world's simulation time in seconds (float64). A
message header carries it as ``builtin_interfaces/Time`` (whole seconds and nanoseconds); a
Clock frame becomes ``rosgraph_msgs/Clock`` with ``clock`` = the frame's header stamp.
``clock_frame_to_cdr`` gives the same message already serialised, for ``publish(bytes)``.
"""

import math
import struct

from builtin_interfaces.msg import Time
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Header

from acres_bridge.conversions import cdr
from acres_bridge.protocol.frames import ClockFrame

_NS_PER_S = 1_000_000_000
_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
# rosgraph_msgs/Clock: the encapsulation, then builtin_interfaces/Time (int32 sec, uint32 nanosec).
_CLOCK_CDR = struct.Struct(cdr.HEADER_FORMAT)


def stamp_to_sec_nanosec(stamp_s: float) -> tuple[int, int]:
    """
    Return a stamp in seconds as the (sec, nanosec) of ``builtin_interfaces/Time``.

    Rounded to the nanosecond, as :func:`stamp_to_time`.

    :raises ValueError: for a stamp that is not finite or beyond the int32 seconds of Time.
    """
    if not math.isfinite(stamp_s):
        raise ValueError(f'stamp {stamp_s} s is not a finite time')
    # Round once on the whole nanosecond count, so 0.9999999999 s becomes 1 s 0 ns.
    total_ns = round(stamp_s * _NS_PER_S)
    sec, nanosec = divmod(total_ns, _NS_PER_S)
    if not _INT32_MIN <= sec <= _INT32_MAX:
        raise ValueError(f'stamp {stamp_s} s is beyond the range of builtin_interfaces/Time')
    return sec, nanosec


def stamp_to_time(stamp_s: float) -> Time:
    """
    Return a stamp in seconds as ``builtin_interfaces/Time``, rounded to the nanosecond.

    :raises ValueError: for a stamp that is not finite or beyond the int32 seconds of Time.
    """
    sec, nanosec = stamp_to_sec_nanosec(stamp_s)
    return Time(sec=sec, nanosec=nanosec)


def time_to_stamp(time: Time) -> float:
    """Return a ``builtin_interfaces/Time`` in seconds."""
    return time.sec + time.nanosec / _NS_PER_S


def make_header(stamp_s: float, frame_id: str) -> Header:
    """Return a header with the stamp of a frame and a frame id."""
    return Header(stamp=stamp_to_time(stamp_s), frame_id=frame_id)


def clock_frame_to_clock(frame: ClockFrame) -> Clock:
    """Return the ``/clock`` message of a Clock frame: its header stamp, the world time."""
    return Clock(clock=stamp_to_time(frame.header.stamp_s))


def clock_frame_to_cdr(frame: ClockFrame) -> bytes:
    """Return :func:`clock_frame_to_clock` serialised (CDR), for ``Publisher.publish(bytes)``."""
    return _CLOCK_CDR.pack(cdr.ENCAPSULATION, *stamp_to_sec_nanosec(frame.header.stamp_s))
