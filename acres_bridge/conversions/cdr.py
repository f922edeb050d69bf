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
The pieces of a serialised (CDR) message, for ``Publisher.publish(bytes)``.

rmw serialises a message as the XCDR1 little-endian encapsulation ``00 01 00 00`` followed by
the fields in order, each aligned to its own size (at most 8), counted from the end of the
encapsulation; a string is its uint32 length including the NUL, its UTF-8 bytes and the NUL.
The functions here build ``struct`` formats for that layout once (a frame id is known only at
run time, so the formats are cached per frame id) and leave the packing to one
``Struct.pack`` per message. Padding is zero bytes; Fast CDR leaves it unset, so only the
deserialised messages, not the bytes, equal what ``serialize_message`` gives.
"""

import struct

ENCAPSULATION = b'\x00\x01\x00\x00'
# The encapsulation (a '4s' argument) and a std_msgs/Header's stamp: int32 sec, uint32 nanosec.
HEADER_FORMAT = '<4siI'
# The body offset after HEADER_FORMAT.
HEADER_END = 8


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
