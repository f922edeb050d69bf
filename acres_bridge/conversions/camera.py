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
Camera frames to ``sensor_msgs/Image``, the Hello's intrinsics to ``sensor_msgs/CameraInfo``.

An image keeps the frame's bytes: ``encoding`` bgr8 (blue, green, red, 8 bits each), rows from
the top, ``step`` = the frame's row step, ``data`` byte for byte the frame's pixels. Its
frame id is the camera's optical frame (z forward, x right, y down), as REP 103 asks of
images.

The camera info of an image has the same header and the Hello's OpenCV intrinsics::

    d = camera.d (k1, k2, p1, p2, k3; plumb_bob)
    k = [fx 0 cx; 0 fy cy; 0 0 1]      r = identity      p = [fx 0 cx 0; 0 fy cy 0; 0 0 1 0]
"""

from sensor_msgs.msg import CameraInfo
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from acres_bridge.conversions.buffers import keep_array_options
from acres_bridge.conversions.buffers import uint8_array
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.protocol.frames import CameraLayout
from acres_bridge.protocol.frames import Hello

_IDENTITY_3X3 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_KEEP_ARRAY = keep_array_options(Image)


def camera_frame_to_image(frame: CameraFrame, header: Header) -> Image:
    """
    Return the image of a Camera frame; its pixels are copied once.

    :param header: the header of the image (the frame's stamp, the optical frame id), used as
        given.
    :raises ValueError: when the pixels are not height x row step bytes.
    """
    pixels = frame.pixels
    if pixels.nbytes != frame.height * frame.row_step:
        raise ValueError(f'a camera frame of {frame.height} rows of {frame.row_step} bytes has '
                         f'{pixels.nbytes} bytes of pixels')
    image = Image(header=header, height=frame.height, width=frame.width,
                  encoding=frame.encoding, is_bigendian=0, step=frame.row_step, **_KEEP_ARRAY)
    image.data = uint8_array(pixels)
    return image


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
