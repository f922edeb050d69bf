# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The serialised clouds and images of one sensor stream, in buffers of a fixed size.

``MessagePool`` holds the :class:`CloudBuffer` and :class:`ImageBuffer` ring of the layout of
the current Hello, the bridge's point fields and the frame ids: ``slots`` buffers of each type,
used in turn. The ring is made when the first frame of that layout has arrived whole, so
neither a header nor a Hello alone ever sizes one. From then on the stream's reader receives
each payload of that size straight into the next message (``payload_target``), and
:meth:`MessagePool.cloud` hands out that message in place as a :class:`PooledMessage`; the
buffer is busy until whoever publishes it calls ``release()``, from any thread. With every
buffer of a type busy, the reader waits for the oldest (``wait_s`` at most, then the frame gets
a buffer of its own). A frame of another layout (before a Hello, or of a sensor the Hello
disables) is serialised in a buffer of its own that goes once it is published. A new layout
replaces the ring: the pool never grows with the frames.
"""

from collections.abc import Callable
import dataclasses
import threading
from typing import Any
from typing import Generic
from typing import TypeVar

from acres_bridge.conversions.camera import camera_frame_to_image_cdr
from acres_bridge.conversions.camera import ImageBuffer
from acres_bridge.conversions.lidar import CloudBuffer
from acres_bridge.conversions.lidar import lidar_frame_to_cloud_cdr
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.protocol.frames import FrameHeader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import LidarFrame
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.limits import CAMERA_BYTES_PER_PIXEL

WAIT_S = 1.0

BufferT = TypeVar('BufferT', CloudBuffer, ImageBuffer)


def _nothing() -> None:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class PooledMessage:
    """One serialised message and what gives its buffer back to the pool once it is out."""

    data: memoryview | bytes
    release: Callable[[], None] = _nothing


class _Ring(Generic[BufferT]):
    """The buffers of one layout, taken in turn; one is busy from serialising to release."""

    def __init__(self, key: tuple, make: Callable[[], BufferT], slots: int,
                 changed: threading.Condition) -> None:
        self.key = key
        self._make = make
        self._buffers: list[BufferT] = []
        self._busy = [False] * slots
        self._next = 0
        self._changed = changed

    @property
    def nbytes(self) -> int:
        return sum(buffer.nbytes for buffer in self._buffers)

    def next_buffer(self, wait_s: float, *, make: bool) -> BufferT | None:
        """Return the buffer whose turn it is once it is free; None if not made or too busy."""
        if not self._buffers:
            if not make:
                return None
            self._buffers = [self._make() for _ in self._busy]
        index = self._next
        # Only the reader marks a buffer busy, so one seen free stays free: no lock then.
        if self._busy[index]:
            with self._changed:
                if not self._changed.wait_for(lambda: not self._busy[index], wait_s):
                    return None
        return self._buffers[index]

    def lend(self, data: memoryview) -> PooledMessage:
        """Mark the buffer whose turn it is busy until the message's release; next turn."""
        index = self._next
        self._next = (index + 1) % len(self._busy)
        self._busy[index] = True
        released = False

        def release() -> None:
            nonlocal released
            with self._changed:
                if not released:
                    released = True
                    self._busy[index] = False
                    self._changed.notify_all()
        return PooledMessage(data, release)


class MessagePool:
    """
    One stream's serialised clouds and images: the stream's reader takes, the publisher releases.

    :param fields: the clouds' point fields, ``xyzi`` or ``xyzirt``.
    :param slots: buffers per type; 1 when each message is out before the next frame arrives.
    :param wait_s: how long the reader waits for a busy buffer.
    """

    def __init__(self, fields: str = 'xyzi', *, slots: int = 1, wait_s: float = WAIT_S) -> None:
        if slots < 1:
            raise ValueError(f'a pool needs a buffer per type at least, not {slots}')
        self._fields = fields
        self._slots = slots
        self._wait_s = wait_s
        self._changed = threading.Condition()
        self._times = PointTimes()
        self._lidar_frame_id = ''
        self._camera_frame_id = ''
        self._cloud_key: tuple | None = None
        self._image_key: tuple | None = None
        self._clouds: _Ring[CloudBuffer] | None = None
        self._images: _Ring[ImageBuffer] | None = None

    def configure(self, hello: Hello | None, *, lidar_frame_id: str, camera_frame_id: str,
                  times: PointTimes) -> None:
        """Set the frame ids and the xyzirt times of the next messages (at each Hello)."""
        self._times = times
        self._lidar_frame_id = lidar_frame_id
        self._camera_frame_id = camera_frame_id
        lidar = hello.lidar if hello is not None and hello.lidar.enabled else None
        camera = hello.camera if hello is not None and hello.camera.enabled else None
        self._cloud_key = None if lidar is None else (
            lidar.columns, lidar.rings, lidar_frame_id, self._fields, times)
        self._image_key = None if camera is None else (
            camera.width, camera.height, camera.width * CAMERA_BYTES_PER_PIXEL[camera.encoding],
            camera_frame_id, camera.encoding)
        if self._clouds is not None and self._clouds.key != self._cloud_key:
            self._clouds = None
        if self._images is not None and self._images.key != self._image_key:
            self._images = None

    @property
    def nbytes(self) -> int:
        """Return the bytes the pool holds."""
        return sum(ring.nbytes for ring in (self._clouds, self._images) if ring is not None)

    def payload_target(self, header: FrameHeader) -> memoryview | None:
        """
        Return where to receive the payload of a frame, None for the reader's own buffer.

        A view into the next message buffer, for LiDAR (xyzi) and camera frames of exactly the
        payload size of the current layout once its ring exists (waiting for a busy buffer).
        """
        if header.frame_type == FrameType.LIDAR:
            ring: _Ring[Any] | None = self._clouds
        elif header.frame_type == FrameType.CAMERA:
            ring = self._images
        else:
            return None
        if ring is None:
            return None
        buffer = ring.next_buffer(self._wait_s, make=False)
        return buffer.payload_view(header.payload_size) if buffer is not None else None

    def cloud(self, frame: LidarFrame) -> PooledMessage:
        """
        Return the serialised cloud of a frame (``lidar_frame_to_cloud_cdr``).

        :raises ValueError: as ``lidar_frame_to_cloud_cdr``.
        """
        key = (frame.columns, frame.rings, self._lidar_frame_id, self._fields, self._times)
        if key == self._cloud_key and self._clouds is None:
            self._clouds = _Ring(key, lambda: CloudBuffer(
                frame.columns, frame.rings, frame_id=self._lidar_frame_id, fields=self._fields,
                times=self._times), self._slots, self._changed)
        return self._pooled(self._clouds if key == self._cloud_key else None, frame,
                            lambda: lidar_frame_to_cloud_cdr(
                                frame, frame_id=self._lidar_frame_id, fields=self._fields,
                                times=self._times))

    def image(self, frame: CameraFrame) -> PooledMessage:
        """
        Return the serialised image of a frame (``camera_frame_to_image_cdr``).

        :raises ValueError: as ``camera_frame_to_image_cdr``.
        """
        key = (frame.width, frame.height, frame.row_step, self._camera_frame_id, frame.encoding)
        if key == self._image_key and self._images is None:
            self._images = _Ring(key, lambda: ImageBuffer(
                frame.width, frame.height, frame.row_step, frame_id=self._camera_frame_id,
                encoding=frame.encoding), self._slots, self._changed)
        return self._pooled(self._images if key == self._image_key else None, frame,
                            lambda: camera_frame_to_image_cdr(
                                frame, frame_id=self._camera_frame_id))

    def _pooled(self, ring: '_Ring[Any] | None', frame: Any,
                own: Callable[[], bytes]) -> PooledMessage:
        """Serialise into the ring's next buffer, or with ``own`` when there is none free."""
        buffer = ring.next_buffer(self._wait_s, make=True) if ring is not None else None
        if buffer is None:
            return PooledMessage(own())
        return ring.lend(buffer.serialise_in_place(frame))
