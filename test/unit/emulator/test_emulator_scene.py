# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The emulator's scene and sensor models: layouts, terrain, LiDAR, camera, INS, PNG."""

import copy
import io
import json
import math

import numpy as np
from PIL import Image
import pyproj
import pytest
from support.paths import DATA

from acres_bridge.emulator import geodesy
from acres_bridge.emulator.sensors.camera import camera_image
from acres_bridge.emulator.sensors.camera import camera_table
from acres_bridge.emulator.sensors.camera import project_points
from acres_bridge.emulator.sensors.ins import ins_values
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.layouts import shifted_layout
from acres_bridge.emulator.sensors.layouts import VEHICLES
from acres_bridge.emulator.sensors.lidar import column_offsets_s
from acres_bridge.emulator.sensors.lidar import ColumnPoses
from acres_bridge.emulator.sensors.lidar import lidar_scan
from acres_bridge.emulator.sensors.poses import NAMED_POSES
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.poses import pose_from_utm
from acres_bridge.emulator.sensors.poses import pose_to_utm
from acres_bridge.emulator.sensors.poses import utm_state
from acres_bridge.emulator.sensors.props import Prop
from acres_bridge.emulator.sensors.props import SPAWNABLES
from acres_bridge.emulator.sensors.props import vehicle_prop
from acres_bridge.emulator.sensors.view import render_view_png
from acres_bridge.emulator.terrain import Terrain
from acres_bridge.geometry import quaternion_yaw
from acres_bridge.geometry import rpy_deg_to_matrix
from acres_bridge.protocol.frames import InsField
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.hello import parse_hello

GARAGE = (-38.7097, -140.5131)
NORTH = math.pi / 2.0


@pytest.fixture(scope='module')
def terrain() -> Terrain:
    return Terrain()


@pytest.fixture(scope='module')
def polaris() -> dict:
    return hello_layout('polaris', 'polaris')


def _on_ground(terrain: Terrain, x: float, y: float, yaw: float = NORTH) -> Pose:
    return Pose.from_xyz_yaw(x, y, float(terrain.height_at(x, y)), yaw)


def _to_base(layout: dict, cloud: np.ndarray) -> np.ndarray:
    """Return the points of a cloud in base_footprint, (columns, rings, 3)."""
    lidar = layout['lidar']
    return (cloud[..., :3] @ rpy_deg_to_matrix(lidar['rpy_deg']).T
            + np.asarray(lidar['position_flu_m']))


def _to_world(layout: dict, pose: Pose, cloud: np.ndarray) -> np.ndarray:
    return _to_base(layout, cloud) @ pose.rotation.T + pose.position


# ---------------------------------------------------------------------------------------------
# Hello layouts

def test_polaris_layout_is_the_seed_example(polaris):
    seed = json.loads((DATA / 'hello_polaris.json').read_text())
    for key in ('schema', 'agent', 'vehicle', 'georeferenced', 'body_origin_flu_m'):
        assert polaris[key] == seed[key]
    for section in ('lidar', 'camera', 'ins'):
        assert polaris[section] == seed[section], section
    assert isinstance(polaris['mount_convention'], str) and 'Rz' in polaris['mount_convention']


@pytest.mark.parametrize('vehicle', VEHICLES)
@pytest.mark.parametrize('mode', ['game', 'core'])
def test_every_layout_parses_as_a_hello_frame(vehicle, mode):
    layout = hello_layout(vehicle, f'{vehicle}_1', mode=mode)
    hello = parse_hello(encode_hello_payload(layout))
    assert hello.agent == f'{vehicle}_1'
    assert hello.vehicle == vehicle
    assert hello.lidar.enabled and hello.ins.enabled
    assert hello.camera.enabled == (mode == 'game')
    assert hello.ins.utm_zone == 16
    assert len(layout['camera']['d']) == 5
    assert set(layout) == {'schema', 'agent', 'vehicle', 'georeferenced', 'mount_convention',
                           'body_origin_flu_m', 'lidar', 'camera', 'ins'}


def test_maxxum_has_an_8_ring_lidar_of_180_columns():
    layout = hello_layout('maxxum', 'maxxum')
    assert (layout['lidar']['columns'], layout['lidar']['rings']) == (180, 8)
    assert layout['lidar']['azimuth_order'] == 'cw'


def test_layouts_are_fresh_copies_and_bad_names_are_refused():
    first = hello_layout('polaris', 'a')
    first['lidar']['columns'] = 3
    assert hello_layout('polaris', 'a')['lidar']['columns'] == 1800
    with pytest.raises(ValueError):
        hello_layout('tractor', 'a')
    with pytest.raises(ValueError):
        hello_layout('polaris', 'a', mode='unreal')


def test_shifted_layout_moves_the_mounts_and_keeps_the_original(polaris):
    shifted = shifted_layout(polaris, {'lidar_offset_m': [0.1, 0, 0],
                                       'lidar_offset_rpy_deg': [0, 0.5, 0]})
    assert shifted['lidar']['position_flu_m'][0] == pytest.approx(2.6)
    assert shifted['lidar']['rpy_deg'][1] == pytest.approx(5.817, abs=0.02)
    assert polaris['lidar']['position_flu_m'] == [2.5, 0, 2.039]
    assert shifted['camera'] == polaris['camera']


# ---------------------------------------------------------------------------------------------
# Poses, props, places, utm

def test_spawnables_and_prop_sizes_follow_the_seed():
    assert [item['uri'] for item in SPAWNABLES] == [
        'prop:cone', 'prop:box', 'prop:bale_round', 'prop:bale_square', 'person']
    assert SPAWNABLES[0]['description'] == 'traffic cone, 0.7 m tall'
    sizes = {uri: Prop('p', uri, (0, 0, 0)).size_m for uri in
             ('prop:cone', 'prop:box', 'prop:bale_round', 'prop:bale_square', 'person')}
    assert sizes['prop:cone'][2] == 0.7
    assert sizes['prop:box'] == (1.0, 1.0, 1.0)
    assert sizes['prop:bale_round'][0] == 1.5
    assert sizes['prop:bale_square'] == (2.4, 1.2, 0.9)
    assert sizes['person'] == (0.5, 0.4, 1.75)
    with pytest.raises(ValueError):
        Prop('p', 'prop:piano', (0, 0, 0))


def test_named_poses_start_with_the_garage_of_the_seed():
    garage = NAMED_POSES[0]
    assert garage['name'] == 'spawn-icsc-garage'
    assert garage['tags'] == ['spawn', 'heading']
    assert garage['pose']['position'] == [-38.7097, -140.5131, 0.6392]
    assert garage['pose']['orientation'] == pytest.approx([0, 0, 0.7071, 0.7071], abs=1e-4)
    assert len({place['name'] for place in NAMED_POSES}) == len(NAMED_POSES)


def test_pose_normalises_and_reports_yaw():
    pose = Pose([1, 2, 3], [0, 0, 2, 2])
    assert np.linalg.norm(pose.orientation) == pytest.approx(1.0)
    assert pose.yaw_rad == pytest.approx(NORTH)
    with pytest.raises(ValueError):
        Pose([0, 0, 0], [0, 0, 0, 0])


def test_utm_state_reproduces_the_seed_entity_state():
    pose = Pose([-38.7087, -141.6659, 0.5935], [-0.0181, 0.0080, 0.7068, 0.7071])
    utm = utm_state(pose)
    assert utm['easting'] == pytest.approx(500438.0926, abs=0.002)
    assert utm['northing'] == pytest.approx(4479958.1254, abs=0.002)
    assert utm['height'] == pytest.approx(0.5935)
    assert utm['heading_deg'] == pytest.approx(0.0958, abs=0.01)


def test_pose_from_utm_inverts_pose_to_utm():
    pose = Pose.from_xyz_yaw(120.0, -35.0, 0.4, 0.7)
    position, orientation = pose_to_utm(pose)
    back = pose_from_utm(position, orientation)
    assert back.position == pytest.approx(pose.position, abs=1e-6)
    assert back.yaw_rad == pytest.approx(0.7, abs=1e-9)
    # In the utm frame the yaw counts from grid east: 0.7 rad less the grid rotation.
    assert quaternion_yaw(orientation) == pytest.approx(
        0.7 - math.radians(geodesy.GRID_ROTATION_DEG), abs=1e-9)


# ---------------------------------------------------------------------------------------------
# Terrain

def test_fields_follow_the_seed_examples(terrain):
    assert [field.number for field in terrain.fields] == list(range(1, 60))
    assert terrain.field_at(-38.71, -81.67) == 53
    assert terrain.edge_distance_m(-38.71, -81.67) == pytest.approx(28.918, abs=1e-3)
    assert terrain.height_at(-38.71, -81.67) == pytest.approx(0.14, abs=0.005)
    assert terrain.crop_at(-38.71, -81.67) == 'soybean'
    field = terrain.field(48)
    assert (field.name, field.crop) == ('F48', 'soybean')
    assert field.area_m2 == pytest.approx(5098.08)
    assert {f.crop for f in terrain.fields} == {'corn', 'soybean', 'potato', 'empty'}


def test_the_garage_is_on_hard_ground_outside_the_fields(terrain):
    assert terrain.field_at(*GARAGE) == 0
    assert terrain.surface_at(*GARAGE) == 'hard'
    assert terrain.edge_distance_m(*GARAGE) == 0.0
    assert terrain.height_at(*GARAGE) == pytest.approx(0.6392)
    assert terrain.surface_at(-38.71, -81.67) == 'soil'


def test_the_sensor_raster_agrees_with_the_exact_surfaces(terrain):
    rng = np.random.default_rng(3)
    x = rng.uniform(-700.0, 600.0, 20000).astype(np.float32)
    y = rng.uniform(-600.0, 900.0, 20000).astype(np.float32)
    exact, numbers = terrain.classify(x, y)
    fast = terrain.surface_classes(x, y)
    assert np.mean(exact == fast) > 0.995
    points = [terrain.locate(float(a), float(b)) for a, b in zip(x[:3000], y[:3000])]
    assert [p[0] for p in points] == exact[:3000].tolist()
    assert [p[1] for p in points] == numbers[:3000].tolist()
    far = terrain.surface_classes(np.array([np.inf, np.nan, -1e9], np.float32),
                                  np.array([0.0, 0.0, 1e9], np.float32))
    assert far.tolist() == [0, 0, 0]


# ---------------------------------------------------------------------------------------------
# LiDAR

def test_a_scan_has_the_layout_shape_and_consistent_misses(terrain, polaris):
    pose = _on_ground(terrain, *GARAGE)
    cloud = lidar_scan(polaris, pose, [], terrain, rng=np.random.default_rng(1))
    assert cloud.shape == (1800, 32, 4) and cloud.dtype == np.float32
    miss = ~np.isfinite(cloud[..., :3]).all(axis=-1)
    assert np.isnan(cloud[..., :3][miss]).all()
    assert (cloud[..., 3][miss] == 0).all()
    intensity = cloud[..., 3][~miss]
    assert intensity.min() >= 1 and intensity.max() <= 255
    assert (intensity == np.rint(intensity)).all()
    assert 30000 < (~miss).sum() < 57600


def test_a_box_ahead_returns_at_its_distance_in_the_front_columns(terrain, polaris):
    pose = _on_ground(terrain, *GARAGE)
    ground = float(terrain.height_at(GARAGE[0], GARAGE[1] + 10.0))
    box = Prop('box1', 'prop:box', (GARAGE[0], GARAGE[1] + 10.0, ground))
    empty = lidar_scan(polaris, pose, [], terrain, rng=np.random.default_rng(1))
    cloud = lidar_scan(polaris, pose, [box], terrain, rng=np.random.default_rng(1))
    base = _to_base(polaris, cloud)
    changed = ~np.isclose(cloud[..., 0], empty[..., 0], equal_nan=True)
    columns, _ = np.nonzero(changed)
    assert changed.sum() > 20
    # The box spans 9.5 m to 10.5 m ahead of base_footprint, 0.5 m to each side, 1 m high;
    # the LiDAR sees its front face and, from above, its top.
    x, y, z = base[..., 0][changed], base[..., 1][changed], base[..., 2][changed]
    assert x.min() > 9.49 and x.max() < 10.51 and np.abs(y).max() < 0.51
    bottom = ground - pose.position[2]      # the ground falls gently to the north
    assert z.min() > bottom - 0.01 and z.max() < bottom + 1.01
    front = np.abs(x - 9.5) < 0.01
    assert front.sum() > 10 and np.abs(z[~front] - z[~front].mean()).max() < 0.02
    # Column 0 looks straight ahead: the box spans about +-4 degrees about it.
    offsets = np.where(columns > 900, columns - 1800, columns)
    assert np.abs(offsets).max() <= 25


@pytest.mark.parametrize('order', ['cw', 'ccw'])
def test_the_columns_turn_in_the_azimuth_order(terrain, polaris, order):
    layout = copy.deepcopy(polaris)
    layout['lidar']['azimuth_order'] = order
    pose = _on_ground(terrain, *GARAGE)
    # A bale 6 m to the right of the vehicle, 8 m ahead.
    x, y = GARAGE[0] + 6.0, GARAGE[1] + 8.0
    bale = Prop('bale', 'prop:bale_round', (x, y, float(terrain.height_at(x, y))))
    empty = lidar_scan(layout, pose, [], terrain, rng=np.random.default_rng(2))
    cloud = lidar_scan(layout, pose, [bale], terrain, rng=np.random.default_rng(2))
    columns, _ = np.nonzero(~np.isclose(cloud[..., 0], empty[..., 0], equal_nan=True))
    # The right side is a clockwise turn from ahead: columns 0..450 when cw, 1350..1800 ccw.
    expected = 1800 * math.atan2(6.0, 8.0 - 2.5) / (2 * math.pi)
    middle = np.median(columns)
    assert middle == pytest.approx(expected if order == 'cw' else 1800 - expected, abs=15)


def test_returns_beyond_the_range_are_nan_with_intensity_zero(terrain, polaris):
    pose = _on_ground(terrain, *GARAGE)
    short = copy.deepcopy(polaris)
    short['lidar']['range_m'] = 12.0
    full = lidar_scan(polaris, pose, [], terrain, rng=np.random.default_rng(4))
    near = lidar_scan(short, pose, [], terrain, rng=np.random.default_rng(4))
    distance = np.linalg.norm(full[..., :3], axis=-1)
    kept = np.isfinite(near[..., 0])
    assert np.linalg.norm(near[..., :3], axis=-1)[kept].max() <= 12.01
    beyond = np.isfinite(distance) & (distance > 12.05)
    assert beyond.sum() > 1000
    assert np.isnan(near[..., 0][beyond]).all()
    assert (near[..., 3][beyond] == 0).all()


def test_ground_returns_lie_on_the_ground(terrain, polaris):
    # Field 5, in the north: no building, tree or grove within the range.
    pose = _on_ground(terrain, -10.0, 730.0, yaw=0.3)
    cloud = lidar_scan(polaris, pose, [], terrain, rng=np.random.default_rng(5))
    hit = np.isfinite(cloud[..., 0])
    world = _to_world(polaris, pose, cloud)[hit]
    ground = terrain.height_at(world[:, 0], world[:, 1])
    assert np.abs(world[:, 2] - ground).max() < 0.02
    # A level vehicle on a gentle plane: near returns are at the ground, z ~ 0 in the base
    # frame, so about -mount height below the LiDAR.
    base = _to_base(polaris, cloud)[hit]
    near = np.hypot(base[:, 0], base[:, 1]) < 15.0
    assert np.abs(base[near, 2]).max() < 0.15
    assert np.median(base[near, 2] - polaris['lidar']['position_flu_m'][2]) == pytest.approx(
        -2.039, abs=0.1)


def test_a_shifted_mount_moves_the_points_in_the_sensor_frame(terrain, polaris):
    pose = _on_ground(terrain, *GARAGE)
    box = Prop('box1', 'prop:box', (GARAGE[0], GARAGE[1] + 10.0,
                                    float(terrain.height_at(GARAGE[0], GARAGE[1] + 10.0))))
    shifted = shifted_layout(polaris, {'lidar_offset_m': [0.5, 0.0, 0.0]})
    calibrated = lidar_scan(polaris, pose, [box], terrain, rng=np.random.default_rng(1))
    moved = lidar_scan(shifted, pose, [box], terrain, rng=np.random.default_rng(1))
    # Straight ahead, the ring that hits the box's front face 0.5 m closer.
    ahead = _to_base(polaris, calibrated)[0, :, 0]
    ring = int(np.flatnonzero(np.abs(ahead - 9.5) < 0.01)[0])
    assert moved[0, ring, 0] == pytest.approx(calibrated[0, ring, 0] - 0.5 * math.cos(
        math.radians(5.317)), abs=0.05)


def test_a_scan_is_deterministic_for_a_seed(terrain, polaris):
    pose = _on_ground(terrain, -20.0, -120.0, yaw=1.2)
    props = [Prop('c', 'prop:cone', (-15.0, -112.0, 0.5))]
    first = lidar_scan(polaris, pose, props, terrain, rng=np.random.default_rng(9))
    second = lidar_scan(polaris, pose, props, terrain, rng=np.random.default_rng(9))
    other = lidar_scan(polaris, pose, props, terrain, rng=np.random.default_rng(10))
    assert np.array_equal(first, second, equal_nan=True)
    assert not np.array_equal(first, other, equal_nan=True)


def test_the_maxxum_scan_and_another_agent_are_seen(terrain):
    layout = hello_layout('maxxum', 'maxxum')
    pose = _on_ground(terrain, *GARAGE)
    other = vehicle_prop('polaris', 'polaris', _on_ground(terrain, GARAGE[0],
                                                          GARAGE[1] + 12.0))
    cloud = lidar_scan(layout, pose, [other], terrain, rng=np.random.default_rng(1))
    assert cloud.shape == (180, 8, 4)
    base = _to_base(layout, cloud)
    # The Polaris's box starts 12 m ahead less its 0.55 m of rear overhang.
    ahead = base[:3, :, 0][np.isfinite(base[:3, :, 0])]
    assert np.any(np.abs(ahead - 11.45) < 0.05)


def test_a_disabled_sensor_is_refused(terrain):
    layout = hello_layout('polaris', 'polaris', mode='core')
    with pytest.raises(ValueError):
        camera_image(layout, _on_ground(terrain, *GARAGE), [], terrain,
                     rng=np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------
# Camera

def test_an_image_has_the_layout_shape_with_sky_above_ground(terrain, polaris):
    image = camera_image(polaris, _on_ground(terrain, *GARAGE), [], terrain,
                         rng=np.random.default_rng(0))
    assert image.shape == (512, 896, 3) and image.dtype == np.uint8
    top = image[:40].reshape(-1, 3).mean(axis=0)
    assert top[0] > top[2] + 20                 # blue over red: sky
    bottom = image[-60:].reshape(-1, 3).mean(axis=0)
    assert abs(bottom[0] - bottom[2]) < 30      # grey concrete of the yard
    maxxum = hello_layout('maxxum', 'maxxum')
    assert camera_image(maxxum, _on_ground(terrain, *GARAGE), [], terrain,
                        rng=np.random.default_rng(0)).shape == (480, 640, 3)


def test_lidar_points_project_onto_the_objects_they_hit(terrain, polaris):
    pose = _on_ground(terrain, *GARAGE)
    props = [Prop('box', 'prop:box', (GARAGE[0] - 1.0, GARAGE[1] + 12.0, 0.55)),
             Prop('w1', 'person', (GARAGE[0] + 3.0, GARAGE[1] + 16.0, 0.5)),
             Prop('cone', 'prop:cone', (GARAGE[0] - 5.0, GARAGE[1] + 8.0, 0.6))]
    cloud = lidar_scan(polaris, pose, props, terrain, rng=np.random.default_rng(1))
    empty = lidar_scan(polaris, pose, [], terrain, rng=np.random.default_rng(1))
    with_props = camera_image(polaris, pose, props, terrain, rng=np.random.default_rng(1))
    without = camera_image(polaris, pose, [], terrain, rng=np.random.default_rng(1))
    uv, inside = project_points(polaris, cloud[..., :3])
    on_props = ~np.isclose(cloud[..., 0], empty[..., 0], equal_nan=True) & inside
    assert on_props.sum() > 50
    pixels = np.rint(uv[on_props]).astype(int)
    difference = np.abs(with_props[pixels[:, 1], pixels[:, 0]].astype(int)
                        - without[pixels[:, 1], pixels[:, 0]].astype(int)).sum(axis=1)
    # A point on a prop lands on the prop's pixels (the image has 4-pixel blocks and noise).
    assert np.mean(difference > 30) > 0.9
    ground = np.isfinite(empty[..., 0]) & ~on_props & project_points(
        polaris, empty[..., :3])[1]
    uv_ground = np.rint(project_points(polaris, empty[..., :3])[0][ground]).astype(int)
    inside_image = ((uv_ground[:, 0] >= 0) & (uv_ground[:, 0] < 896) & (uv_ground[:, 1] >= 0)
                    & (uv_ground[:, 1] < 512))
    assert inside_image.all() and ground.sum() > 1000


def test_the_lens_is_opencv_plumb_bob_and_inverts_over_the_whole_image(polaris):
    camera = polaris['camera']
    lens = camera_table(camera).lens
    x = np.linspace(-0.85, 0.85, 41)[:, None] * np.ones(41)      # within the knee
    y = x.T * 0.6
    k1, k2, p1, p2, k3 = camera['d']
    r2 = x * x + y * y
    radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
    opencv = (x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
              y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)
    xd, yd = lens.distort(x, y)
    assert np.abs(xd - opencv[0]).max() < 1e-9 and np.abs(yd - opencv[1]).max() < 1e-9
    # Every pixel, the corners beyond the fold of the polynomial too, has a ray.
    u, v = np.meshgrid(np.arange(0, 896, 5), np.arange(0, 512, 5))
    xd = (u - camera['cx']) / camera['fx']
    yd = (v - camera['cy']) / camera['fy']
    xu, yu = lens.undistort(xd, yd)
    back = lens.distort(xu, yu)
    assert np.abs(back[0] - xd).max() < 1e-7 and np.abs(back[1] - yd).max() < 1e-7


def test_an_image_is_deterministic_for_a_seed(terrain, polaris):
    pose = _on_ground(terrain, 0.0, -100.0, yaw=0.4)
    first = camera_image(polaris, pose, [], terrain, rng=np.random.default_rng(7))
    second = camera_image(polaris, pose, [], terrain, rng=np.random.default_rng(7))
    assert np.array_equal(first, second)


# ---------------------------------------------------------------------------------------------
# INS

def test_column_firing_times_follow_the_dataset_rule_for_both_orders(polaris):
    cw = column_offsets_s(polaris['lidar'], 0.1)
    # Column c fires (1799 - c) / 1800 x sweep before the stamp: column 0 first, 1799 last.
    assert cw[0] == pytest.approx(-0.1 * 1799 / 1800) and cw[1799] == 0.0
    assert np.all(np.diff(cw) > 0.0)
    ccw = column_offsets_s(dict(polaris['lidar'], azimuth_order='ccw'), 0.1)
    # The same beam fires at the same time: ccw column c is cw column (1800 - c) mod 1800.
    assert ccw[0] == cw[0] and ccw[1] == 0.0 and ccw[1799] == cw[1]
    assert not np.any(column_offsets_s(polaris['lidar'], 0.0))


def test_a_sweep_from_one_pose_is_the_scan_of_one_instant(polaris, terrain):
    pose = _on_ground(terrain, *GARAGE, -NORTH)   # facing the garage: ground and a wall
    props = [Prop('cone1', 'prop:cone', (-36.0, -150.0, 0.4)),
             Prop('w1', 'person', (-41.0, -148.0, 0.4))]
    still = ColumnPoses(np.tile(pose.position, (1800, 1)), np.tile(pose.rotation, (1800, 1, 1)))
    one = lidar_scan(polaris, pose, props, terrain, rng=np.random.default_rng(3))
    swept = lidar_scan(polaris, pose, props, terrain, rng=np.random.default_rng(3), sweep=still)
    np.testing.assert_array_equal(np.isnan(one), np.isnan(swept))
    np.testing.assert_allclose(swept, one, atol=1e-4, equal_nan=True)
    with pytest.raises(ValueError):
        lidar_scan(polaris, pose, props, terrain, rng=np.random.default_rng(3),
                   sweep=ColumnPoses(still.positions[:10], still.rotations[:10]))


def test_a_moving_sweep_sees_each_column_from_its_own_pose(polaris, terrain):
    # The vehicle drives 1 m towards the garage wall during the sweep; each column's points,
    # put in the world with the pose of its firing time, lie on the wall's plane (y = -156).
    end = _on_ground(terrain, GARAGE[0], GARAGE[1] - 4.0, -NORTH)
    start = end.position + np.array([0.0, 1.0, 0.0])
    fraction = (column_offsets_s(polaris['lidar'], 0.1) / 0.1 + 1.0)[:, None]
    positions = start + fraction * (end.position - start)
    sweep = ColumnPoses(positions, np.tile(end.rotation, (1800, 1, 1)))
    cloud = lidar_scan(polaris, end, [], terrain, rng=np.random.default_rng(4), sweep=sweep)
    rotation = end.rotation @ rpy_deg_to_matrix(polaris['lidar']['rpy_deg'])
    mount = np.asarray(polaris['lidar']['position_flu_m'])
    origins = positions + mount @ end.rotation.T
    world = np.einsum('ij,crj->cri', rotation, cloud[..., :3]) + origins[:, None, :]
    ahead = np.r_[0:100, 1700:1800]                 # +-20 degrees about straight ahead
    seen = world[ahead].reshape(-1, 3)
    wall = seen[(np.abs(seen[:, 1] + 156.0) < 0.5) & (seen[:, 2] > end.position[2] + 0.5)]
    assert len(wall) > 1000
    assert np.abs(wall[:, 1] + 156.0).max() < 0.02
    # Seen from the pose of the stamp instead (no de-skew), column 0, which fired 1 m farther
    # back, puts the wall 1 m deeper; the last column fired at the stamp and puts it in place.
    skewed = np.einsum('ij,crj->cri', rotation, cloud[..., :3]) + origins[-1]
    for columns, depth in ((slice(0, 20), -157.0), (slice(1780, 1800), -156.0)):
        part = skewed[columns].reshape(-1, 3)
        part = part[(part[:, 2] > end.position[2] + 0.5) & (part[:, 1] < -155.0)]
        assert len(part) > 100
        assert np.median(part[:, 1]) == pytest.approx(depth, abs=0.02)


def _ins(layout, pose, seed=0, **kwargs):
    return ins_values(layout, pose, rng=np.random.default_rng(seed), **kwargs)


def test_ins_at_the_seed_point_reads_like_the_seed(polaris):
    pose = Pose.from_xyz_yaw(-38.709, -141.667, 0.599, NORTH)
    values = _ins(polaris, pose)
    assert values.shape == (40,) and values.dtype == np.float64
    assert values[InsField.UTM_E] == pytest.approx(500438.1, abs=0.1)
    assert values[InsField.UTM_N] == pytest.approx(4479958.2, abs=0.1)
    assert values[InsField.UTM_H] == pytest.approx(181.885, abs=0.1)
    assert values[InsField.LAT] == pytest.approx(40.4703010, abs=2e-6)
    assert values[InsField.LON] == pytest.approx(-86.9948318, abs=2e-6)
    assert values[InsField.FIX_STATUS] == 2.0
    assert values[InsField.UTM_ZONE] == 16.0
    assert values[InsField.GRID_ROTATION_DEG] == geodesy.GRID_ROTATION_DEG
    assert list(values[InsField.TRUTH_X:InsField.TRUTH_Z + 1]) == [-38.709, -141.667, 0.599]


def test_ins_latitude_and_longitude_invert_its_utm_position(polaris):
    to_geographic = pyproj.Transformer.from_crs('EPSG:6345', 'EPSG:6318', always_xy=True)
    for k, (x, y) in enumerate([(-300.0, 500.0), (200.0, -400.0), (0.0, 0.0)]):
        values = _ins(polaris, Pose.from_xyz_yaw(x, y, 0.3, 0.5 * k), seed=k)
        lon, lat = to_geographic.transform(values[InsField.UTM_E], values[InsField.UTM_N])
        assert values[InsField.LAT] == pytest.approx(lat, abs=1e-9)
        assert values[InsField.LON] == pytest.approx(lon, abs=1e-9)


@pytest.mark.parametrize('datum, projected, geographic', [
    ('nad83_2011', 'EPSG:6345', 'EPSG:6318'), ('wgs84_g2139', 'EPSG:32616', 'EPSG:4326')])
def test_utm_to_latlon_agrees_with_proj_over_the_zone(datum, projected, geographic):
    # Krüger's series replaced the pyproj call of each INS epoch: it must stay PROJ's answer.
    to_geographic = pyproj.Transformer.from_crs(projected, geographic, always_xy=True)
    rng = np.random.default_rng(7)
    eastings = rng.uniform(170000.0, 830000.0, 500)
    northings = rng.uniform(0.0, 9300000.0, 500)
    lon, lat = to_geographic.transform(eastings, northings)
    ours = np.array([geodesy.utm_to_latlon(e, n, datum=datum)
                     for e, n in zip(eastings, northings)])
    assert np.abs(ours[:, 0] - lat).max() < 1e-10
    assert np.abs(ours[:, 1] - lon).max() < 1e-10
    with pytest.raises(ValueError):
        geodesy.utm_to_latlon(500000.0, 4480000.0, datum='ed50')


def test_ins_quaternions_rates_and_specific_force(polaris):
    pose = Pose([5.0, 6.0, 0.5], [0.01, -0.02, 0.38, 0.92])
    values = _ins(polaris, pose, velocity_world=(0.0, 3.0, 0.0),
                  angular_velocity_world=(0.0, 0.0, 0.2))
    for start in (InsField.UTM_QX, InsField.ENU_QX, InsField.TRUTH_QX):
        assert np.linalg.norm(values[start:start + 4]) == pytest.approx(1.0, abs=1e-9)
    assert values[InsField.TRUTH_QX:InsField.TRUTH_QW + 1] == pytest.approx(pose.orientation)
    body_velocity = pose.rotation.T @ [0.0, 3.0, 0.0]
    assert values[InsField.TRUTH_SPEED] == body_velocity[0]
    assert values[InsField.VEL_X:InsField.VEL_Z + 1] == pytest.approx(body_velocity, abs=0.03)
    assert values[InsField.GYRO_Z] == pytest.approx((pose.rotation.T @ [0, 0, 0.2])[2],
                                                    abs=0.005)
    level = _ins(polaris, Pose.from_xyz_yaw(0.0, 0.0, 0.0, 1.0))
    assert level[InsField.ACCEL_Z] == pytest.approx(9.81, abs=0.05)
    assert level[InsField.ENU_X:InsField.ENU_Z + 1] == pytest.approx([0, 0, 0], abs=0.08)
    assert (level[InsField.COV_E:InsField.COV_U + 1] > 0).all()


def test_ins_without_georeference_has_nans_and_no_fix(polaris):
    values = _ins(polaris, Pose.from_xyz_yaw(1.0, 2.0, 0.3, 0.2), georeferenced=False)
    missing = list(range(0, 7)) + list(range(16, 22)) + [30, 31]
    assert np.isnan(values[missing]).all()
    assert values[InsField.FIX_STATUS] == -1.0
    assert np.isfinite(np.delete(values, missing)).all()
    layout = hello_layout('polaris', 'polaris', georeferenced=False)
    assert np.isnan(_ins(layout, Pose.from_xyz_yaw(0, 0, 0, 0))[InsField.LAT])


def test_ins_is_deterministic_for_a_seed(polaris):
    pose = Pose.from_xyz_yaw(10.0, 20.0, 0.5, 0.1)
    assert np.array_equal(_ins(polaris, pose, seed=3), _ins(polaris, pose, seed=3))
    assert not np.array_equal(_ins(polaris, pose, seed=3), _ins(polaris, pose, seed=4))


# ---------------------------------------------------------------------------------------------
# Main view

@pytest.mark.parametrize('view', ['chase', 'top'])
def test_the_main_view_is_a_png(terrain, view):
    agents = [('polaris', _on_ground(terrain, *GARAGE)),
              ('maxxum', _on_ground(terrain, GARAGE[0] + 8.0, GARAGE[1] + 5.0))]
    png = render_view_png(agents, [], terrain, view=view, width=320, height=180)
    assert png.startswith(b'\x89PNG\r\n\x1a\n')
    image = Image.open(io.BytesIO(png))
    image.load()
    assert image.size == (320, 180) and image.mode == 'RGB'
    assert len(np.unique(np.asarray(image).reshape(-1, 3), axis=0)) > 20
