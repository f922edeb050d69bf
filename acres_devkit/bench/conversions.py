# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure each conversion of the sensor bridge: milliseconds per message.

Frames are the Polaris's (a 1800 x 32 cloud of 0.9 MB, a 896 x 512 image of 1.4 MB, a 40-value
INS epoch), built with the protocol encoders and decoded as the reader decodes them. Each
conversion runs ``--repeat`` times; the figures are the median and the 90th percentile.
``--publish`` adds convert + ``publish()`` with one subscriber (in another context of this
process); ``--node`` the node's whole handling of each frame type (convert and publish every
message of the frame, no subscriber) and what one simulated second costs; ``--slow`` the ways
the lessons warn about (``array('B', memoryview)``, a per-point ``struct.pack_into`` loop);
``--compressed`` the encoders of camera/image_raw/compressed on an image the emulator rendered
(Pillow, and simplejpeg when it is installed), with the encoded size against raw.
"in place" rows use frames received into the serialised message's own buffer, as the bridge's
reader receives them (``MessagePool.payload_target``); "copied in" rows frames from elsewhere.

    .venv/bin/python tools/bench_conversions.py
    .venv/bin/python tools/bench_conversions.py --repeat 500 --publish --node --slow
    .venv/bin/python tools/bench_conversions.py --repeat 50 --compressed
"""

import argparse
import array
import importlib.util
import io
import os
import statistics
import struct
import time
from typing import Any, Callable

import numpy as np
from PIL import Image as PilImage
from std_msgs.msg import Header

from acres_bridge.conversions.camera import camera_frame_to_image
from acres_bridge.conversions.camera import camera_info_cdr
from acres_bridge.conversions.camera import camera_info_from_hello
from acres_bridge.conversions.camera import ImageBuffer
from acres_bridge.conversions.clock import clock_frame_to_cdr
from acres_bridge.conversions.clock import clock_frame_to_clock
from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.compressed import encode_bgr8
from acres_bridge.conversions.diagnostics import stream_stats_to_status
from acres_bridge.conversions.ins import ins_frame_to_cdr
from acres_bridge.conversions.ins import ins_frame_to_ground_truth_odometry
from acres_bridge.conversions.ins import ins_frame_to_imu
from acres_bridge.conversions.ins import ins_frame_to_navsatfix
from acres_bridge.conversions.ins import ins_frame_to_odometry
from acres_bridge.conversions.lidar import CloudBuffer
from acres_bridge.conversions.lidar import lidar_frame_to_cloud
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.conversions.tf import hello_to_static_transforms
from acres_bridge.conversions.tf import odometry_to_transform
from acres_bridge.emulator.sensors.ins import ins_values
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.server import Emulator
from acres_bridge.protocol import frames
from acres_bridge.protocol import hello as hello_schema
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.stream_client import SensorStreamClient


def decode(frame_type: int, payload: bytes, hello: hello_schema.Hello | None,
           stamp_s: float = 12.5) -> frames.Frame:
    header = frames.FrameHeader(frame_type, 0, 7, len(payload), stamp_s, 0.0)
    return frames.decode_payload(header, memoryview(bytearray(payload)), hello)


def received_in(buffer: Any, frame: frames.Frame, hello: hello_schema.Hello) -> frames.Frame:
    """Return a frame as the reader hands it out after receiving it into a message buffer."""
    header = frame.header
    view = buffer.payload_view(header.payload_size)
    kind = frame.header.frame_type
    view[:] = (frames.encode_lidar_payload(np.frombuffer(frame.points, np.float32).reshape(
        frame.columns, frame.rings, 4)) if kind == FrameType.LIDAR
        else frames.encode_camera_payload(np.frombuffer(frame.pixels, np.uint8).reshape(
            frame.height, frame.width, 3)))
    return frames.decode_payload(header, view, hello)


def polaris_frames() -> dict[str, Any]:
    """Return the Polaris's Hello and one decoded frame of each sensor."""
    layout = hello_layout('polaris', 'polaris')
    hello = hello_schema.parse_hello(hello_schema.encode_hello_payload(layout))
    rng = np.random.default_rng(1)
    lidar = hello.lidar
    points = rng.uniform(-50, 50, (lidar.columns, lidar.rings, 4)).astype(np.float32)
    points[rng.random((lidar.columns, lidar.rings)) < 0.25, :3] = np.nan
    camera = hello.camera
    pixels = rng.integers(0, 256, (camera.height, camera.width, 3), dtype=np.uint8)
    pose = Pose.from_xyz_yaw(10.0, -20.0, 1.0, 0.3)
    ins = ins_values(layout, pose, rng=rng)
    return {
        'hello': hello,
        'clock': decode(FrameType.CLOCK, frames.encode_clock_payload(12.5), hello),
        'ins': decode(FrameType.INS, frames.encode_ins_payload(ins), hello),
        'lidar': decode(FrameType.LIDAR, frames.encode_lidar_payload(points), hello),
        'camera': decode(FrameType.CAMERA, frames.encode_camera_payload(pixels), hello),
    }


def measure(function: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Return the median and 90th percentile of a call, in ms."""
    function()
    times = []
    for _ in range(repeat):
        started = time.perf_counter_ns()
        function()
        times.append((time.perf_counter_ns() - started) / 1e6)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.9 * len(times)))]


def conversions(sample: dict[str, Any]) -> list[tuple[str, int, Callable[[], Any]]]:
    """Return (name, payload bytes, call) of every conversion."""
    hello, ins, lidar, camera = sample['hello'], sample['ins'], sample['lidar'], sample['camera']
    stamp_s = ins.header.stamp_s
    sweep_s = 1.0 / hello.lidar.hz
    times = PointTimes.of(hello.lidar)
    xyzi = CloudBuffer(lidar.columns, lidar.rings, frame_id='polaris/lidar')
    xyzirt = CloudBuffer(lidar.columns, lidar.rings, frame_id='polaris/lidar', fields='xyzirt',
                         times=times)
    start = PointTimes.of(hello.lidar, origin='start')
    autoware = CloudBuffer(lidar.columns, lidar.rings, frame_id='polaris/lidar',
                           fields='autoware', times=start)
    autoware_dense = CloudBuffer(lidar.columns, lidar.rings, frame_id='polaris/lidar',
                                 fields='autoware_dense', times=start)
    image = ImageBuffer(camera.width, camera.height, camera.row_step,
                        frame_id='polaris/camera_optical_frame')
    lidar_in_place = received_in(xyzi, lidar, hello)
    camera_in_place = received_in(image, camera, hello)
    serialised_image = bytearray(image.serialise(camera))
    stats = SensorStreamClient('127.0.0.1', 1, name='bench', on_frame=print).stats
    for figures in stats['by_type'].values():
        figures.update(published=0, dropped=0)

    def odometry() -> Any:
        return ins_frame_to_odometry(ins, make_header(stamp_s, 'world'),
                                     child_frame_id='base_footprint')

    def ins_messages() -> Any:
        body = make_header(stamp_s, 'polaris/base_footprint')
        world = make_header(stamp_s, 'world')
        return (ins_frame_to_navsatfix(ins, body), ins_frame_to_imu(ins, body),
                ins_frame_to_odometry(ins, world, child_frame_id='polaris/base_footprint'),
                ins_frame_to_ground_truth_odometry(ins, world,
                                                   child_frame_id='polaris/base_footprint'))
    return [
        ('clock: Clock', 8, lambda: clock_frame_to_clock(sample['clock'])),
        ('clock: Clock as CDR bytes', 8, lambda: clock_frame_to_cdr(sample['clock'])),
        ('ins: all 4 messages', 320, ins_messages),
        ('ins: all 4 messages as CDR bytes', 320, lambda: ins_frame_to_cdr(
            ins, body_frame_id='polaris/base_footprint', world_frame_id='world')),
        ('ins: NavSatFix', 320, lambda: ins_frame_to_navsatfix(
            ins, make_header(stamp_s, 'base_footprint'))),
        ('ins: Imu', 320, lambda: ins_frame_to_imu(ins, make_header(stamp_s, 'base_footprint'))),
        ('ins: Odometry', 320, odometry),
        ('ins: ground truth Odometry', 320, lambda: ins_frame_to_ground_truth_odometry(
            ins, make_header(stamp_s, 'world'), child_frame_id='base_footprint')),
        ('ins: odometry to TF', 320, lambda: odometry_to_transform(odometry())),
        ('lidar: PointCloud2 xyzi', len(lidar.points), lambda: lidar_frame_to_cloud(
            lidar, make_header(stamp_s, 'lidar'))),
        ('lidar: PointCloud2 xyzirt', len(lidar.points), lambda: lidar_frame_to_cloud(
            lidar, make_header(stamp_s, 'lidar'), fields='xyzirt', sweep_s=sweep_s)),
        ('lidar: xyzi as CDR bytes, received in place', len(lidar.points),
         lambda: xyzi.serialise(lidar_in_place)),
        ('lidar: xyzi as CDR bytes, copied in', len(lidar.points), lambda: xyzi.serialise(lidar)),
        ('lidar: xyzirt as CDR bytes', len(lidar.points), lambda: xyzirt.serialise(lidar)),
        ('lidar: autoware as CDR bytes', len(lidar.points), lambda: autoware.serialise(lidar)),
        ('lidar: autoware_dense as CDR bytes', len(lidar.points),
         lambda: autoware_dense.serialise(lidar)),
        ('camera: Image', len(camera.pixels), lambda: camera_frame_to_image(
            camera, make_header(stamp_s, 'camera_optical_frame'))),
        ('camera: Image as CDR bytes, received in place', len(camera.pixels),
         lambda: image.serialise(camera_in_place)),
        ('camera: Image as CDR bytes, copied in', len(camera.pixels),
         lambda: image.serialise(camera)),
        ('camera: bytes() of a serialised image (what remains)', len(serialised_image),
         lambda: bytes(serialised_image)),
        ('camera: CameraInfo', 0, lambda: camera_info_from_hello(
            hello, make_header(stamp_s, 'camera_optical_frame'))),
        ('camera: CameraInfo as CDR bytes', 0, lambda: camera_info_cdr(
            hello, frame_id='camera_optical_frame', stamp_s=stamp_s)),
        ('hello: static transforms', 0, lambda: hello_to_static_transforms(
            hello, make_header(0.0, '').stamp, frame_prefix='polaris')),
        ('diagnostics: status', 0, lambda: stream_stats_to_status(stats, name='bench')),
    ]


def slow_ways(sample: dict[str, Any]) -> list[tuple[str, int, Callable[[], Any]]]:
    """Return the conversions the lessons warn about, for comparison."""
    lidar, camera = sample['lidar'], sample['camera']
    count = lidar.columns * lidar.rings
    source = np.frombuffer(lidar.points, '<f4').reshape(count, 4)

    def per_point_xyzirt() -> bytearray:
        out = bytearray(count * 24)
        pack = struct.Struct('<4fHxxf').pack_into
        rings = lidar.rings
        for index in range(count):
            x, y, z, intensity = source[index]
            pack(out, index * 24, x, y, z, intensity, index % rings, 0.0)
        return out
    return [
        ("image: array('B', memoryview)", len(camera.pixels),
         lambda: array.array('B', camera.pixels)),
        ('lidar: xyzirt with a per-point struct.pack_into loop', len(lidar.points),
         per_point_xyzirt),
    ]


def publishing(sample: dict[str, Any], repeat: int) -> list[tuple[str, float, float]]:
    """Measure convert + publish of clouds and images with one matched subscriber."""
    import rclpy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from sensor_msgs.msg import Image
    from sensor_msgs.msg import PointCloud2

    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    results = []
    publisher_context, subscriber_context = rclpy.Context(), rclpy.Context()
    rclpy.init(context=publisher_context)
    rclpy.init(context=subscriber_context)
    try:
        node = rclpy.create_node('bench_publisher', context=publisher_context)
        listener = rclpy.create_node('bench_subscriber', context=subscriber_context)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        hello, lidar, camera = sample['hello'], sample['lidar'], sample['camera']
        cloud = CloudBuffer(lidar.columns, lidar.rings, frame_id='lidar')
        image = ImageBuffer(camera.width, camera.height, camera.row_step, frame_id='camera')
        lidar_in_place = received_in(cloud, lidar, hello)
        camera_in_place = received_in(image, camera, hello)
        for name, kind, topic, convert in (
                ('lidar: convert + publish xyzi', PointCloud2, 'points',
                 lambda: lidar_frame_to_cloud(lidar, Header(frame_id='lidar'))),
                ('lidar: publish xyzi CDR, received in place', PointCloud2, 'points_cdr',
                 lambda: cloud.serialise(lidar_in_place)),
                ('camera: convert + publish Image', Image, 'image',
                 lambda: camera_frame_to_image(camera, Header(frame_id='camera'))),
                ('camera: publish Image CDR, received in place', Image, 'image_cdr',
                 lambda: image.serialise(camera_in_place))):
            publisher = node.create_publisher(kind, topic, qos)
            listener.create_subscription(kind, topic, lambda message: None, qos, raw=True)
            deadline = time.monotonic() + 10.0
            while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            median, p90 = measure(lambda: publisher.publish(convert()), repeat)
            results.append((name, median, p90))
    finally:
        publisher_context.try_shutdown()
        subscriber_context.try_shutdown()
    return results


def node_handlers(sample: dict[str, Any], repeat: int) -> list[tuple[str, float, float]]:
    """Measure the bridge's whole handling of each frame type: convert and publish, no reader."""
    import rclpy
    from rclpy.parameter import Parameter

    from acres_bridge.sensors.sensor_node import SensorBridgeNode

    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = rclpy.Context()
    rclpy.init(context=context)
    results = []
    try:
        for publish_tf in ('ins', 'none'):
            node = SensorBridgeNode(context=context, autostart=False, parameter_overrides=[
                Parameter('publish_tf', value=publish_tf),
                Parameter('frame_prefix', value='polaris')])
            handle = node.bridge._handle_frame
            handle(frames.HelloFrame(frames.FrameHeader(1, 0, 0, 0, 0.0, 0.0), sample['hello']))
            kinds = ('clock', 'ins', 'lidar', 'camera') if publish_tf == 'ins' else ('ins',)
            for kind in kinds:
                median, p90 = measure(lambda: handle(sample[kind]), repeat)
                name = kind if publish_tf == 'ins' else f'{kind} (publish_tf none)'
                results.append((name, median, p90))
            if publish_tf == 'ins':
                # What the reader does: the payload straight into the pooled message.
                pool = node.bridge._pool
                for kind in ('lidar', 'camera'):
                    in_place = received_in(_PoolTarget(pool), sample[kind], sample['hello'])
                    median, p90 = measure(lambda: handle(in_place), repeat)
                    results.append((f'{kind} received in place', median, p90))
            node.destroy_node()
    finally:
        context.try_shutdown()
    return results


class _PoolTarget:
    """A pool's ``payload_target`` as ``payload_view(size)`` (the first frame made the buffer)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def payload_view(self, size: int) -> memoryview:
        lidar = size == frames.lidar_payload_size(1800, 32)
        kind = FrameType.LIDAR if lidar else FrameType.CAMERA
        return self._pool.payload_target(frames.FrameHeader(kind, 0, 0, size, 0.0, 0.0))


def rendered_image() -> np.ndarray:
    """Return the first image of the emulator's Polaris (bgr8, height x width x 3)."""
    images: list[np.ndarray] = []
    emulator = Emulator(('polaris',), control_port=None).start()
    client = None
    try:
        def on_frame(frame: frames.Frame) -> None:
            if isinstance(frame, frames.CameraFrame) and not images:
                images.append(np.frombuffer(frame.pixels, dtype=np.uint8).reshape(
                    frame.height, frame.width, 3).copy())
        client = SensorStreamClient('127.0.0.1', emulator.sensor_ports[0], name='bench',
                                    on_frame=on_frame)
        client.start()
        deadline = time.monotonic() + 30.0
        while not images and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if client is not None:
            client.stop()
        emulator.stop()
    if not images:
        raise RuntimeError('the emulator sent no image in 30 s')
    return images[0]


def encoders(pixels: np.ndarray) -> list[tuple[str, Callable[[], bytes]]]:
    """Return (name, encode) of the compressed image's candidate encoders."""
    found = [(f'Pillow JPEG quality {quality}', lambda quality=quality: encode_bgr8(
        pixels, image_format='jpeg', jpeg_quality=quality)) for quality in (95, 80)]
    found += [(f'PNG level {level} (ours: Sub filter, zlib)', lambda level=level: encode_bgr8(
        pixels, image_format='png', png_level=level)) for level in (1, 3)]
    picture = PilImage.frombuffer('RGB', (pixels.shape[1], pixels.shape[0]),
                                  np.ascontiguousarray(pixels), 'raw', 'BGR', 0, 1)

    def pillow_png(level: int) -> bytes:
        output = io.BytesIO()
        picture.save(output, 'PNG', compress_level=level)
        return output.getvalue()
    found += [(f'Pillow PNG level {level}', lambda level=level: pillow_png(level))
              for level in (1, 3)]
    if importlib.util.find_spec('simplejpeg') is not None:
        import simplejpeg
        found += [(f'simplejpeg JPEG quality {quality}',
                   lambda quality=quality: simplejpeg.encode_jpeg(
                       pixels, quality=quality, colorspace='BGR', colorsubsampling='420'))
                  for quality in (95, 80)]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[1])
    parser.add_argument('--repeat', type=int, default=200, help='calls of each conversion')
    parser.add_argument('--publish', action='store_true',
                        help='also measure convert + publish with a subscriber')
    parser.add_argument('--node', action='store_true',
                        help="also measure the node's handling of each frame (convert + "
                             'publish of every message of the frame, no subscriber)')
    parser.add_argument('--slow', action='store_true',
                        help='also measure the slow ways, for comparison (a few calls)')
    parser.add_argument('--compressed', action='store_true',
                        help='only measure the compressed image encoders on a rendered image')
    args = parser.parse_args()
    if args.compressed:
        pixels = rendered_image()
        print(f'{"encoder":54s} {"bytes":>9s} {"median ms":>10s} {"p90 ms":>8s}  of raw')
        for name, encode in encoders(pixels):
            size = len(encode())
            median, p90 = measure(encode, args.repeat)
            print(f'{name:54s} {size:9d} {median:10.4f} {p90:8.4f}  '
                  f'{size / pixels.nbytes:6.1%}')
        return
    sample = polaris_frames()
    print(f'{"conversion":54s} {"bytes":>9s} {"median ms":>10s} {"p90 ms":>8s}')
    for name, size, function in conversions(sample):
        median, p90 = measure(function, args.repeat)
        print(f'{name:54s} {size:9d} {median:10.4f} {p90:8.4f}')
    if args.publish:
        for name, median, p90 in publishing(sample, args.repeat):
            print(f'{name:54s} {"":9s} {median:10.4f} {p90:8.4f}')
    if args.node:
        per_second = {'clock': 120, 'ins': 100, 'lidar received in place': 10,
                      'camera received in place': 10}
        total_ms = 0.0
        for kind, median, p90 in node_handlers(sample, args.repeat):
            total_ms += median * per_second.get(kind, 0)
            print(f'{"node: " + kind + " frame, all its messages":54s} {"":9s} {median:10.4f} '
                  f'{p90:8.4f}')
        print(f'node: one simulated second of the Polaris (120 clock, 100 INS, 10 LiDAR, 10 '
              f'camera frames received in place) costs {total_ms:.1f} ms of one core: at most '
              f'{1000.0 / total_ms:.0f}x real time')
    if args.slow:
        for name, size, function in slow_ways(sample):
            median, p90 = measure(function, 3)
            print(f'{name:54s} {size:9d} {median:10.4f} {p90:8.4f}')


if __name__ == '__main__':
    main()
