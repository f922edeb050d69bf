# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The emulator's world without sockets: clock, sensor schedules, drive, determinism."""

import math
import struct

import numpy as np
import pytest

from acres_bridge.emulator.world import World
from acres_bridge.emulator.world import world_time_s
from acres_bridge.protocol.frames import FrameType


class Sink:
    """Collects the frames of one agent."""

    has_client = True

    def __init__(self) -> None:
        self.frames: list[tuple[int, bytes, float]] = []

    def queue(self, frame_type: int, payload: bytes, stamp_s: float) -> bool:
        self.frames.append((frame_type, payload, stamp_s))
        return True

    def of(self, frame_type: int) -> list[tuple[int, bytes, float]]:
        return [frame for frame in self.frames if frame[0] == frame_type]


def _world(**options) -> tuple[World, Sink]:
    world = World(('polaris',), **options)
    sink = Sink()
    world.agents[0].sink = sink
    return world, sink


def test_world_time_is_single_precision_in_game_and_exact_in_core():
    assert world_time_s(12, 'game') == 0.10000000521540642
    assert world_time_s(48, 'game') == 0.40000002086162567
    assert world_time_s(73, 'game') == 0.608333365060389
    assert world_time_s(12, 'core') == 0.1
    assert world_time_s(360, 'core') == 3.0


def test_ins_epochs_are_the_first_steps_at_or_after_their_due_times():
    world, sink = _world(mode='core')
    world.advance(120)
    steps = [round(stamp * 120) for _, _, stamp in sink.of(FrameType.INS)]
    assert len(steps) == 100
    # Epoch n is due at n / 100 s: the first step k with k / 120 >= n / 100.
    assert steps == [math.ceil(n * 1.2 - 1e-9) for n in range(1, 101)]
    assert set(np.diff(steps)) == {1, 2}
    assert [round(stamp * 120) for _, _, stamp in sink.of(FrameType.LIDAR)] == list(
        range(12, 121, 12))
    assert sink.of(FrameType.CAMERA) == []   # core mode: no camera


def test_the_clock_payload_is_the_vehicle_time_a_constant_offset_from_the_stamp():
    world, sink = _world()
    world.advance(3)
    clocks = sink.of(FrameType.CLOCK)
    assert [stamp for _, _, stamp in clocks] == [world_time_s(k, 'game') for k in (1, 2, 3)]
    offsets = {stamp - struct.unpack('<d', payload)[0] for _, payload, stamp in clocks}
    # "The stamp is the vehicle time plus a constant offset": one offset, and not zero.
    assert offsets == {-world.agents[0].vehicle_clock_lead_s}
    assert world.agents[0].vehicle_clock_lead_s != 0.0


def test_each_agent_has_its_own_nonzero_vehicle_clock_offset():
    world = World(('polaris', 'maxxum'))
    sinks = [Sink(), Sink()]
    for agent, sink in zip(world.agents, sinks):
        agent.sink = sink
    world.advance(2)
    offsets = [{stamp - struct.unpack('<d', payload)[0]
                for _, payload, stamp in sink.of(FrameType.CLOCK)} for sink in sinks]
    assert all(len(offset) == 1 for offset in offsets)
    assert offsets[0] != offsets[1] and 0.0 not in offsets[0] | offsets[1]


def _last_cloud(**options) -> np.ndarray:
    """Return the cloud of step 24 of a Polaris launched towards the garage at 8 m/s."""
    world, sink = _world(**options)
    world.set_entity_state('polaris', (-38.7, -140.0, 0.0), (0.0, 0.0, -0.7071068, 0.7071068),
                           speed_mps=8.0)
    world.advance(25)
    _, payload, _ = sink.of(FrameType.LIDAR)[-1]
    return np.frombuffer(payload, '<f4', offset=16).reshape(1800, 32, 4)


def test_lidar_columns_are_traced_from_the_pose_of_their_firing_time():
    one = _last_cloud(mode='core')
    swept = _last_cloud(mode='core', sweep=True)
    game = _last_cloud()
    # At 8 m/s column 0 fired 0.8 m back: the wall ahead is deeper in it than in the scan of
    # one instant; the last column fired at the stamp and sees the same as that scan.
    for cloud in (swept, game):
        ahead = np.nanmedian(cloud[:10, 2:10, 0] - one[:10, 2:10, 0])
        assert ahead == pytest.approx(0.8, abs=0.1)
        assert np.nanmax(np.abs(cloud[-3:, :, :3] - one[-3:, :, :3])) < 0.01
    np.testing.assert_array_equal(np.isnan(one[:, :, 0]), np.isnan(one[:, :, 1]))


def test_without_a_georeference_the_hello_says_so_and_the_ins_has_no_geography():
    world, sink = _world(georeferenced=False)
    assert world.agents[0].layout['georeferenced'] is False
    world.advance(12)
    for _, payload, _ in sink.of(FrameType.INS):
        values = np.frombuffer(payload, '<f8')
        nan = np.r_[0:7, 16:22, 30, 31]
        assert np.isnan(values[nan]).all() and values[29] == -1.0
        assert np.isfinite(np.delete(values, nan)).all()
    world, sink = _world()
    world.advance(12)
    assert all(np.isfinite(np.frombuffer(payload, '<f8')).all()
               for _, payload, _ in sink.of(FrameType.INS))


def test_sensor_data_do_not_depend_on_when_frames_were_wanted():
    first, first_sink = _world(seed=5)
    first.advance(24)
    second, second_sink = _world(seed=5)
    second.agents[0].sink.has_client = False
    second.advance(12)
    second_sink.has_client = True
    second.advance(12)
    assert first_sink.of(FrameType.INS)[-1] == second_sink.of(FrameType.INS)[-1]
    assert first_sink.of(FrameType.LIDAR)[-1] == second_sink.of(FrameType.LIDAR)[-1]
    other, other_sink = _world(seed=6)
    other.advance(24)
    assert other_sink.of(FrameType.INS)[-1] != first_sink.of(FrameType.INS)[-1]


def test_the_autopilot_drives_a_slow_circle_on_the_ground():
    world = World(('polaris',))
    agent = world.agents[0]
    start = (agent.x, agent.y, agent.yaw)
    world.advance(1200)
    assert 1.0 < math.dist(start[:2], (agent.x, agent.y)) < 25.0
    assert agent.speed_mps == pytest.approx(2.0)
    assert agent.yaw_rate == pytest.approx(2.0 / 25.0)
    assert agent.z == pytest.approx(float(world.terrain.height_at(agent.x, agent.y)))
    held = World(('polaris',), drive='hold')
    before = held.agents[0].pose()
    held.advance(120)
    assert held.agents[0].pose() == before


def test_render_every_moves_the_last_cloud_between_fresh_scans():
    world, sink = _world(render_every=2, drive='hold')
    world.advance(24)
    clouds = [np.frombuffer(payload, '<f4', offset=16) for _, payload, _ in
              sink.of(FrameType.LIDAR)]
    # A standing vehicle: the moved cloud is the fresh one, NaN where it has no return.
    assert np.allclose(clouds[0], clouds[1], atol=1e-5, equal_nan=True)
    images = [payload for _, payload, _ in sink.of(FrameType.CAMERA)]
    assert images[0] is images[1]


def test_a_reset_counts_episodes_and_puts_agents_back_at_the_next_step():
    world = World(('polaris',))
    world.advance(240)
    agent = world.agents[0]
    assert world.reset(scope=2, restore_fields=False) == 0
    assert (world.episode, world.reset_epoch, world.episode_time_s) == (1, 1, 0.0)
    assert world.episode_id.endswith('-0001')
    assert (agent.x, agent.y) != (agent.spawn_x, agent.spawn_y)
    world.advance(1)
    assert (agent.x, agent.y, agent.speed_mps) == (agent.spawn_x, agent.spawn_y, 0.0)
    assert world.reset(scope=4, restore_fields=True) == 59
    assert world.reset_epoch == 1


def test_a_vehicle_shift_moves_the_lidar_mount_but_not_the_hello():
    world, sink = _world(drive='hold')
    world.advance(12)
    hello = dict(world.agents[0].layout['lidar'])
    normal = world.set_vehicle_shift('polaris', {'lidar_offset_m': [0.0, 0.0, 0.5],
                                                 'ulc_speed_bias_mps': 0.5})
    assert normal['throttle_bias_pct'] == 0.0 and normal['label'] == ''
    world.advance(12)
    assert world.agents[0].layout['lidar'] == hello
    assert world.agents[0].sensor_layout['lidar']['position_flu_m'] == [2.5, 0.0, 2.539]
    before, after = (np.frombuffer(payload, '<f4', offset=16).reshape(-1, 4)
                     for _, payload, _ in sink.of(FrameType.LIDAR))
    # The same ground, seen from 0.5 m higher: the returns lie lower in the sensor frame.
    assert np.nanmedian(after[:, 2]) < np.nanmedian(before[:, 2]) - 0.3
    with pytest.raises(ValueError):
        world.set_vehicle_shift('polaris', {'lidar_offset_m': [0, 0]})
