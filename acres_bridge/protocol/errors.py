# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The errors of the protocol layer.

``AcresError`` is the root. ``FrameError`` means the bytes of the sensor stream broke its
layout; ``TransportError`` means a socket failed, closed or was refused (including a host that
is not a loopback address); ``ControlError`` means a control channel request got no usable
reply: ``ControlTimeout`` (no reply in time) or ``ControlUnavailable`` (no connection). A reply
the simulator did send, even with ``ok`` false, is never an exception.
"""


class AcresError(Exception):
    """Root of every error this package raises about the simulator's sockets."""


class FrameError(AcresError):
    """
    A frame of the sensor stream broke the layout of the protocol.

    ``recoverable`` is true when the reader consumed the whole frame and still stands at a
    frame boundary, so it may read on; false when the stream lost its framing (bad magic, a
    length beyond the limit, a truncated frame) and the connection must be closed.
    """

    def __init__(self, message: str, *, recoverable: bool = False) -> None:
        super().__init__(message)
        self.recoverable = recoverable


class TransportError(AcresError):
    """A socket could not connect, was refused, failed or closed."""


class ControlError(AcresError):
    """
    A control channel request did not get a usable reply.

    :param message: the text a service response can carry as it is.
    :param request_id: the id of the request, when there was one.
    :param op: the operation of the request, when there was one.
    :param code: a result code to report with the text, when one applies.
    """

    def __init__(self, message: str, *, request_id: int | None = None,
                 op: str | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id
        self.op = op
        self.code = code
        self.text = message


class ControlTimeout(ControlError):
    """No reply came within the time-out of the request."""


class ControlUnavailable(ControlError):
    """The control channel is not connected, or closed while the request waited."""
