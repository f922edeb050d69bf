# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The demo viewer: its pictures, its table, and the whole demo run headless for a few seconds.

The pure parts (transform tree, cloud and image reading, projection, drawing, the table) are
checked against hand-computed values; the last test runs ``tools/demo.py`` (the emulator, the
bridge and the viewer as child processes) and checks what the viewer saw and drew.
"""

import array
import io
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import threading

from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
import numpy as np
from PIL import Image as PilImage
import psutil
import pytest
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image
from sensor_msgs.msg import Imu
from sensor_msgs.msg import PointCloud2
from sensor_msgs.msg import PointField
from std_msgs.msg import Header
from support.paths import ROOT
from tf2_msgs.msg import TFMessage

from acres_bridge.conversions.cdr import sequence_length
from acres_bridge.conversions.tf import hello_to_static_transforms
from acres_bridge.demo.pictures import apply_transform
from acres_bridge.demo.pictures import birds_eye_view
from acres_bridge.demo.pictures import camera_lidar_overlay
from acres_bridge.demo.pictures import cloud_xyz
from acres_bridge.demo.pictures import image_rgb
from acres_bridge.demo.pictures import project_points
from acres_bridge.demo.pictures import StaticTransforms
from acres_bridge.demo.topic_table import ClockHistory
from acres_bridge.demo.topic_table import Display
from acres_bridge.demo.topic_table import format_table
from acres_bridge.demo.topic_table import stamp_seconds
from acres_bridge.demo.topic_table import TopicStats
from acres_bridge.geometry import rpy_deg_to_matrix
from acres_bridge.protocol.hello import parse_hello
from acres_devkit.environment import claim_domain_id
from acres_devkit.environment import local_discovery

HELLO = parse_hello((ROOT / 'test' / 'data' / 'hello_polaris.json').read_bytes())
K = [600.0, 0.0, 440.0, 0.0, 590.0, 270.0, 0.0, 0.0, 1.0]


def _static_tree() -> StaticTransforms:
    tree = StaticTransforms()
    tree.add(hello_to_static_transforms(HELLO, Time(), frame_prefix='polaris'))
    return tree


def test_a_point_on_the_camera_axis_lands_on_the_optical_axis_and_the_principal_point() -> None:
    tree = _static_tree()
    camera = HELLO.camera
    mount = rpy_deg_to_matrix(camera.rpy_deg)
    forward = mount[:, 0]           # the camera's FLU x in base_footprint
    left = mount[:, 1]
    ahead = np.array(camera.position_flu_m) + 20.0 * forward
    to_optical = tree.lookup('polaris/camera_optical_frame', 'polaris/base_footprint')
    points = apply_transform(to_optical, np.array([ahead, ahead + 2.0 * left]))
    np.testing.assert_allclose(points[0], [0.0, 0.0, 20.0], atol=1e-9)
    assert points[1][0] < -1.9                             # left of the axis is -x (x right)
    k = [camera.fx, 0.0, camera.cx, 0.0, camera.fy, camera.cy, 0.0, 0.0, 1.0]
    projection = project_points(points, k, camera.d, camera.width, camera.height)
    np.testing.assert_allclose(projection.uv[0], [camera.cx, camera.cy], atol=1e-6)
    assert projection.uv[1][0] < camera.cx


def test_lookup_composes_through_the_common_root_and_refuses_unlinked_frames() -> None:
    tree = _static_tree()
    assert tree.root('polaris/camera_optical_frame') == 'polaris/base_footprint'
    lidar_origin = np.array(HELLO.lidar.position_flu_m)
    via_base = apply_transform(
        tree.lookup('polaris/camera_optical_frame', 'polaris/base_footprint'),
        lidar_origin[None, :])
    direct = apply_transform(tree.lookup('polaris/camera_optical_frame', 'polaris/lidar'),
                             np.zeros((1, 3)))
    np.testing.assert_allclose(direct, via_base, atol=1e-9)
    assert tree.lookup('polaris/lidar', 'maxxum/lidar') is None


def test_pinhole_projection_without_distortion_is_exact_and_drops_points_behind() -> None:
    points = np.array([[0.0, 0.0, 10.0], [1.0, -0.5, 5.0], [0.0, 0.0, -5.0], [50.0, 0.0, 1.0]])
    projection = project_points(points, K, [0.0] * 5, 896, 512)
    np.testing.assert_array_equal(projection.index, [0, 1])
    np.testing.assert_allclose(projection.uv, [[440.0, 270.0], [440.0 + 120.0, 270.0 - 59.0]])
    assert projection.in_front == 3


def test_plumb_bob_projection_follows_the_opencv_model() -> None:
    d = [-0.3, 0.1, 0.001, -0.002, 0.0]
    x, y = 0.3, -0.2
    r2 = x * x + y * y
    radial = 1 + d[0] * r2 + d[1] * r2 * r2
    xd = x * radial + 2 * d[2] * x * y + d[3] * (r2 + 2 * x * x)
    yd = y * radial + d[2] * (r2 + 2 * y * y) + 2 * d[3] * x * y
    projection = project_points(np.array([[x * 4.0, y * 4.0, 4.0]]), K, d, 896, 512)
    np.testing.assert_allclose(projection.uv[0], [600.0 * xd + 440.0, 590.0 * yd + 270.0])


def test_points_beyond_the_fold_of_a_strong_lens_are_left_out() -> None:
    # With k1 = -0.55 the radial polynomial turns back past r ~ 0.78: such points would land
    # near the centre of the image. They are not drawn.
    d = [-0.55, 0.0, 0.0, 0.0, 0.0]
    projection = project_points(np.array([[3.0, 0.0, 1.0], [0.3, 0.0, 1.0]]), K, d, 896, 512)
    np.testing.assert_array_equal(projection.index, [1])


def _cloud(points: np.ndarray, *, padding: int = 0) -> PointCloud2:
    """Return an organised xyzi cloud with `padding` extra bytes per point."""
    columns, rings = points.shape[:2]
    step = 16 + padding
    raw = np.zeros((columns, rings, step), np.uint8)
    raw[:, :, :16] = points.astype('<f4').view(np.uint8).reshape(columns, rings, 16)
    data = array.array('B')
    data.frombytes(raw.tobytes())
    fields = [PointField(name=name, offset=4 * index, datatype=PointField.FLOAT32, count=1)
              for index, name in enumerate(('x', 'y', 'z', 'intensity'))]
    cloud = PointCloud2(height=columns, width=rings, fields=fields, is_bigendian=False,
                        point_step=step, row_step=step * rings, is_dense=False)
    cloud.data = data
    return cloud


def test_cloud_xyz_reads_by_field_offsets_and_drops_beams_without_return() -> None:
    points = np.arange(3 * 2 * 4, dtype=np.float32).reshape(3, 2, 4)
    points[1, 0, :3] = np.nan
    xyz = cloud_xyz(_cloud(points, padding=8))
    expected = points.reshape(-1, 4)[[0, 1, 3, 4, 5], :3]
    np.testing.assert_array_equal(xyz, expected)


def test_image_rgb_swaps_bgr_and_skips_row_padding() -> None:
    pixels = np.zeros((2, 3, 3), np.uint8)
    pixels[0, 0] = (255, 0, 0)                          # blue in bgr8
    padded = np.zeros((2, 12), np.uint8)
    padded[:, :9] = pixels.reshape(2, 9)
    image = Image(height=2, width=3, encoding='bgr8', step=12)
    image.data = array.array('B', padded.tobytes())
    rgb = image_rgb(image)
    assert rgb.shape == (2, 3, 3)
    assert tuple(rgb[0, 0]) == (0, 0, 255)


def test_overlay_draws_only_what_lands_inside_and_leaves_the_input_image_alone() -> None:
    rgb = np.full((512, 896, 3), 200, np.uint8)
    points = np.array([[0.0, 0.0, 10.0], [0.0, 0.0, -10.0], [100.0, 0.0, 1.0]])
    picture = camera_lidar_overlay(rgb, points, K, [0.0] * 5)
    assert (picture.points, picture.total) == (1, 3)
    assert (rgb == 200).all()
    changed = np.argwhere((picture.rgb != (picture.rgb[0, 0])).any(axis=2))
    assert changed.min(axis=0).tolist() == [269, 439]
    assert changed.max(axis=0).tolist() == [271, 441]


def test_birds_eye_view_puts_forward_up_and_left_left() -> None:
    picture = birds_eye_view(np.array([[20.0, 0.0, 1.0], [0.0, 20.0, 1.0], [90.0, 0.0, 0.0]]),
                             extent_m=40.0, resolution_m=0.5, ring_step_m=1000.0)
    assert (picture.points, picture.total) == (2, 3)
    assert picture.rgb.shape == (160, 160, 3)
    background = tuple(picture.rgb[0, 0])
    assert tuple(picture.rgb[80 - 40, 80]) != background    # 20 m ahead: above the centre
    assert tuple(picture.rgb[80, 80 - 40]) != background    # 20 m left: left of the centre


def test_topic_stats_rates_and_ages_against_the_clock_history() -> None:
    clock = ClockHistory()
    stats = TopicStats('/polaris/lidar/points', 'sensor_msgs/PointCloud2')
    for scan in range(20):                                  # 10 Hz, arriving 25 ms late
        stamp_s = scan / 10.0
        stats.record(100.0 + stamp_s + 0.025, stamp_s, 1000, 100.0 + stamp_s + 0.024)
    for step in range(200):                                 # 120 Hz clock, taken late
        clock.add(100.0 + step / 120.0, step / 120.0)
    # Scans after the latest /clock taken (1.658 s) have no age yet: 17 of 20 do.
    row = stats.row(100.0 + 1.925, clock)
    assert row['msgs'] == 20 and row['mbytes'] == pytest.approx(0.02)
    assert row['rate_hz'] == pytest.approx(10.0)
    assert row['sim_rate_hz'] == pytest.approx(10.0)
    # The latest clock at receipt is the step at or before stamp + 25 ms: 3 steps = 25.0 ms.
    assert row['age_p50_ms'] == pytest.approx(25.0, abs=0.01)
    assert row['age_max_ms'] == pytest.approx(25.0, abs=0.01)
    assert row['dds_p50_ms'] == pytest.approx(1.0, abs=1e-6)
    assert ClockHistory().at(1.0) is None and clock.at(99.0) is None
    assert clock.at(100.0 + 1.7) is None


def test_stamps_are_read_from_serialised_messages() -> None:
    stamp = Time(sec=12, nanosec=250_000_000)
    clock = serialize_message(Clock(clock=stamp))
    imu = serialize_message(Imu(header=Header(stamp=stamp, frame_id='polaris/base_footprint')))
    transforms = serialize_message(TFMessage(transforms=[
        TransformStamped(header=Header(stamp=stamp, frame_id='world'))]))
    assert stamp_seconds(clock) == stamp_seconds(imu) == 12.25
    assert sequence_length(transforms) == 1 and stamp_seconds(transforms, offset=4) == 12.25
    assert sequence_length(serialize_message(TFMessage())) == 0
    assert stamp_seconds(clock[:8]) is None


def test_display_redraws_in_place_on_a_terminal_and_appends_otherwise() -> None:
    stream = io.StringIO()
    display = Display(stream, tty=True)
    display.show(['a', 'b'])
    display.show(['c', 'd'])
    assert stream.getvalue() == 'a\nb\n\x1b[2F\x1b[Jc\nd\n'
    stream = io.StringIO()
    display = Display(stream, tty=False)
    display.show(['a'])
    display.show(['b'])
    assert stream.getvalue() == 'a\n\nb\n\n'


def test_format_table_shows_dashes_for_what_was_not_measured() -> None:
    stats = TopicStats('/clock', 'rosgraph_msgs/Clock', aged=False)
    lines = format_table([stats.row(0.0, ClockHistory())], 'header')
    assert lines[0] == 'header' and lines[1].split()[0] == 'topic'
    assert lines[2].split() == ['/clock', '0', '-', '-', '-', '-', '-', '-', '0.0']


def _cloud_rate(line: str) -> float:
    """Return the wall rate of a table row of the clouds (0.0 for another line or '-')."""
    row = line.split()
    if len(row) < 3 or row[0] != '/polaris/lidar/points' or row[2] == '-':
        return 0.0
    return float(row[2])


def test_the_demo_runs_headless_stops_on_ctrl_c_and_draws_non_trivial_pictures(
        tmp_path: Path) -> None:
    out = tmp_path / 'demo'
    env = local_discovery(dict(os.environ))
    domain_id = claim_domain_id()
    demo = subprocess.Popen(
        [sys.executable, str(ROOT / 'tools' / 'demo.py'), '--out', str(out),
         '--domain-id', str(domain_id), '--picture-period', '1', '--print-period', '1'],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    drawn = threading.Event()

    def read() -> None:
        for line in demo.stdout:
            lines.append(line)
            text = ''.join(lines)
            # Pictures, and a table with a cloud rate (two clouds or more): a loaded machine
            # drew the first pictures when one cloud had come.
            if (str(out / 'camera_lidar.png') in text and str(out / 'birdseye.png') in text
                    and any(_cloud_rate(row) > 0.0 for row in text.splitlines())):
                drawn.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert drawn.wait(90), ''.join(lines)[-3000:]
        children = psutil.Process(demo.pid).children(recursive=True)
        assert len(children) >= 3                # the emulator, the bridge, the viewer
        demo.send_signal(signal.SIGINT)          # what Ctrl-C on the terminal sends
        assert demo.wait(60) == 0, demo.stderr.read()[-3000:]
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    reader.join(10)
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f'left running: {alive}'
    stdout = ''.join(lines)

    # The table was printed (not a TTY: whole tables, one after another) with real rates.
    rows = [line.split() for line in stdout.splitlines()
            if line.startswith('/polaris/lidar/points')]
    assert rows, stdout[-3000:]
    assert int(rows[-1][1]) >= 1
    assert any(_cloud_rate(line) > 0.0 for line in stdout.splitlines()), stdout[-3000:]
    assert f'demo: pictures {out / "camera_lidar.png"}' in stdout

    summary = json.loads((out / 'viewer_summary.json').read_text())
    assert summary['topics']['/clock']['msgs'] > 0
    # The frame names depend on the bridge (prefixed by agent, or not for a one-agent session).
    assert any(frame.endswith('camera_optical_frame') for frame in summary['tf_static_frames'])
    overlay = summary['pictures']['polaris']['overlay']
    birds_eye = summary['pictures']['polaris']['birds_eye']
    # A forward camera sees a good part of a 360-degree scan: much of it must land inside.
    assert overlay['points'] > 0.1 * overlay['total'] > 100
    assert birds_eye['points'] > 0.5 * birds_eye['total'] > 100

    with PilImage.open(out / 'camera_lidar.png') as picture:
        assert picture.size == (overlay['width'], overlay['height'])
        pixels = np.asarray(picture.convert('RGB'))
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
    with PilImage.open(out / 'birdseye.png') as picture:
        pixels = np.asarray(picture.convert('RGB'))
    # Returns are coloured; the background, the range rings and the vehicle are grey.
    coloured = (pixels.max(axis=2).astype(int) - pixels.min(axis=2)) > 40
    assert coloured.mean() > 0.005
