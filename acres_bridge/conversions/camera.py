# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Camera frames to ``sensor_msgs/Image``, the Hello's intrinsics to ``sensor_msgs/CameraInfo``.

An image keeps the frame's bytes: ``encoding`` bgr8 (blue, green, red, 8 bits each), rows from
the top, ``step`` = the frame's row step, ``data`` byte for byte the frame's pixels. Its
frame id is the camera's optical frame (z forward, x right, y down), as REP 103 asks of
images.

The camera info of an image has the same header and the Hello's OpenCV intrinsics::

    d = camera.d (k1, k2, p1, p2, k3; plumb_bob)
    k = [fx 0 cx; 0 fy cy; 0 0 1]      r = identity      p = [fx 0 cx 0; 0 fy cy 0; 0 0 1 0]

The bridge publishes both serialised. :class:`ImageBuffer` is one image message (the fields
before ``data`` built once per layout and frame id, then ``data``) in a buffer that every frame
reuses: a camera payload is received straight into it, its 16-byte sub-header over the last 16
bytes of the prefix (rewritten after each frame). The camera info of a layout is built once;
each message only gets its stamp (:func:`camera_info_cdr`).
"""

import functools

from sensor_msgs.msg import CameraInfo
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from acres_bridge.conversions import cdr
from acres_bridge.conversions.buffers import keep_array_options
from acres_bridge.conversions.buffers import uint8_array
from acres_bridge.conversions.clock import stamp_to_sec_nanosec
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.protocol.hello import CameraLayout
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.limits import SUB_HEADER_SIZE

_IDENTITY_3X3 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_KEEP_ARRAY = keep_array_options(Image)


def camera_frame_to_image(frame: CameraFrame, header: Header) -> Image:
    """
    Return the image of a Camera frame; its pixels are copied once.

    :param header: the header of the image (the frame's stamp, the optical frame id), used as
        given.
    :raises ValueError: when the pixels are not height x row step bytes.
    """
    pixels = _pixels(frame)
    image = Image(header=header, height=frame.height, width=frame.width,
                  encoding=frame.encoding, is_bigendian=0, step=frame.row_step, **_KEEP_ARRAY)
    image.data = uint8_array(pixels)
    return image


def _pixels(frame: CameraFrame) -> memoryview:
    """Return the pixels of a frame after checking that they are height x row step bytes."""
    pixels = frame.pixels
    if pixels.nbytes != frame.height * frame.row_step:
        raise ValueError(f'a camera frame of {frame.height} rows of {frame.row_step} bytes has '
                         f'{pixels.nbytes} bytes of pixels')
    return pixels


def camera_frame_to_image_cdr(frame: CameraFrame, *, frame_id: str) -> bytes:
    """
    Return the image of a Camera frame serialised (CDR), for ``Publisher.publish(bytes)``.

    It deserialises to ``camera_frame_to_image(frame, make_header(frame's stamp, frame_id))``.
    A buffer is made for this one image; the bridge keeps an :class:`ImageBuffer` per stream.

    :raises ValueError: as :func:`camera_frame_to_image`, or for a stamp ``Time`` cannot hold.
    """
    return ImageBuffer(frame.width, frame.height, frame.row_step, frame_id=frame_id,
                       encoding=frame.encoding).serialise(frame)


class ImageBuffer:
    """
    A serialised image of one layout and frame id, in a buffer that every frame reuses.

    The buffer is the whole message: encapsulation, header, height, width, encoding,
    is_bigendian, step, the data length, then ``data``. Its size is fixed when it is made;
    nothing grows per frame. One thread uses it at a time (a stream's reader).
    """

    def __init__(self, width: int, height: int, row_step: int, *, frame_id: str,
                 encoding: str = 'bgr8') -> None:
        prefix = _image_prefix(width, height, row_step, frame_id, encoding)
        self.key = (width, height, row_step, frame_id, encoding)
        self._message = cdr.MessageBuffer(prefix, height * row_step, head_size=SUB_HEADER_SIZE)

    @property
    def nbytes(self) -> int:
        """Return the size of the buffer: one serialised image."""
        return self._message.nbytes

    def payload_view(self, payload_size: int) -> memoryview | None:
        """
        Return where a camera payload of ``payload_size`` bytes is received, or None.

        Only for the payload size of this layout: the sub-header lands on the end of the
        prefix (rewritten by :meth:`serialise`), the pixels on ``data``.
        """
        return self._message.payload_view(payload_size)

    def serialise(self, frame: CameraFrame) -> bytes:
        """
        Return the serialised image of a frame of this layout (see ``camera_frame_to_image_cdr``).

        Pixels received through :meth:`payload_view` stay where they are; other frames'
        pixels are copied in.

        :raises ValueError: for a frame of another layout, pixels that do not fill it, or a
            stamp ``Time`` cannot hold.
        """
        return bytes(self.serialise_in_place(frame))

    def serialise_in_place(self, frame: CameraFrame) -> memoryview:
        """Return :meth:`serialise`'s message as a view of this buffer (valid until the next)."""
        width, height, row_step = self.key[:3]
        if (frame.width, frame.height, frame.row_step, frame.encoding) != (
                width, height, row_step, self.key[4]):
            raise ValueError(f'a {frame.width} x {frame.height} camera frame (row step '
                             f'{frame.row_step}, {frame.encoding}) in an image of {width} x '
                             f'{height} (row step {row_step}, {self.key[4]})')
        pixels = _pixels(frame)
        sec, nanosec = stamp_to_sec_nanosec(frame.header.stamp_s)
        self._message.put(pixels)
        return self._message.stamped(sec, nanosec)


@functools.lru_cache(maxsize=16)
def _image_prefix(width: int, height: int, row_step: int, frame_id: str,
                  encoding: str) -> bytes:
    """Return a serialised image up to its data (the stamp zero, the data length included)."""
    writer = cdr.Writer()
    writer.header(frame_id)
    writer.value('I', height)
    writer.value('I', width)
    writer.string(encoding)
    writer.value('B', 0)                        # is_bigendian
    writer.value('I', row_step)
    writer.value('I', height * row_step)        # the length of data
    return writer.bytes()


def camera_info_cdr(hello: Hello | CameraLayout, *, frame_id: str, stamp_s: float) -> bytes:
    """
    Return :func:`camera_info_from_hello` serialised (CDR), for ``Publisher.publish(bytes)``.

    It deserialises to ``camera_info_from_hello(hello, make_header(stamp_s, frame_id))``.

    :raises ValueError: for a stamp ``Time`` cannot hold.
    """
    camera = hello.camera if isinstance(hello, Hello) else hello
    message = _camera_info_message(camera, frame_id)
    stamp = cdr.STAMP.pack(*stamp_to_sec_nanosec(stamp_s))
    return b''.join((message[:cdr.STAMP_OFFSET], stamp,
                     message[cdr.STAMP_OFFSET + cdr.STAMP.size:]))


@functools.lru_cache(maxsize=16)
def _camera_info_message(camera: CameraLayout, frame_id: str) -> bytes:
    """Return the serialised camera info of a layout with a zero stamp."""
    fx, fy, cx, cy = (float(camera.fx), float(camera.fy), float(camera.cx), float(camera.cy))
    writer = cdr.Writer()
    writer.header(frame_id)
    writer.value('I', camera.height)
    writer.value('I', camera.width)
    writer.string(camera.distortion_model)
    writer.sequence('d', [float(value) for value in camera.d])
    writer.values('d', (fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0))      # k
    writer.values('d', _IDENTITY_3X3)                                   # r
    writer.values('d', (fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0))     # p
    writer.values('I', (0, 0, 0, 0, 0, 0))      # binning x, y; roi x, y offset, height, width
    writer.value('B', 0)                        # roi.do_rectify
    return writer.bytes()


def camera_info_from_hello(hello: Hello | CameraLayout, header: Header) -> CameraInfo:
    """
    Return the camera info of the Hello's camera (or of a camera layout).

    :param header: the header of the image it goes with, used as given.
    """
    camera = hello.camera if isinstance(hello, Hello) else hello
    fx, fy, cx, cy = (float(camera.fx), float(camera.fy), float(camera.cx), float(camera.cy))
    return CameraInfo(
        header=header, height=camera.height, width=camera.width,
        distortion_model=camera.distortion_model, d=[float(value) for value in camera.d],
        k=[fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
        r=list(_IDENTITY_3X3),
        p=[fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0])
