# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Serialised clouds, images and camera infos deserialise to exactly the message functions' output.

Every vehicle layout of the emulator, frame ids of 0 to 7 characters (each padding case of the
strings and of the fields after them), both point fields, both column orders and both time
origins; points received in place (``payload_view``) and copied in; a buffer reused by frames
of other values; and the pool's bounds: a fixed size, nothing sized by a header, buffers taken
in turn and reused only once released.
"""

import threading
from unittest import mock

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from sensor_msgs.msg import PointCloud2
from support.sensor_frames import camera_frame
from support.sensor_frames import lidar_frame
from support.sensor_frames import lidar_points

from acres_bridge.conversions.camera import camera_frame_to_image
from acres_bridge.conversions.camera import camera_frame_to_image_cdr
from acres_bridge.conversions.camera import camera_info_cdr
from acres_bridge.conversions.camera import camera_info_from_hello
from acres_bridge.conversions.camera import ImageBuffer
from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.lidar import CloudBuffer
from acres_bridge.conversions.lidar import lidar_frame_to_cloud
from acres_bridge.conversions.lidar import lidar_frame_to_cloud_cdr
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.layouts import VEHICLES
from acres_bridge.protocol import frames
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.hello import parse_hello
from acres_bridge.protocol.limits import SUB_HEADER
from acres_bridge.sensors.message_pool import MessagePool
from acres_bridge.sensors.message_pool import PooledMessage

FRAME_IDS = ['', 'a', 'ab', 'abc', 'abcd', 'lidar', 'polaris', 'maxxum/camera_optical_frame']
FIELDS = ['xyzi', 'xyzirt']
TIMES = [PointTimes(), PointTimes(0.1, 'cw', 'end'), PointTimes(0.1, 'ccw', 'end'),
         PointTimes(0.05, 'ccw', 'start'), PointTimes(0.1, 'cw', 'start')]


def _hello(vehicle: str) -> Hello:
    return parse_hello(encode_hello_payload(hello_layout(vehicle, vehicle)))


def _pixels(width: int, height: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def _cloud(frame: frames.LidarFrame, frame_id: str, fields: str,
           times: PointTimes) -> PointCloud2:
    stamp_s = frame.header.stamp_s
    if fields == 'xyzirt':
        stamp_s = times.cloud_stamp_s(stamp_s)
    return lidar_frame_to_cloud(frame, make_header(stamp_s, frame_id), fields=fields,
                                times=times)


def _same(data: bytes, message) -> None:
    """Assert that serialised bytes are the message: deserialised and at rmw's length."""
    decoded = deserialize_message(data, type(message))
    assert decoded == message
    assert len(data) == len(serialize_message(message))


def _published(message: PooledMessage) -> bytes:
    """Return a pooled message's bytes and give its buffer back, as the publisher does."""
    data = bytes(message.data)
    message.release()
    return data


def _received(buffer, frame_type: int, payload: bytes, *, stamp_s: float,
              hello: Hello | None = None):
    """Receive a payload the way the reader does with a target, and decode it there."""
    header = frames.FrameHeader(frame_type, 0, 5, len(payload), stamp_s, 0.0)
    if isinstance(buffer, MessagePool):
        view = buffer.payload_target(header)
    else:
        view = buffer.payload_view(len(payload))
    assert view is not None
    view[:] = payload
    return frames.decode_payload(header, view, hello)


@pytest.mark.parametrize('vehicle', VEHICLES)
@pytest.mark.parametrize('fields', FIELDS)
@pytest.mark.parametrize('frame_id', FRAME_IDS)
def test_every_layout_and_frame_id_serialises_to_the_cloud(vehicle, fields, frame_id):
    lidar = _hello(vehicle).lidar
    frame = lidar_frame(lidar_points(lidar.columns, lidar.rings), stamp_s=17.375)
    times = PointTimes.of(lidar, origin='start')
    _same(lidar_frame_to_cloud_cdr(frame, frame_id=frame_id, fields=fields, times=times),
          _cloud(frame, frame_id, fields, times))


@pytest.mark.parametrize('times', TIMES)
@pytest.mark.parametrize('fields', FIELDS)
def test_both_orders_and_origins_keep_the_time_rule(times, fields):
    frame = lidar_frame(lidar_points(12, 3), stamp_s=3.0)
    data = lidar_frame_to_cloud_cdr(frame, frame_id='lidar', fields=fields, times=times)
    _same(data, _cloud(frame, 'lidar', fields, times))


@pytest.mark.parametrize('fields', FIELDS)
@pytest.mark.parametrize('frame_id', FRAME_IDS[:5])
def test_a_reused_cloud_buffer_gives_each_frame_its_own_cloud(fields, frame_id):
    times = PointTimes(0.1, 'ccw', 'end')
    buffer = CloudBuffer(9, 4, frame_id=frame_id, fields=fields, times=times)
    size = buffer.nbytes
    for seed, stamp_s in ((1, 1.0), (2, 1.1), (3, 1.2)):
        points = lidar_points(9, 4, seed=seed)
        copied = lidar_frame(points, stamp_s=stamp_s)
        _same(buffer.serialise(copied), _cloud(copied, frame_id, fields, times))
        if fields == 'xyzi':
            in_place = _received(buffer, FrameType.LIDAR, frames.encode_lidar_payload(points),
                                 stamp_s=stamp_s)
            _same(buffer.serialise(in_place), _cloud(copied, frame_id, fields, times))
        assert buffer.nbytes == size


def test_points_received_in_place_are_not_copied_again():
    buffer = CloudBuffer(6, 2, frame_id='lidar')
    frame = _received(buffer, FrameType.LIDAR, frames.encode_lidar_payload(lidar_points(6, 2)),
                      stamp_s=2.0)
    before = bytes(frame.points)
    data = buffer.serialise(frame)
    # The message's data is the received points; the sub-header that landed on the prefix is
    # gone from the message.
    assert data.endswith(before + b'\x00')
    _same(data, lidar_frame_to_cloud(frame, make_header(2.0, 'lidar')))


def test_xyzirt_is_never_received_in_place_and_xyzi_only_at_its_own_size():
    size = frames.lidar_payload_size(6, 2)
    assert CloudBuffer(6, 2, frame_id='l', fields='xyzirt').payload_view(size) is None
    xyzi = CloudBuffer(6, 2, frame_id='l')
    assert xyzi.payload_view(size - 16) is None
    assert xyzi.payload_view(size + 16) is None
    assert xyzi.payload_view(size).nbytes == size


def test_a_cloud_buffer_refuses_a_frame_of_another_layout():
    buffer = CloudBuffer(6, 2, frame_id='lidar')
    with pytest.raises(ValueError, match='6 x 2'):
        buffer.serialise(lidar_frame(lidar_points(5, 2)))
    with pytest.raises(ValueError, match='point fields'):
        CloudBuffer(6, 2, frame_id='lidar', fields='xyz')


def test_a_stamp_time_cannot_hold_is_refused():
    frame = lidar_frame(lidar_points(2, 2), stamp_s=2.0 ** 31)
    with pytest.raises(ValueError, match='range'):
        lidar_frame_to_cloud_cdr(frame, frame_id='lidar')
    with pytest.raises(ValueError, match='range'):
        camera_frame_to_image_cdr(camera_frame(_pixels(2, 2), stamp_s=-2.0 ** 32),
                                  frame_id='camera')


@pytest.mark.parametrize('vehicle', VEHICLES)
@pytest.mark.parametrize('frame_id', FRAME_IDS)
def test_every_layout_and_frame_id_serialises_to_the_image_and_its_info(vehicle, frame_id):
    hello = _hello(vehicle)
    camera = hello.camera
    frame = camera_frame(_pixels(camera.width, camera.height), stamp_s=8.125)
    header = make_header(8.125, frame_id)
    _same(camera_frame_to_image_cdr(frame, frame_id=frame_id),
          camera_frame_to_image(frame, header))
    _same(camera_info_cdr(hello, frame_id=frame_id, stamp_s=8.125),
          camera_info_from_hello(hello, header))


@pytest.mark.parametrize('frame_id', FRAME_IDS[:5])
def test_a_reused_image_buffer_gives_each_frame_its_own_image(frame_id):
    buffer = ImageBuffer(5, 3, 15, frame_id=frame_id)
    size = buffer.nbytes
    for seed, stamp_s in ((1, 0.5), (2, 0.6)):
        pixels = _pixels(5, 3, seed)
        copied = camera_frame(pixels, stamp_s=stamp_s)
        expected = camera_frame_to_image(copied, make_header(stamp_s, frame_id))
        _same(buffer.serialise(copied), expected)
        in_place = _received(buffer, FrameType.CAMERA, frames.encode_camera_payload(pixels),
                             stamp_s=stamp_s)
        _same(buffer.serialise(in_place), expected)
        assert buffer.nbytes == size


def test_an_image_with_padded_rows_keeps_its_row_step():
    pixels = _pixels(4, 3)
    rows = np.zeros((3, 16), dtype=np.uint8)
    rows[:, :12] = pixels.reshape(3, 12)
    payload = SUB_HEADER.pack(4, 3, 1, 16) + rows.tobytes()
    header = frames.FrameHeader(FrameType.CAMERA, 0, 1, len(payload), 1.0, 0.0)
    frame = frames.decode_payload(header, memoryview(bytearray(payload)), None)
    assert frame.row_step == 16
    _same(camera_frame_to_image_cdr(frame, frame_id='camera'),
          camera_frame_to_image(frame, make_header(1.0, 'camera')))


# --- the pool --------------------------------------------------------------------------------

def _small_hello(*, columns: int = 10, rings: int = 4, width: int = 6,
                 height: int = 4) -> Hello:
    layout = hello_layout('polaris', 'polaris')
    layout['lidar'].update(columns=columns, rings=rings)
    layout['camera'].update(width=width, height=height)
    return parse_hello(encode_hello_payload(layout))


def _header(frame_type: int, payload_size: int) -> frames.FrameHeader:
    return frames.FrameHeader(frame_type, 0, 1, payload_size, 0.0, 0.0)


@pytest.mark.parametrize('fields', FIELDS)
def test_the_pool_makes_its_buffers_after_a_whole_frame_of_the_hellos_layout(fields):
    hello = _small_hello()
    times = PointTimes.of(hello.lidar)
    pool = MessagePool(fields)
    pool.configure(hello, lidar_frame_id='p/lidar', camera_frame_id='p/cam', times=times)
    lidar_size = frames.lidar_payload_size(10, 4)
    camera_size = frames.camera_payload_size(6, 4)
    # Nothing is allocated for what the Hello or a header claims.
    assert pool.nbytes == 0
    assert pool.payload_target(_header(FrameType.LIDAR, lidar_size)) is None
    assert pool.payload_target(_header(FrameType.CAMERA, camera_size)) is None
    cloud = lidar_frame(lidar_points(10, 4), stamp_s=4.0)
    _same(_published(pool.cloud(cloud)), _cloud(cloud, 'p/lidar', fields, times))
    image = camera_frame(_pixels(6, 4), stamp_s=4.0)
    _same(_published(pool.image(image)),
          camera_frame_to_image(image, make_header(4.0, 'p/cam')))
    size = pool.nbytes
    assert size > 0
    target = pool.payload_target(_header(FrameType.LIDAR, lidar_size))
    assert (target is None) == (fields == 'xyzirt')
    assert pool.payload_target(_header(FrameType.CAMERA, camera_size)).nbytes == camera_size
    # Other sizes, other types: the reader's own buffer.
    assert pool.payload_target(_header(FrameType.LIDAR, lidar_size - 16)) is None
    assert pool.payload_target(_header(FrameType.CAMERA, camera_size + 1)) is None
    assert pool.payload_target(_header(FrameType.INS, 320)) is None
    for seed in range(5):
        pixels = _pixels(6, 4, seed)
        image = _received(pool, FrameType.CAMERA, frames.encode_camera_payload(pixels),
                          stamp_s=5.0 + seed, hello=hello)
        _same(_published(pool.image(image)), camera_frame_to_image(
            camera_frame(pixels, stamp_s=5.0 + seed), make_header(5.0 + seed, 'p/cam')))
    assert pool.nbytes == size


def test_frames_of_another_layout_leave_the_pool_as_it_is():
    pool = MessagePool()
    pool.configure(_small_hello(), lidar_frame_id='lidar', camera_frame_id='camera',
                   times=PointTimes())
    other = lidar_frame(lidar_points(3, 2), stamp_s=1.0)
    _same(_published(pool.cloud(other)),
          lidar_frame_to_cloud(other, make_header(1.0, 'lidar')))
    image = camera_frame(_pixels(2, 2), stamp_s=1.0)
    _same(_published(pool.image(image)),
          camera_frame_to_image(image, make_header(1.0, 'camera')))
    assert pool.nbytes == 0
    # Before any Hello every frame is one of another layout.
    fresh = MessagePool()
    _same(_published(fresh.cloud(other)), lidar_frame_to_cloud(other, make_header(1.0, '')))
    assert fresh.nbytes == 0


def test_a_new_hello_replaces_the_buffers_and_the_frame_ids():
    pool = MessagePool()
    pool.configure(_small_hello(), lidar_frame_id='a/lidar', camera_frame_id='a/camera',
                   times=PointTimes())
    _published(pool.cloud(lidar_frame(lidar_points(10, 4))))
    _published(pool.image(camera_frame(_pixels(6, 4))))
    first = pool.nbytes
    hello = _small_hello(columns=20, rings=4, width=8, height=4)
    pool.configure(hello, lidar_frame_id='b/lidar', camera_frame_id='b/camera',
                   times=PointTimes())
    assert pool.nbytes == 0
    assert pool.payload_target(_header(FrameType.LIDAR, frames.lidar_payload_size(10, 4))) is None
    cloud = lidar_frame(lidar_points(20, 4), stamp_s=2.0)
    _same(_published(pool.cloud(cloud)),
          lidar_frame_to_cloud(cloud, make_header(2.0, 'b/lidar')))
    _published(pool.image(camera_frame(_pixels(8, 4))))
    assert first < pool.nbytes < 2 * first
    # The same layout under another frame id is another message: rebuilt, not kept.
    pool.configure(hello, lidar_frame_id='c/lidar', camera_frame_id='b/camera',
                   times=PointTimes())
    _same(_published(pool.cloud(cloud)),
          lidar_frame_to_cloud(cloud, make_header(2.0, 'c/lidar')))


def test_pooled_buffers_are_taken_in_turn_and_free_again_once_released():
    hello = _small_hello()
    pool = MessagePool(slots=2, wait_s=0.0)
    pool.configure(hello, lidar_frame_id='p/lidar', camera_frame_id='p/cam', times=PointTimes())
    camera_size = frames.camera_payload_size(6, 4)
    expected = [camera_frame_to_image(camera_frame(_pixels(6, 4, seed), stamp_s=float(seed)),
                                      make_header(float(seed), 'p/cam')) for seed in range(4)]
    first = pool.image(camera_frame(_pixels(6, 4, 0), stamp_s=0.0))
    # The second goes into the other buffer while the first is still being published.
    target = pool.payload_target(_header(FrameType.CAMERA, camera_size))
    assert target is not None
    second = pool.image(_received(pool, FrameType.CAMERA,
                                  frames.encode_camera_payload(_pixels(6, 4, 1)),
                                  stamp_s=1.0, hello=hello))
    _same(bytes(first.data), expected[0])
    _same(bytes(second.data), expected[1])
    # Both busy: the reader gets its own buffer, and the frame a message of its own.
    assert pool.payload_target(_header(FrameType.CAMERA, camera_size)) is None
    size = pool.nbytes
    third = pool.image(camera_frame(_pixels(6, 4, 2), stamp_s=2.0))
    assert isinstance(third.data, bytes)
    _same(third.data, expected[2])
    assert pool.nbytes == size
    # Released, the first is the next in turn again.
    first.release()
    first.release()         # twice is once
    assert pool.payload_target(_header(FrameType.CAMERA, camera_size)) is not None
    fourth = pool.image(camera_frame(_pixels(6, 4, 3), stamp_s=3.0))
    assert not isinstance(fourth.data, bytes)
    _same(bytes(fourth.data), expected[3])
    _same(bytes(second.data), expected[1])      # untouched while it is out


def test_the_reader_waits_for_a_buffer_that_another_thread_releases():
    pool = MessagePool(slots=1, wait_s=30.0)
    pool.configure(_small_hello(), lidar_frame_id='p/lidar', camera_frame_id='p/cam',
                   times=PointTimes())
    cloud = lidar_frame(lidar_points(10, 4), stamp_s=1.0)
    out = pool.cloud(cloud)
    waiting = threading.Event()
    original = threading.Condition.wait_for

    def wait_for(condition, predicate, timeout=None):
        waiting.set()
        return original(condition, predicate, timeout)
    releaser = threading.Thread(target=lambda: (waiting.wait(30.0), out.release()))
    releaser.start()
    try:
        with mock.patch.object(threading.Condition, 'wait_for', wait_for):
            later = pool.cloud(lidar_frame(lidar_points(10, 4, seed=3), stamp_s=2.0))
    finally:
        releaser.join()
    assert not isinstance(later.data, bytes)
    _same(_published(later), lidar_frame_to_cloud(
        lidar_frame(lidar_points(10, 4, seed=3), stamp_s=2.0), make_header(2.0, 'p/lidar')))


def test_a_pool_needs_a_slot():
    with pytest.raises(ValueError, match='at least'):
        MessagePool(slots=0)
