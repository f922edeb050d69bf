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
The serialised clouds and images of one sensor stream, in buffers of a fixed size.

``MessagePool`` holds at most one :class:`CloudBuffer` and one :class:`ImageBuffer`: those of
the layout of the current Hello, the bridge's point fields and the frame ids. A buffer is made
when the first frame of that layout has arrived whole, so neither a header nor a Hello alone
ever sizes one. From then on the stream's reader receives each payload of that size straight
into the message (``payload_target``), and publishing costs one ``bytes()`` copy. A frame of
another layout (before a Hello, or of a sensor the Hello disables) is serialised in a buffer of
its own that goes once it is published. A new layout replaces the old buffer: the pool never
grows with the frames.
"""

from acres_bridge.conversions.camera import camera_frame_to_image_cdr
from acres_bridge.conversions.camera import ImageBuffer
from acres_bridge.conversions.lidar import CloudBuffer
from acres_bridge.conversions.lidar import lidar_frame_to_cloud_cdr
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.protocol.frames import CAMERA_BYTES_PER_PIXEL
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.protocol.frames import FrameHeader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import Hello
from acres_bridge.protocol.frames import LidarFrame


class MessagePool:
    """
    One stream's serialised clouds and images; one thread (the stream's reader) uses it.

    :param fields: the clouds' point fields, ``xyzi`` or ``xyzirt``.
    """

    def __init__(self, fields: str = 'xyzi') -> None:
        self._fields = fields
        self._times = PointTimes()
        self._lidar_frame_id = ''
        self._camera_frame_id = ''
        self._cloud_key: tuple | None = None
        self._image_key: tuple | None = None
        self._cloud: CloudBuffer | None = None
        self._image: ImageBuffer | None = None

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
        if self._cloud is not None and self._cloud.key != self._cloud_key:
            self._cloud = None
        if self._image is not None and self._image.key != self._image_key:
            self._image = None

    @property
    def nbytes(self) -> int:
        """Return the bytes the pool holds."""
        return sum(buffer.nbytes for buffer in (self._cloud, self._image) if buffer is not None)

    def payload_target(self, header: FrameHeader) -> memoryview | None:
        """
        Return where to receive the payload of a frame, None for the reader's own buffer.

        A view into a message buffer, for LiDAR (xyzi) and camera frames of exactly the
        payload size of the current layout once its buffer exists.
        """
        if header.frame_type == FrameType.LIDAR:
            buffer = self._cloud
        elif header.frame_type == FrameType.CAMERA:
            buffer = self._image
        else:
            return None
        return buffer.payload_view(header.payload_size) if buffer is not None else None

    def cloud(self, frame: LidarFrame) -> bytes:
        """
        Return the serialised cloud of a frame (``lidar_frame_to_cloud_cdr``).

        :raises ValueError: as ``lidar_frame_to_cloud_cdr``.
        """
        key = (frame.columns, frame.rings, self._lidar_frame_id, self._fields, self._times)
        if key != self._cloud_key:
            return lidar_frame_to_cloud_cdr(frame, frame_id=self._lidar_frame_id,
                                            fields=self._fields, times=self._times)
        if self._cloud is None:
            self._cloud = CloudBuffer(frame.columns, frame.rings, frame_id=self._lidar_frame_id,
                                      fields=self._fields, times=self._times)
        return self._cloud.serialise(frame)

    def image(self, frame: CameraFrame) -> bytes:
        """
        Return the serialised image of a frame (``camera_frame_to_image_cdr``).

        :raises ValueError: as ``camera_frame_to_image_cdr``.
        """
        key = (frame.width, frame.height, frame.row_step, self._camera_frame_id, frame.encoding)
        if key != self._image_key:
            return camera_frame_to_image_cdr(frame, frame_id=self._camera_frame_id)
        if self._image is None:
            self._image = ImageBuffer(frame.width, frame.height, frame.row_step,
                                      frame_id=self._camera_frame_id, encoding=frame.encoding)
        return self._image.serialise(frame)
