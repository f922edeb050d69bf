# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0


"""
The pieces of a serialised (CDR) message, for ``Publisher.publish(bytes)``.

rmw serialises a message as the XCDR1 little-endian encapsulation ``00 01 00 00`` followed by
the fields in order, each aligned to its own size (at most 8), counted from the end of the
encapsulation; a string is its uint32 length including the NUL, its UTF-8 bytes and the NUL.
The functions here build ``struct`` formats for that layout once (a frame id is known only at
run time, so the formats are cached per frame id) and leave the packing to one
``Struct.pack`` per message. Padding is zero bytes; Fast CDR leaves it unset, so only the
deserialised messages, not the bytes, equal what ``serialize_message`` gives.

Clouds and images are too large to pack per message: their fields before ``data`` (the
*prefix*) are built once per layout with :class:`Writer`, and only the stamp
(:data:`STAMP`, at :data:`STAMP_OFFSET`) changes from one message to the next.
:class:`MessageBuffer` holds one such message, into which a frame's payload can be received.
"""

import struct
from typing import Any

from acres_bridge.conversions.buffers import buffer_address

ENCAPSULATION = b'\x00\x01\x00\x00'
# The encapsulation (a '4s' argument) and a std_msgs/Header's stamp: int32 sec, uint32 nanosec.
HEADER_FORMAT = '<4siI'
# The body offset after HEADER_FORMAT.
HEADER_END = 8
# A std_msgs/Header's stamp in a serialised message: int32 sec, uint32 nanosec, right after
# the encapsulation.
STAMP = struct.Struct('<iI')
STAMP_OFFSET = len(ENCAPSULATION)

# The encapsulations of XCDR1 big-endian and little-endian data: the byte order of the fields.
_STAMP_OF_ENCAPSULATION = {b'\x00\x00': struct.Struct('>iI'), b'\x00\x01': STAMP}
_UINT32_OF_ENCAPSULATION = {b'\x00\x00': struct.Struct('>I'), b'\x00\x01': struct.Struct('<I')}


def _unpack(cdr: bytes, formats: dict[bytes, struct.Struct], offset: int, what: str) -> tuple:
    """Unpack a field at ``offset`` after the encapsulation, in the message's byte order."""
    layout = formats.get(bytes(cdr[:2]))
    start = STAMP_OFFSET + offset
    if layout is None or len(cdr) < start + layout.size:
        where = f' at {offset}' if offset else ''
        raise ValueError(f'not a CDR message that starts with {what}{where}: '
                         f'{bytes(cdr[:12])!r}')
    return layout.unpack_from(cdr, start)


def time_nanoseconds(cdr: bytes, *, offset: int = 0) -> int:
    """
    Return the time a serialised message holds at ``offset``, in nanoseconds.

    ``offset`` counts from the end of the encapsulation: 0 for a message whose first field is
    a ``builtin_interfaces/Time`` (``rosgraph_msgs/Clock``, any message that starts with a
    ``std_msgs/Header``), 4 for the first transform of a ``tf2_msgs/TFMessage``, after the
    sequence length. Raises ValueError for bytes too short or an encapsulation other than
    plain CDR.
    """
    sec, nanosec = _unpack(cdr, _STAMP_OF_ENCAPSULATION, offset, 'a time')
    return sec * 1_000_000_000 + nanosec


def sequence_length(cdr: bytes, *, offset: int = 0) -> int:
    """
    Return the length of the sequence a serialised message holds at ``offset``.

    0 for a message that starts with a sequence, like ``tf2_msgs/TFMessage``. Raises
    ValueError as :func:`time_nanoseconds` does.
    """
    return _unpack(cdr, _UINT32_OF_ENCAPSULATION, offset, 'a sequence')[0]


def pad(offset: int, align: int) -> tuple[str, int]:
    """Return the struct format of the padding at body ``offset`` to ``align`` and the end."""
    count = -offset % align
    return (f'{count}x' if count else ''), offset + count


def string(text: str, offset: int) -> tuple[str, bytes, int]:
    """
    Return a CDR string at body ``offset``: its format, its one ``s`` argument, its end.

    The format includes the padding to 4 before the length; the argument is the length, the
    UTF-8 bytes and the NUL.
    """
    padding, offset = pad(offset, 4)
    data = text.encode() + b'\x00'
    packed = struct.pack('<I', len(data)) + data
    return f'{padding}{len(packed)}s', packed, offset + len(packed)


class Writer:
    """
    Build a serialised message field by field: for the prefixes made once per layout.

    Each field is aligned to its size from the end of the encapsulation, as rmw does.
    """

    def __init__(self) -> None:
        self._data = bytearray(ENCAPSULATION)

    @property
    def offset(self) -> int:
        """Return the body offset of the next field."""
        return len(self._data) - len(ENCAPSULATION)

    def value(self, code: str, value: float) -> None:
        """Append one aligned number of a ``struct`` code (``'I'`` uint32, ``'d'`` float64)."""
        item = struct.Struct(f'<{code}')
        self._data += bytes(-self.offset % item.size)
        self._data += item.pack(value)

    def values(self, code: str, values: 'list[float] | tuple[float, ...]') -> None:
        """Append numbers of one ``struct`` code: a fixed-size array."""
        for value in values:
            self.value(code, value)

    def sequence(self, code: str, values: 'list[float] | tuple[float, ...]') -> None:
        """Append a sequence of numbers: its uint32 length, then the numbers."""
        self.value('I', len(values))
        self.values(code, values)

    def header(self, frame_id: str) -> None:
        """Append a std_msgs/Header with a zero stamp: each message sets its own."""
        self.value('i', 0)
        self.value('I', 0)
        self.string(frame_id)

    def string(self, text: str) -> None:
        """Append a string: its uint32 length including the NUL, the UTF-8 bytes, the NUL."""
        data = text.encode() + b'\x00'
        self.value('I', len(data))
        self._data += data

    def bytes(self) -> bytes:
        """Return the message so far, the encapsulation included."""
        return bytes(self._data)


class MessageBuffer:
    """
    One serialised message of a fixed layout, whose ``data`` a payload fills in place if it can.

    The buffer holds ``prefix`` (the fields up to and with the length of ``data``),
    ``data_size`` bytes of data, then ``suffix`` (the fields after ``data``). A payload made of
    ``head_size`` bytes of its own (a frame's sub-header) and then the data can be received
    straight into it: the head lands on the end of the prefix, which :meth:`message` writes
    back. The size is fixed when it is made; one thread uses it at a time.
    """

    def __init__(self, prefix: bytes, data_size: int, *, suffix: bytes = b'',
                 head_size: int = 0) -> None:
        if not 0 <= head_size <= len(prefix) - len(ENCAPSULATION) - STAMP.size:
            raise ValueError(f'a head of {head_size} bytes does not fit after the stamp of a '
                             f'prefix of {len(prefix)}')
        self._start = len(prefix)
        self._end = self._start + data_size
        self._buffer = bytearray(self._end + len(suffix))
        self._buffer[:self._start] = prefix
        self._buffer[self._end:] = suffix
        self._view = memoryview(self._buffer)
        self._head_start = self._start - head_size
        self._head = prefix[self._head_start:]
        self.data = self._view[self._start:self._end]
        self._data_address = buffer_address(self.data)

    @property
    def nbytes(self) -> int:
        """Return the size of the buffer: one serialised message."""
        return len(self._buffer)

    def payload_view(self, payload_size: int) -> memoryview | None:
        """Return where a payload (head and data) is received, None for another size."""
        if payload_size != self._end - self._head_start:
            return None
        return self._view[self._head_start:self._end]

    def put(self, data: Any) -> None:
        """Set ``data``: nothing to copy when it was received through :meth:`payload_view`."""
        if self.data.nbytes and buffer_address(data) == self._data_address:
            self._view[self._head_start:self._start] = self._head
        else:
            self.data[:] = data

    def stamped(self, sec: int, nanosec: int) -> memoryview:
        """Return the whole message with this header stamp, in place (valid until the next)."""
        STAMP.pack_into(self._buffer, STAMP_OFFSET, sec, nanosec)
        return self._view
