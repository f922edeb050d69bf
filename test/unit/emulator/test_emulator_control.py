# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The emulator's control channel against the control channel seed, over real sockets."""

import math
import os
import sys

from mcap.reader import make_reader
import pytest
from support.emulator_probe import JsonChannel
from support.waiting import wait_until

from acres_bridge.emulator.episode_log import NO_MCAP
from acres_bridge.emulator.server import Emulator

EPISODE_KEYS = {'event', 'episode_id', 'episode', 'reset_epoch', 'step', 'time_s',
                'episode_time_s', 'state', 'lockstep', 'seed', 'source', 'map', 'agents'}
STEP_S = 0.10000000521540642 / 12


def _emulator(**options) -> Emulator:
    options.setdefault('lockstep', True)
    return Emulator(**options).start()


def _channel(**options):
    with _emulator(**options) as emulator:
        channel = JsonChannel(emulator.control_port)
        channel.emulator = emulator
        yield channel
        channel.close()


@pytest.fixture
def game():
    yield from _channel()


@pytest.fixture
def core():
    yield from _channel(mode='core')


def _ok(reply: dict) -> dict:
    assert reply['ok'] is True and reply['result'] == 1, reply
    return reply


def _refused(reply: dict, result: int, error: str | None = None) -> dict:
    assert reply['ok'] is False and reply['result'] == result, reply
    if error is not None:
        assert reply['error'] == error
    return reply


# --- session and state --------------------------------------------------------------------------

def test_a_client_first_gets_an_episode_event(game):
    event = game.read()
    assert set(event) == EPISODE_KEYS
    assert event['event'] == 'episode' and event['source'] == 'unreal'
    assert (event['episode'], event['reset_epoch'], event['step'], event['state']) == (0, 0, 0, 2)
    assert event['lockstep'] is True and event['seed'] == 42 and event['map'] == 'V03ACRE'
    assert event['agents'] == ['polaris']
    assert event['episode_id'].endswith('-0000') and len(event['episode_id']) == 20


def test_hello_describes_the_session_and_the_bound_ports(game):
    reply = _ok(game.call('hello'))
    assert {'protocol', 'map', 'physics_hz', 'state', 'lockstep', 'step', 'time_s', 'episode',
            'episode_id', 'seed', 'headless', 'replay', 'agents', 'features'} <= set(reply)
    assert 'source' not in reply
    assert (reply['protocol'], reply['physics_hz'], reply['headless'], reply['replay']) == (
        1, 120, False, False)
    assert reply['features'] == [0, 1, 2, 10, 11, 14, 20, 22, 23, 24, 25, 26, 31, 32, 33]
    assert reply['agents'] == [{
        'name': 'polaris', 'vehicle': 'polaris', 'index': 0, 'implement': '',
        'sensor_stream': game.emulator.sensor_ports[0], 'rl_port': 0, 'can_udp': 0}]
    assert game.emulator.requests.last() == {'id': reply['id'], 'op': 'hello'}


def test_core_hello_is_headless_with_source_and_exact_time(core):
    reply = _ok(core.call('hello'))
    assert reply['headless'] is True and reply['source'] == 'core'
    assert _ok(core.call('step', steps=12))['time_s'] == 0.1
    assert core.events[0]['source'] == 'core'


def test_unknown_op_and_lines_that_are_not_json_objects(game):
    _refused(game.call('frobnicate'), 0, 'unknown op "frobnicate"')
    for line in (b'not json', b'[1, 2]', b'{"id": 3'):
        game.send_line(line)
        reply = game.reply()
        assert 'id' not in reply
        _refused(reply, 4)
    assert game.emulator.requests.since() == [{'id': 101, 'op': 'frobnicate'}]


def test_get_state_and_set_state(game):
    assert _ok(game.call('get_state')) | {'id': 0} == {
        'state': 2, 'lockstep': True, 'step': 0, 'time_s': 0.0, 'id': 0, 'ok': True,
        'result': 1}
    assert _refused(game.call('set_state', state=2), 101, 'already in that state')['state'] == 2
    _refused(game.call('set_state', state=7), 4)
    _refused(game.call('set_state'), 4)
    assert _ok(game.call('set_state', state=1))['state'] == 1
    assert game.events[-1]['event'] == 'episode' and game.events[-1]['state'] == 1
    assert game.events[-1]['lockstep'] is False
    _refused(game.call('step', steps=1), 3)
    wait_until(lambda: game.call('get_state')['step'] > 0, what='a step')
    assert _ok(game.call('set_state', state=2))['state'] == 2
    paused = game.call('get_state')
    assert paused['lockstep'] is True
    assert game.call('get_state')['step'] == paused['step']


def test_set_state_stopped_resets_and_holds(game):
    _ok(game.call('step', steps=12))
    assert _ok(game.call('set_state', state=0))['state'] == 0
    event = game.events[-1]
    assert (event['state'], event['episode'], event['step']) == (0, 1, 12)
    _refused(game.call('step', steps=1), 3)


def test_set_state_quitting_replies_then_stops():
    emulator = _emulator()
    channel = JsonChannel(emulator.control_port)
    assert _ok(channel.call('set_state', state=3))['state'] == 3
    assert emulator.wait(10.0)
    assert channel.file.readline() == b''
    channel.close()


# --- stepping -------------------------------------------------------------------------------

def test_step_replies_with_step_time_barrier_and_wall_time(game):
    reply = _ok(game.call('step', steps=12))
    assert set(reply) == {'step', 'time_s', 'barrier', 'wall_s', 'id', 'ok', 'result'}
    assert (reply['step'], reply['barrier']) == (12, 12)
    assert reply['time_s'] == 0.10000000521540642
    assert reply['wall_s'] > 0
    assert _ok(game.call('step'))['step'] == 13
    _refused(game.call('step', steps=0), 4)
    _refused(game.call('step', steps='12'), 4)


def test_step_with_progress_sends_an_event_each_12_steps(game):
    game.read()
    request_id = game.send('step', steps=36, progress=True)
    assert game.read() == {'event': 'progress', 'id': request_id, 'completed': 12,
                           'remaining': 24}
    assert game.read() == {'event': 'progress', 'id': request_id, 'completed': 24,
                           'remaining': 12}
    reply = game.read()
    assert reply['id'] == request_id and reply['step'] == 36
    assert reply['time_s'] == 36 * STEP_S


def test_requests_during_a_step_are_answered_and_step_and_set_state_refused(game):
    assert game.read()['event'] == 'episode'
    with game.emulator.world.lock:   # holds the step worker before its first physics step
        step_id = game.send('step', steps=12)
        state = _ok(game.call('get_state'))
        assert (state['state'], state['lockstep'], state['step']) == (2, True, 0)
        _refused(game.call('step', steps=1), 3)
        _refused(game.call('set_state', state=1), 3)
    reply = game.reply()
    assert reply['id'] == step_id and reply['step'] == 12


def test_core_refuses_reset_during_a_step(core):
    assert core.read()['event'] == 'episode'
    with core.emulator.world.lock:
        step_id = core.send('step', steps=12)
        _refused(core.call('reset'), 3)
    assert core.reply()['id'] == step_id


def test_game_resets_during_a_step_between_physics_steps(game):
    assert game.read()['event'] == 'episode'
    with game.emulator.world.lock:
        step_id = game.send('step', steps=12)
        reset_id = game.send('reset', scope=4)
    replies = {reply['id']: reply for reply in (game.reply(), game.reply())}
    assert _ok(replies[reset_id])['episode'] == 1
    assert _ok(replies[step_id])['step'] == 12


# --- resets ---------------------------------------------------------------------------------

def test_reset_scope_2_puts_agents_at_their_spawn_pose(game):
    spawn = _ok(game.call('get_entity_state', entity='polaris'))['pose']['position']
    _ok(game.call('step', steps=120))
    moved = _ok(game.call('get_entity_state', entity='polaris'))['pose']['position']
    assert math.dist(spawn[:2], moved[:2]) > 0.5
    reply = _ok(game.call('reset', scope=2))
    assert set(reply) == {'episode', 'episode_id', 'reset_epoch', 'restored_fields', 'id', 'ok',
                          'result'}
    assert (reply['episode'], reply['reset_epoch'], reply['restored_fields']) == (1, 1, 0)
    assert reply['episode_id'].endswith('-0001')
    event = game.events[-1]
    assert (event['event'], event['episode'], event['episode_time_s']) == ('episode', 1, 0.0)
    _ok(game.call('step', steps=1))
    back = _ok(game.call('get_entity_state', entity='polaris'))['pose']['position']
    assert math.dist(spawn[:2], back[:2]) < 0.01


def test_full_reset_warns_that_the_physics_clock_goes_on(game):
    _ok(game.call('step', steps=12))
    reply = _ok(game.call('reset'))
    assert reply['error'] == ('the physics clock is not reset (SCOPE_TIME): the episode clock '
                              'restarts instead')
    assert (reply['episode'], reply['restored_fields']) == (1, 59)
    assert _ok(game.call('get_state'))['step'] == 12
    assert 'error' in _ok(game.call('reset', scope=1))
    assert 'error' not in _ok(game.call('reset', scope=4))


# --- entities -------------------------------------------------------------------------------

def test_get_entity_state_of_an_unknown_entity(game):
    _refused(game.call('get_entity_state', entity='nobody'), 2, 'no entity "nobody"')


def test_get_entity_state_gives_pose_twist_and_utm(game):
    reply = _ok(game.call('get_entity_state', entity='polaris'))
    assert set(reply) == {'time_s', 'frame', 'pose', 'twist', 'utm', 'id', 'ok', 'result'}
    assert reply['frame'] == 'world'
    assert set(reply['utm']) == {'easting', 'northing', 'height', 'heading_deg'}
    assert 400000 < reply['utm']['easting'] < 600000
    assert reply['utm']['height'] == reply['pose']['position'][2]


def test_set_entity_state_moves_a_vehicle_at_the_next_step(game):
    pose = {'position': [-30.0, -120.0, 0.0], 'orientation': [0, 0, 0.7071068, 0.7071068]}
    _ok(game.call('set_entity_state', entity='polaris', pose=pose))
    _ok(game.call('step', steps=1))
    reply = _ok(game.call('get_entity_state', entity='polaris'))
    x, y, z = reply['pose']['position']
    assert math.dist((x, y), (-30.0, -120.0)) < 0.01 and z != 0.0
    assert reply['utm']['heading_deg'] == pytest.approx(0.0, abs=0.1)
    utm = {'position': [reply['utm']['easting'], reply['utm']['northing'], 0.0]}
    _ok(game.call('set_entity_state', entity='polaris', pose=utm, frame='utm'))
    _ok(game.call('step', steps=1))
    moved = _ok(game.call('get_entity_state', entity='polaris'))['pose']['position']
    assert math.dist(moved[:2], (x, y)) < 0.01
    _refused(game.call('set_entity_state', entity='polaris', pose={}), 4)
    _refused(game.call('set_entity_state', entity='polaris', pose=pose, frame='map'), 4)
    _refused(game.call('set_entity_state', entity='nobody', pose=pose), 2)


def test_spawn_duplicates_renaming_and_bad_uris(game):
    pose = {'position': [-33.71, -141.67, 0]}
    assert _ok(game.call('spawn_entity', name='cone1', uri='prop:cone', pose=pose))[
        'entity'] == 'cone1'
    _refused(game.call('spawn_entity', name='cone1', uri='prop:cone', pose=pose), 101,
             '"cone1" exists')
    assert _ok(game.call('spawn_entity', name='cone1', uri='prop:cone', pose=pose,
                         allow_renaming=True))['entity'] == 'cone1_1'
    _refused(game.call('spawn_entity', name='', uri='prop:cone'), 102)
    _refused(game.call('spawn_entity', name='x', uri='prop:piano'), 103)
    _refused(game.call('spawn_entity', name='x', uri=''), 104)
    assert _ok(game.call('get_entities'))['entities'] == ['polaris', 'cone1', 'cone1_1']
    state = _ok(game.call('get_entity_state', entity='cone1'))
    assert state['twist'] == {'linear': [0.0, 0.0, 0.0], 'angular': [0.0, 0.0, 0.0]}
    assert state['pose']['position'][2] > 0.0   # z = 0: on the ground


def test_delete_entity(game):
    _ok(game.call('spawn_entity', name='box', uri='prop:box'))
    _ok(game.call('delete_entity', entity='box'))
    _refused(game.call('delete_entity', entity='box'), 2)
    _refused(game.call('delete_entity', entity='polaris'), 4,
             'agents cannot be deleted at run time')


def test_core_refuses_to_delete_an_agent_with_not_found(core):
    _refused(core.call('delete_entity', entity='polaris'), 2)


def test_spawnables_and_named_poses(game):
    spawnables = _ok(game.call('get_spawnables'))['spawnables']
    assert {item['uri'] for item in spawnables} >= {'prop:cone', 'prop:box'}
    assert all(set(item) == {'uri', 'description'} for item in spawnables)
    poses = _ok(game.call('get_named_poses'))['poses']
    garage = next(pose for pose in poses if pose['name'] == 'spawn-icsc-garage')
    assert set(garage) >= {'name', 'description', 'tags', 'pose'}
    assert set(garage['pose']) == {'position', 'orientation'}


# --- conditions, shifts, the episode log and the farm -----------------------------------------

def test_set_conditions_applies_the_correct_parts(game):
    reply = _ok(game.call('set_conditions', clock={'date': '2026-07-04', 'hour': 15.5},
                          weather={'preset': 'rain', 'rain_mm_h': 4},
                          soil_water={'wetness': 0.6, 'fields': [48]}))
    assert reply['message'].startswith('clock 2026-07-04 15.50 h; weather rain rain 4.0 mm/h; '
                                       'soil wetness 0.60 on ')
    assert 'error' not in reply
    partly = _ok(game.call('set_conditions', weather={'preset': 'hail'},
                           soil_water={'wetness': 0.2}))
    assert 'weather' in partly['error'] and partly['message'].startswith('soil wetness 0.20')
    _refused(game.call('set_conditions', soil_water={'wetness': 2}), 4)


def test_vehicle_shifts(game):
    shift = {'agent': 'polaris', 'label': 'test shift', 'steering_offset_deg': 2.0,
             'ulc_speed_bias_mps': 0.1, 'lidar_offset_rpy_deg': [0, 0.5, 0]}
    _ok(game.call('set_vehicle_shift', shift=shift))
    shifts = _ok(game.call('get_vehicle_shifts'))['shifts']
    assert shifts == [{'agent': 'polaris', 'label': 'test shift', 'steering_offset_deg': 2.0,
                       'ulc_speed_bias_mps': 0.1, 'throttle_bias_pct': 0.0,
                       'brake_bias_bar': 0.0, 'camera_offset_m': [0.0, 0.0, 0.0],
                       'camera_offset_rpy_deg': [0.0, 0.0, 0.0],
                       'lidar_offset_m': [0.0, 0.0, 0.0], 'lidar_offset_rpy_deg': [0, 0.5, 0]}]
    _refused(game.call('set_vehicle_shift', shift={'agent': 'nobody'}), 2)
    _refused(game.call('set_vehicle_shift', shift={'steering_offset_deg': 'left'}), 4)


def test_record_writes_an_mcap_episode_log(game, tmp_path):
    path = str(tmp_path / 'logs' / 'episode.mcap')
    _refused(game.call('record', action='stop'), 3)
    start = _ok(game.call('record', action='start', path=path))
    assert start['path'] == path and start['messages'] == 4
    _refused(game.call('record', action='start', path=path), 3)
    _ok(game.call('step', steps=24))
    stop = _ok(game.call('record', action='stop'))
    assert stop['path'] == path and stop['messages'] >= 4 + 24
    assert stop['duration_s'] == pytest.approx(0.2, abs=1e-6)
    with open(path, 'rb') as stream:
        messages = list(make_reader(stream).iter_messages())
    assert len(messages) == stop['messages']
    topics = [channel.topic for _, channel, _ in messages]
    assert topics[:4] == ['/acres/session', '/acres/episode', '/acres/conditions',
                          '/acres/vehicle_shifts']
    assert topics.count('/acres/agent_state') == 24


def test_record_without_mcap_is_refused_with_the_fix(game, tmp_path, monkeypatch):
    """rosdep has no key for mcap: without it only recording is refused, saying why."""
    monkeypatch.setitem(sys.modules, 'mcap.writer', None)       # as if not installed
    refused = game.call('record', action='start', path=str(tmp_path / 'episode.mcap'))
    _refused(refused, 4, NO_MCAP)
    assert 'pip install mcap' in NO_MCAP
    assert not (tmp_path / 'episode.mcap').exists()
    _ok(game.call('step', steps=2))


def test_record_default_path_is_in_the_session_folder(tmp_path):
    with _emulator(session_dir=str(tmp_path)) as emulator:
        channel = JsonChannel(emulator.control_port)
        path = _ok(channel.call('record', action='start'))['path']
        assert path == str(tmp_path / 'episode-0000.mcap')
        _ok(channel.call('record', action='stop'))
        assert os.path.getsize(path) > 0


def test_farm_state_and_field_query(game):
    reply = _ok(game.call('farm_state', fields=[48], edge_band_m=3))
    assert set(reply) == {'crushed_m2', 'harvested_kg', 'fields', 'time_s', 'id', 'ok', 'result'}
    (field,) = reply['fields']
    assert set(field) == {
        'field', 'name', 'crop', 'crop_area_m2', 'crushed_m2', 'crushed_in_band_m2',
        'crushed_out_band_m2', 'harvested_m2', 'tilled_m2', 'seeded_m2', 'sprayed_m2',
        'theta_mean', 'pond_mean_m', 'rut_area_m2'}
    assert (field['field'], field['name']) == (48, 'F48')
    assert field['crop_area_m2'] == pytest.approx(5098.08)
    query = _ok(game.call('field_query', x=-38.71, y=-81.67))
    assert set(query) == {'field', 'surface', 'ground_z', 'theta', 'pond_m', 'rut_m', 'worked',
                          'crop', 'crop_crushed', 'edge_distance_m', 'id', 'ok', 'result'}
    assert (query['field'], query['surface']) == (53, 'soil')
    assert query['edge_distance_m'] == pytest.approx(28.918, abs=0.01)
    _refused(game.call('farm_state', fields=[99]), 2)


def test_driving_through_a_field_crushes_crop(game):
    pose = {'position': [-38.71, -81.67, 0], 'orientation': [0, 0, 0, 1]}
    _ok(game.call('set_entity_state', entity='polaris', pose=pose,
                  twist={'linear': [2.0, 0, 0], 'angular': [0, 0, 0]}))
    _ok(game.call('step', steps=240))
    crushed = _ok(game.call('farm_state', fields=[53]))['fields'][0]['crushed_m2']
    assert crushed > 4
    restored = _ok(game.call('reset', scope=4, restore_fields=True))
    assert restored['restored_fields'] == 59
    assert _ok(game.call('farm_state', fields=[53]))['fields'][0]['crushed_m2'] == 0


def test_screenshot_writes_a_png_in_game_mode(game, tmp_path):
    path = str(tmp_path / 'view.png')
    assert _ok(game.call('screenshot', path=path))['path'] == path
    wait_until(lambda: os.path.exists(path), what=path)
    with open(path, 'rb') as stream:
        assert stream.read(8) == b'\x89PNG\r\n\x1a\n'
    _refused(game.call('screenshot', path='view.png'), 4)
    _refused(game.call('screenshot', path=str(tmp_path / 'view.jpg')), 4)


def test_core_has_no_screenshot(core):
    _refused(core.call('screenshot', path='/tmp/view.png'), 0, 'unknown op "screenshot"')
