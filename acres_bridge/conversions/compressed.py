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

The encoder is Pillow (already a dependency): docs/benchmarks.md has its cost per image against
simplejpeg. Encoding releases the GIL.
"""

import io

import numpy as np
from PIL import Image

from acres_bridge.conversions import cdr
from acres_bridge.conversions.clock import stamp_to_sec_nanosec

COMPRESSED_FORMATS = ('jpeg', 'png')
# The encoded image's encoding: a colour image is compressed as bgr8 by the plugin.
_TARGET = 'bgr8'


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
    height, width = pixels.shape[:2]
    rows = np.ascontiguousarray(pixels)
    # 'raw' 'BGR' unpacks into Pillow's RGB while it reads the rows: no copy of ours.
    picture = Image.frombuffer('RGB', (width, height), rows, 'raw', 'BGR', 0, 1)
    output = io.BytesIO()
    if image_format == 'jpeg':
        if not 1 <= jpeg_quality <= 100:
            raise ValueError(f'a JPEG quality of {jpeg_quality} is not from 1 to 100')
        picture.save(output, 'JPEG', quality=jpeg_quality)
    elif image_format == 'png':
        if not 0 <= png_level <= 9:
            raise ValueError(f'a PNG level of {png_level} is not from 0 to 9')
        picture.save(output, 'PNG', compress_level=png_level)
    else:
        raise ValueError(f'compressed format {image_format!r} is not one of '
                         f'{", ".join(COMPRESSED_FORMATS)}')
    return output.getvalue()


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
