# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Camera frames to ``sensor_msgs/CompressedImage`` as image_transport's ``compressed`` plugin.

The plugin (ros-perception/image_transport_plugins, ``compressed_image_transport/src/
compressed_publisher.cpp``, read on the rolling branch at 7404d772b66f586f5f56e568671ae20e8a64bc7e)
gives the compressed message the raw image's header and the format ``<raw encoding>; <jpeg or
png> compressed <the encoded image's encoding>``: for the bridge's bgr8 images
``bgr8; jpeg compressed bgr8`` and ``bgr8; png compressed bgr8``, which its republisher, rviz2
and Foxglove read. ``data`` is the JPEG or PNG file (a decoder gives RGB, as OpenCV's gives
BGR, of the same picture). Its parameters are ``format`` (jpeg), ``jpeg_quality`` (95, 1 to 100)
and ``png_level`` (3, 0 to 9), the bridge's ``compressed.*``.

JPEG is Pillow's (already a dependency; docs/benchmarks.md has its cost against simplejpeg).
PNG is written here: each row with PNG's Sub filter (the byte minus the same channel's byte one
pixel to the left, numpy) and zlib at ``png_level``, as OpenCV's PNG compression level is zlib's;
that is about twice as fast as Pillow's adaptive filtering for files of nearly the same size
(docs/benchmarks.md, "Compressed images and Autoware's point layout"). Both release the GIL
while they compress.
"""

import io
import struct
import zlib

import numpy as np
from PIL import Image

from acres_bridge.conversions import cdr
from acres_bridge.conversions.clock import stamp_to_sec_nanosec

COMPRESSED_FORMATS = ('jpeg', 'png')
# The encoded image's encoding: a colour image is compressed as bgr8 by the plugin.
_TARGET = 'bgr8'
_PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
# IHDR after width and height: 8 bits, colour type 2 (RGB), deflate, filtering 0, no interlace.
_PNG_RGB8 = struct.pack('>BBBBB', 8, 2, 0, 0, 0)
_PNG_SUB = 1


def compressed_format(encoding: str, image_format: str) -> str:
    """Return the ``format`` text of a compressed image (``bgr8; jpeg compressed bgr8``)."""
    return f'{encoding}; {image_format} compressed {_TARGET}'


def encode_bgr8(pixels: np.ndarray, *, image_format: str = 'jpeg', jpeg_quality: int = 95,
                png_level: int = 3) -> bytes:
    """
    Return a bgr8 picture as a JPEG or PNG file.

    :param pixels: (height, width, 3) uint8, blue, green, red; rows may be strided.
    :raises ValueError: for another format, quality or level, or pixels of another shape.
    """
    if pixels.ndim != 3 or pixels.shape[2] != 3 or pixels.dtype != np.uint8:
        raise ValueError(f'bgr8 pixels are (height, width, 3) uint8, not {pixels.shape} '
                         f'{pixels.dtype}')
    if image_format == 'png':
        if not 0 <= png_level <= 9:
            raise ValueError(f'a PNG level of {png_level} is not from 0 to 9')
        return _png(pixels, png_level)
    if image_format != 'jpeg':
        raise ValueError(f'compressed format {image_format!r} is not one of '
                         f'{", ".join(COMPRESSED_FORMATS)}')
    if not 1 <= jpeg_quality <= 100:
        raise ValueError(f'a JPEG quality of {jpeg_quality} is not from 1 to 100')
    height, width = pixels.shape[:2]
    # 'raw' 'BGR' unpacks into Pillow's RGB while it reads the rows: no copy of ours.
    picture = Image.frombuffer('RGB', (width, height), np.ascontiguousarray(pixels), 'raw',
                               'BGR', 0, 1)
    output = io.BytesIO()
    picture.save(output, 'JPEG', quality=jpeg_quality)
    return output.getvalue()


def _png(pixels: np.ndarray, level: int) -> bytes:
    """Return an RGB PNG of bgr8 pixels: every row Sub-filtered, zlib at ``level``."""
    height, width = pixels.shape[:2]
    rgb = pixels[..., ::-1].reshape(height, width * 3)
    rows = np.empty((height, 1 + width * 3), dtype=np.uint8)
    rows[:, 0] = _PNG_SUB
    rows[:, 1:4] = rgb[:, :3]
    np.subtract(rgb[:, 3:], rgb[:, :-3], out=rows[:, 4:])      # modulo 256, as PNG's Sub
    return b''.join((_PNG_SIGNATURE,
                     _png_chunk(b'IHDR', struct.pack('>II', width, height) + _PNG_RGB8),
                     _png_chunk(b'IDAT', zlib.compress(rows.tobytes(), level)),
                     _png_chunk(b'IEND', b'')))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    """Return one PNG chunk: length, type, data, CRC-32 of type and data."""
    return b''.join((struct.pack('>I', len(data)), kind, data,
                     struct.pack('>I', zlib.crc32(kind + data))))


def compressed_image_cdr(data: bytes, *, stamp_s: float, frame_id: str,
                         image_format: str) -> bytes:
    """
    Return a serialised CompressedImage (CDR), for ``Publisher.publish(bytes)``.

    :param data: the encoded file.
    :param image_format: the ``format`` field, e.g. from :func:`compressed_format`.
    :raises ValueError: for a stamp ``Time`` cannot hold.
    """
    writer = cdr.Writer()
    writer.header(frame_id)
    writer.string(image_format)
    writer.value('I', len(data))
    message = bytearray(writer.bytes())
    cdr.STAMP.pack_into(message, cdr.STAMP_OFFSET, *stamp_to_sec_nanosec(stamp_s))
    message += data
    return bytes(message)
