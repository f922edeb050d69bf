# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Camera frames to Image and the Hello to CameraInfo, without rclpy.init."""

import dataclasses

import numpy as np
import pytest
from std_msgs.msg import Header
from support.sensor_frames import camera_frame
from support.sensor_frames import hello_frame

from acres_bridge.conversions.camera import camera_frame_to_image
from acres_bridge.conversions.camera import camera_info_from_hello
from acres_bridge.conversions.clock import make_header
from acres_bridge.protocol.frames import CameraFrame


def _pixels(height: int, width: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def test_an_image_is_bgr8_with_the_frames_row_step_and_bytes():
    pixels = _pixels(512, 896)
    frame = camera_frame(pixels, stamp_s=3.5)
    header = make_header(frame.header.stamp_s, 'polaris/camera_optical_frame')
    image = camera_frame_to_image(frame, header)
    assert image.header is header
    assert (image.height, image.width) == (512, 896)
    assert image.encoding == 'bgr8'
    assert image.is_bigendian == 0
    assert image.step == frame.row_step == 3 * 896
    assert bytes(image.data) == bytes(frame.pixels) == pixels.tobytes()
    # Blue, green, red of the top-left pixel first.
    assert tuple(image.data[:3]) == tuple(pixels[0, 0])


def test_a_padded_row_step_is_kept():
    pixels = _pixels(4, 5)
    frame = camera_frame(pixels)
    rows = np.zeros((4, 16), np.uint8)
    rows[:, :15] = pixels.reshape(4, 15)
    padded = dataclasses.replace(frame, row_step=16, pixels=memoryview(rows.tobytes()))
    image = camera_frame_to_image(padded, Header())
    assert image.step == 16
    assert bytes(image.data) == rows.tobytes()


def test_pixels_that_do_not_fill_the_rows_are_refused():
    frame = camera_frame(_pixels(4, 5))
    short = dataclasses.replace(frame, pixels=frame.pixels[:-1])
    with pytest.raises(ValueError, match='rows'):
        camera_frame_to_image(short, Header())


def test_the_image_does_not_keep_the_readers_buffer():
    buffer = bytearray(_pixels(2, 3).tobytes())
    frame = CameraFrame(camera_frame(_pixels(2, 3)).header, 3, 2, 'bgr8', 9, memoryview(buffer))
    image = camera_frame_to_image(frame, Header())
    buffer[:] = bytes(len(buffer))
    assert bytes(image.data) == _pixels(2, 3).tobytes()


def test_camera_info_carries_the_hello_intrinsics():
    hello = hello_frame().hello
    header = make_header(3.5, 'polaris/camera_optical_frame')
    info = camera_info_from_hello(hello, header)
    assert info.header is header
    assert (info.width, info.height) == (896, 512)
    assert info.distortion_model == 'plumb_bob'
    assert list(info.d) == [-0.55389, 0.40842, -0.0099785, 0.0044239, -0.16673]
    fx, fy, cx, cy = 599.526, 592.378, 440.13, 270.805
    assert list(info.k) == [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    assert list(info.r) == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    assert list(info.p) == [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert (info.binning_x, info.binning_y) == (0, 0)
    assert (info.roi.width, info.roi.height) == (0, 0)


def test_camera_info_of_a_layout_equals_that_of_its_hello():
    hello = hello_frame().hello
    from_layout = camera_info_from_hello(hello.camera, Header())
    from_hello = camera_info_from_hello(hello, Header())
    assert from_layout == from_hello
