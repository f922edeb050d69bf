# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Tests of the sensor stream frames: header, Hello, every payload encoder and decoder."""

import json
import math
import struct

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest
from support.paths import DATA

from acres_bridge.protocol import frames
from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import InsField
from acres_bridge.protocol.hello import CameraLayout
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.hello import InsLayout
from acres_bridge.protocol.hello import LidarLayout
from acres_bridge.protocol.hello import parse_hello
from acres_bridge.protocol.hello import SCHEMA
from acres_bridge.protocol.limits import MAX_HELLO_PAYLOAD
from acres_bridge.protocol.limits import MAX_SENSOR_PAYLOAD


def polaris_hello_dict() -> dict:
    return json.loads((DATA / 'hello_polaris.json').read_text())


def small_hello_dict(*, columns: int = 6, rings: int = 4, width: int = 5,
                     height: int = 3) -> dict:
    hello = polaris_hello_dict()
    hello['lidar'].update(columns=columns, rings=rings)
    hello['camera'].update(width=width, height=height)
    return hello


def decode(frame_bytes: bytes, hello: Hello | None = None) -> frames.Frame:
    header = frames.decode_header(frame_bytes)
    return frames.decode_payload(header, memoryview(frame_bytes)[frames.HEADER_SIZE:], hello)


def frame(frame_type: int, payload: bytes, sequence: int = 7, stamp_s: float = 1.25,
          publish_s: float = 100.5) -> bytes:
    return frames.encode_frame(frame_type, payload, sequence=sequence, stamp_s=stamp_s,
                               publish_s=publish_s)


def test_header_bytes_follow_the_seed_layout():
    data = frames.encode_header(FrameType.LIDAR, sequence=2, payload_size=921616,
                                stamp_s=0.108333, publish_s=12.5)
    assert len(data) == 32
    assert data[:4] == b'TSS1'
    assert struct.unpack_from('<H', data, 4)[0] == 4
    assert struct.unpack_from('<H', data, 6)[0] == 0
    assert struct.unpack_from('<I', data, 8)[0] == 2
    assert struct.unpack_from('<I', data, 12)[0] == 921616
    assert struct.unpack_from('<d', data, 16)[0] == 0.108333
    assert struct.unpack_from('<d', data, 24)[0] == 12.5
    assert frames.decode_header(data) == frames.FrameHeader(4, 0, 2, 921616, 0.108333, 12.5)


def test_bad_magic_is_a_frame_error_that_is_not_recoverable():
    data = b'TSS2' + frames.encode_header(FrameType.CLOCK, sequence=0, payload_size=8,
                                          stamp_s=0.0, publish_s=0.0)[4:]
    with pytest.raises(FrameError, match='bad magic') as info:
        frames.decode_header(data)
    assert not info.value.recoverable


def test_short_header_is_a_frame_error():
    with pytest.raises(FrameError, match='32 bytes'):
        frames.decode_header(b'TSS1' + bytes(20))


def test_frame_names_cover_every_type_and_fall_back_to_the_number():
    assert [frames.frame_name(kind) for kind in FrameType] == [
        'hello', 'clock', 'ins', 'lidar', 'camera', 'barrier']
    assert frames.frame_name(42) == '42'


def test_ins_fields_are_the_40_indices_of_the_seed():
    assert len(InsField) == frames.INS_FIELD_COUNT == 40
    assert [field.value for field in InsField] == list(range(40))
    assert (InsField.UTM_E, InsField.UTM_QW, InsField.LAT, InsField.COV_E) == (0, 6, 16, 19)
    assert (InsField.ENU_QX, InsField.ENU_X, InsField.FIX_STATUS) == (22, 26, 29)
    assert (InsField.UTM_ZONE, InsField.TRUTH_X, InsField.TRUTH_QW) == (31, 32, 38)
    assert InsField.TRUTH_SPEED == 39


def test_polaris_hello_parses_every_key():
    hello = parse_hello(json.dumps(polaris_hello_dict()).encode())
    assert (hello.schema, hello.agent, hello.vehicle) == (SCHEMA, 'polaris', 'polaris')
    assert hello.georeferenced is True
    assert hello.mount_convention.startswith('FLU')
    assert hello.body_origin_flu_m == (1.14808, 0.0, 0.65536)
    assert hello.lidar == LidarLayout(
        enabled=True, frame_id='lidar', hz=10.0, columns=1800, rings=32, range_m=161.3,
        azimuth_order='cw', position_flu_m=(2.5, 0.0, 2.039), rpy_deg=(-1.518, 5.317, 0.0))
    assert hello.camera == CameraLayout(
        enabled=True, hz=10.0, width=896, height=512, fx=599.526, fy=592.378, cx=440.130,
        cy=270.805, distortion_model='plumb_bob',
        d=(-0.55389, 0.40842, -0.0099785, 0.0044239, -0.16673), encoding='bgr8',
        position_flu_m=(2.745, 0.606, 1.887), rpy_deg=(-3.49, 16.52, -2.63))
    assert hello.ins == InsLayout(
        enabled=True, hz=100.0, position_flu_m=(0.0, 0.0, 0.0), utm_zone=16,
        datum='nad83_2011', imu_position_flu_m=(0.95, -0.45, 0.7),
        gnss_antenna_flu_m=(1.1, 0.0, 2.15))
    assert hello.raw == polaris_hello_dict()


def test_hello_without_sections_has_disabled_sensors():
    hello = parse_hello(b'{"schema": "acres-sensor-stream-1", "agent": "a"}')
    assert hello.agent == 'a'
    assert hello.vehicle == ''
    assert not hello.lidar.enabled and not hello.camera.enabled and not hello.ins.enabled
    assert hello.camera.d == (0.0,) * 5


def test_core_hello_with_the_camera_disabled_needs_no_camera_size():
    data = polaris_hello_dict()
    data['camera'] = {'enabled': False}
    hello = parse_hello(json.dumps(data).encode())
    assert not hello.camera.enabled
    assert frames.max_payload_size(FrameType.CAMERA, hello) == MAX_SENSOR_PAYLOAD


@pytest.mark.parametrize('payload, message', [
    (b'\xff\xfe', 'not UTF-8 JSON'),
    (b'{"agent": ', 'not UTF-8 JSON'),
    (b'[1, 2]', 'not a JSON object'),
    (b'{"lidar": 3}', 'lidar is not a JSON object'),
    (b'{"agent": 3}', 'agent is not a string'),
    (b'{"georeferenced": 1}', 'georeferenced is not a boolean'),
    (b'{"lidar": {"columns": "1800"}}', 'lidar.columns is not an integer'),
    (b'{"lidar": {"columns": -1}}', 'lidar.columns is not an integer'),
    (b'{"lidar": {"columns": 1.5}}', 'lidar.columns is not an integer'),
    (b'{"lidar": {"hz": true}}', 'lidar.hz is not a number'),
    (b'{"lidar": {"rpy_deg": [1, 2]}}', 'lidar.rpy_deg is not a list of 3'),
    (b'{"camera": {"d": [1, "x"]}}', 'camera.d is not a list'),
    (b'{"lidar": {"enabled": true, "columns": 0, "rings": 32}}', 'lidar of 0 x 32'),
    (b'{"lidar": {"enabled": true, "columns": 100000, "rings": 100000}}', 'lidar of'),
    (b'{"lidar": {"azimuth_order": "up"}}', 'azimuth_order'),
    (b'{"camera": {"enabled": true, "width": 4, "height": 4, "encoding": "rgb8"}}',
     'camera.encoding'),
    (b'{"camera": {"enabled": true, "width": 65536, "height": 65536}}', 'camera of'),
    (b'{"ins": {"utm_zone": 61}}', 'ins.utm_zone'),
])
def test_malformed_hello_is_a_frame_error_naming_the_key(payload, message):
    with pytest.raises(FrameError, match=message):
        parse_hello(payload)


def test_integral_floats_are_accepted_as_integers():
    hello = parse_hello(b'{"lidar": {"enabled": true, "columns": 180.0, "rings": 8}}')
    assert hello.lidar.columns == 180 and isinstance(hello.lidar.columns, int)


def test_max_payload_size_follows_the_type_and_the_hello():
    hello = parse_hello(json.dumps(polaris_hello_dict()).encode())
    assert frames.max_payload_size(FrameType.CLOCK, hello) == 8
    assert frames.max_payload_size(FrameType.INS, None) == 320
    assert frames.max_payload_size(FrameType.BARRIER, None) == 8
    assert frames.max_payload_size(FrameType.HELLO, None) == MAX_HELLO_PAYLOAD
    assert frames.max_payload_size(FrameType.LIDAR, hello) == 921616
    assert frames.max_payload_size(FrameType.CAMERA, hello) == 1376272
    assert frames.max_payload_size(FrameType.LIDAR, None) == MAX_SENSOR_PAYLOAD
    assert frames.max_payload_size(99, hello) == MAX_SENSOR_PAYLOAD


def test_hello_frame_round_trips():
    data = polaris_hello_dict()
    decoded = decode(frame(FrameType.HELLO, encode_hello_payload(data), stamp_s=0.0))
    assert isinstance(decoded, frames.HelloFrame)
    assert decoded.header.frame_type == FrameType.HELLO
    assert decoded.hello.raw == data


def test_clock_frame_round_trips():
    decoded = decode(frame(FrameType.CLOCK, frames.encode_clock_payload(0.32500001695007086)))
    assert decoded == frames.ClockFrame(
        frames.FrameHeader(FrameType.CLOCK, 0, 7, 8, 1.25, 100.5), 0.32500001695007086)


def test_ins_frame_round_trips_with_nan():
    values = [float(index) + 0.5 for index in range(40)]
    values[InsField.UTM_E] = math.nan
    decoded = decode(frame(FrameType.INS, frames.encode_ins_payload(values)))
    assert isinstance(decoded, frames.InsFrame)
    assert math.isnan(decoded.values[InsField.UTM_E])
    assert decoded.values[1:] == tuple(values[1:])


def test_ins_payload_needs_40_values():
    with pytest.raises(ValueError, match='40'):
        frames.encode_ins_payload([0.0] * 39)


def test_barrier_frame_round_trips():
    decoded = decode(frame(FrameType.BARRIER, frames.encode_barrier_payload(2**40 + 12)))
    assert decoded == frames.BarrierFrame(
        frames.FrameHeader(FrameType.BARRIER, 0, 7, 8, 1.25, 100.5), 2**40 + 12)


def lidar_points(columns: int = 6, rings: int = 4) -> np.ndarray:
    points = np.arange(columns * rings * 4, dtype=np.float32).reshape(columns, rings, 4)
    points[1, 2, :3] = np.nan
    points[1, 2, 3] = 0.0
    return points


def test_lidar_frame_round_trips_byte_for_byte():
    points = lidar_points()
    payload = frames.encode_lidar_payload(points)
    assert payload[:16] == struct.pack('<4I', 6, 4, 16, 0)
    hello = parse_hello(json.dumps(small_hello_dict()).encode())
    decoded = decode(frame(FrameType.LIDAR, payload), hello)
    assert isinstance(decoded, frames.LidarFrame)
    assert (decoded.columns, decoded.rings, decoded.point_step) == (6, 4, 16)
    assert decoded.points.nbytes == 6 * 4 * 16
    cloud = np.frombuffer(decoded.points, '<f4').reshape(6, 4, 4)
    np.testing.assert_array_equal(cloud, points)
    assert bytes(decoded.points) == points.tobytes()


def test_lidar_points_are_a_view_of_the_payload_not_a_copy():
    buffer = bytearray(frames.encode_lidar_payload(lidar_points()))
    header = frames.FrameHeader(FrameType.LIDAR, 0, 1, len(buffer), 0.0, 0.0)
    decoded = frames.decode_payload(header, memoryview(buffer), None)
    buffer[16:20] = struct.pack('<f', 42.0)
    assert struct.unpack_from('<f', decoded.points)[0] == 42.0


def test_lidar_frame_that_differs_from_the_hello_layout_is_a_frame_error():
    hello = parse_hello(json.dumps(small_hello_dict(columns=6, rings=4)).encode())
    payload = frames.encode_lidar_payload(lidar_points(columns=4, rings=6))
    with pytest.raises(FrameError, match='the Hello says 6 x 4'):
        decode(frame(FrameType.LIDAR, payload), hello)


def test_truncated_lidar_frame_is_a_frame_error():
    payload = frames.encode_lidar_payload(lidar_points())[:-16]
    with pytest.raises(FrameError, match='needs 400 payload bytes, has 384'):
        decode(frame(FrameType.LIDAR, payload))


def test_lidar_frame_with_another_point_step_is_a_frame_error():
    payload = bytearray(frames.encode_lidar_payload(lidar_points()))
    struct.pack_into('<I', payload, 8, 32)
    with pytest.raises(FrameError, match='point step 32'):
        decode(frame(FrameType.LIDAR, bytes(payload)))


@pytest.mark.parametrize('kind', [FrameType.LIDAR, FrameType.CAMERA])
def test_sensor_frame_without_a_sub_header_is_a_frame_error(kind):
    with pytest.raises(FrameError, match='no sub-header'):
        decode(frame(kind, bytes(15)))


def test_lidar_frame_above_the_hello_size_is_a_frame_error():
    hello = parse_hello(json.dumps(small_hello_dict()).encode())
    payload = frames.encode_lidar_payload(lidar_points(columns=7))
    with pytest.raises(FrameError, match='exceeds the limit of 400'):
        decode(frame(FrameType.LIDAR, payload), hello)


def camera_pixels(width: int = 5, height: int = 3) -> np.ndarray:
    return (np.arange(height * width * 3) % 251).astype(np.uint8).reshape(height, width, 3)


def test_camera_frame_round_trips_byte_for_byte():
    pixels = camera_pixels()
    payload = frames.encode_camera_payload(pixels)
    assert payload[:16] == struct.pack('<4I', 5, 3, 1, 15)
    hello = parse_hello(json.dumps(small_hello_dict()).encode())
    decoded = decode(frame(FrameType.CAMERA, payload), hello)
    assert isinstance(decoded, frames.CameraFrame)
    assert (decoded.width, decoded.height, decoded.encoding, decoded.row_step) == (
        5, 3, 'bgr8', 15)
    assert bytes(decoded.pixels) == pixels.tobytes()


def test_camera_rows_with_padding_decode_without_a_hello():
    payload = struct.pack('<4I', 2, 2, 1, 8) + bytes(range(16))
    decoded = decode(frame(FrameType.CAMERA, payload))
    assert decoded.row_step == 8
    assert bytes(decoded.pixels) == bytes(range(16))


@pytest.mark.parametrize('sub_header, message', [
    ((5, 3, 2, 15), 'encoding 2 is unknown'),
    ((5, 3, 1, 14), 'row step 14 is less than'),
    ((5, 4, 1, 15), 'needs 76 payload bytes, has 61'),
])
def test_bad_camera_sub_header_is_a_frame_error(sub_header, message):
    payload = struct.pack('<4I', *sub_header) + bytes(45)
    with pytest.raises(FrameError, match=message):
        decode(frame(FrameType.CAMERA, payload))


def test_camera_frame_that_differs_from_the_hello_size_is_a_frame_error():
    hello = parse_hello(json.dumps(small_hello_dict(width=3, height=5)).encode())
    payload = frames.encode_camera_payload(camera_pixels(width=5, height=3))
    with pytest.raises(FrameError, match='the Hello says 3 x 5'):
        decode(frame(FrameType.CAMERA, payload), hello)


def test_camera_encoder_refuses_other_shapes():
    with pytest.raises(ValueError, match='uint8'):
        frames.encode_camera_payload(np.zeros((3, 5, 3), dtype=np.float32))
    with pytest.raises(ValueError, match='shape'):
        frames.encode_camera_payload(np.zeros((3, 5), dtype=np.uint8))


def test_lidar_encoder_refuses_other_shapes():
    with pytest.raises(ValueError, match='columns, rings, 4'):
        frames.encode_lidar_payload(np.zeros((6, 4, 3), dtype=np.float32))


@pytest.mark.parametrize('kind, size', [
    (FrameType.CLOCK, 7), (FrameType.INS, 328), (FrameType.BARRIER, 16)])
def test_fixed_size_frame_of_another_size_is_a_frame_error(kind, size):
    with pytest.raises(FrameError, match=f'payload of {size} bytes, expected'):
        decode(frame(kind, bytes(size)))


def test_payload_that_differs_from_the_header_size_is_a_frame_error():
    header = frames.FrameHeader(FrameType.CLOCK, 0, 0, 8, 0.0, 0.0)
    with pytest.raises(FrameError, match='claims 8 payload bytes, got 9'):
        frames.decode_payload(header, memoryview(bytes(9)), None)


def test_unknown_type_is_a_frame_error():
    with pytest.raises(FrameError, match='unknown frame type 9'):
        decode(frame(9, b'abc'))


@settings(max_examples=300, deadline=None)
@given(kind=st.integers(0, 8), payload=st.binary(max_size=600), with_hello=st.booleans())
def test_arbitrary_payloads_decode_or_raise_frame_error(kind, payload, with_hello):
    hello = (parse_hello(json.dumps(small_hello_dict()).encode())
             if with_hello else None)
    header = frames.FrameHeader(kind, 0, 0, len(payload), 0.0, 0.0)
    try:
        decoded = frames.decode_payload(header, memoryview(payload), hello)
    except FrameError:
        return
    assert decoded.header is header


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(['lidar', 'camera', 'ins', 'enabled', 'columns', 'rings', 'width',
                         'height', 'd', 'rpy_deg', 'agent', 'encoding', 'hz']),
        children, max_size=5),
    max_leaves=20)


@settings(max_examples=100, deadline=None)
@given(data=_JSON)
def test_arbitrary_json_parses_as_hello_or_raises_frame_error(data):
    try:
        hello = parse_hello(json.dumps(data).encode())
    except FrameError:
        return
    assert hello.raw == data
