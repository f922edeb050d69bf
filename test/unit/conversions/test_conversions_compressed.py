# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The compressed image as image_transport's compressed plugin makes it, without rclpy.init."""

import io

import numpy as np
from PIL import Image as PillowImage
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CompressedImage

from acres_bridge.conversions.compressed import compressed_format
from acres_bridge.conversions.compressed import compressed_image_cdr
from acres_bridge.conversions.compressed import encode_bgr8


def _picture(height: int = 48, width: int = 64) -> np.ndarray:
    """A smooth bgr8 picture with a sharp edge: what JPEG keeps well and what it blurs."""
    rows, columns = np.mgrid[0:height, 0:width]
    pixels = np.stack([columns * 4, rows * 5, (rows + columns) * 2], axis=-1)
    pixels[:, width // 2:, 2] = 250
    return pixels.astype(np.uint8)


def _decoded_bgr(data: bytes) -> np.ndarray:
    return np.asarray(PillowImage.open(io.BytesIO(data)).convert('RGB'))[..., ::-1]


def test_the_format_text_is_the_plugins():
    assert compressed_format('bgr8', 'jpeg') == 'bgr8; jpeg compressed bgr8'
    assert compressed_format('bgr8', 'png') == 'bgr8; png compressed bgr8'


@pytest.mark.parametrize('level', [0, 3, 9])
def test_png_gives_the_pixels_back_exactly(level):
    pixels = _picture()
    data = encode_bgr8(pixels, image_format='png', png_level=level)
    assert data.startswith(b'\x89PNG')
    assert np.array_equal(_decoded_bgr(data), pixels)


def test_jpeg_keeps_the_picture_within_its_quality_and_blue_stays_blue():
    pixels = _picture()
    fine = _decoded_bgr(encode_bgr8(pixels, image_format='jpeg', jpeg_quality=95))
    coarse = _decoded_bgr(encode_bgr8(pixels, image_format='jpeg', jpeg_quality=10))
    error = np.abs(fine.astype(int) - pixels).mean()
    assert error < 2.0
    assert np.abs(coarse.astype(int) - pixels).mean() > error
    # A channel mix-up would turn the red half blue: the channel order is kept.
    assert fine[:, -1, 2].mean() > 240


@pytest.mark.parametrize('image_format', ['png', 'jpeg'])
def test_strided_rows_are_read_as_the_picture(image_format):
    padded = np.zeros((48, 70, 3), dtype=np.uint8)
    padded[:, :64] = _picture()
    data = encode_bgr8(padded[:, :64], image_format=image_format)
    assert np.abs(_decoded_bgr(data).astype(int) - _picture()).max() <= (
        0 if image_format == 'png' else 40)


@pytest.mark.parametrize('shape', [(1, 1), (3, 1), (1, 5), (7, 9)])
def test_png_of_any_size_is_a_valid_file_of_the_same_pixels(shape):
    pixels = np.random.default_rng(3).integers(0, 256, (*shape, 3), dtype=np.uint8)
    assert np.array_equal(_decoded_bgr(encode_bgr8(pixels, image_format='png')), pixels)


def test_the_serialised_message_has_the_header_format_and_file():
    data = encode_bgr8(_picture(), image_format='png')
    message = deserialize_message(compressed_image_cdr(
        data, stamp_s=12.25, frame_id='polaris/camera_optical_frame',
        image_format=compressed_format('bgr8', 'png')), CompressedImage)
    assert (message.header.stamp.sec, message.header.stamp.nanosec) == (12, 250_000_000)
    assert message.header.frame_id == 'polaris/camera_optical_frame'
    assert message.format == 'bgr8; png compressed bgr8'
    assert bytes(message.data) == data


@pytest.mark.parametrize('options, message', [
    ({'image_format': 'tiff'}, "compressed format 'tiff'"),
    ({'image_format': 'jpeg', 'jpeg_quality': 0}, 'JPEG quality of 0'),
    ({'image_format': 'png', 'png_level': 10}, 'PNG level of 10'),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        encode_bgr8(_picture(), **options)
    with pytest.raises(ValueError, match='bgr8 pixels'):
        encode_bgr8(np.zeros((4, 4), dtype=np.uint8))
