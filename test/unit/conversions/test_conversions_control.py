# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Control channel replies <-> messages, with the seed's example replies; no rclpy.init."""

import json
import re
from types import SimpleNamespace

from acres_interfaces.msg import AgentInfo
from acres_interfaces.msg import VehicleShift
from acres_interfaces.srv import FarmState
from acres_interfaces.srv import FieldQuery
from acres_interfaces.srv import GetVehicleShifts
from acres_interfaces.srv import Hello
from acres_interfaces.srv import Record
from acres_interfaces.srv import SetConditions
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Pose
from geometry_msgs.msg import Twist
from hypothesis import given
from hypothesis import strategies as st
import pytest
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import Bounds
from simulation_interfaces.msg import EntityCategory
from simulation_interfaces.msg import EntityFilters
from simulation_interfaces.msg import EntityState
from simulation_interfaces.msg import Result
from simulation_interfaces.msg import TagsFilter
from simulation_interfaces.srv import SpawnEntity

from acres_bridge.conversions import diagnostics
from acres_bridge.conversions.replies import acres
from acres_bridge.conversions.replies import responses
from acres_bridge.conversions.replies import simulation
from acres_bridge.conversions.replies.responses import ReplyError

# Replies of the seed (004), as the game sends them.
HELLO = json.loads(
    '{"protocol":1,"map":"V03ACRE","physics_hz":120,"state":2,"lockstep":true,"step":0,'
    '"time_s":0,"episode":0,"episode_id":"20261002T070414-0000","seed":42,"headless":false,'
    '"replay":false,"agents":[{"name":"polaris","vehicle":"polaris","index":0,'
    '"implement":"","sensor_stream":0,"rl_port":5556,"can_udp":0}],'
    '"features":[0,1,2,10,11,14,20,22,23,24,25,26,31,32,33],"id":1,"ok":true,"result":1}')
ENTITY_STATE = json.loads(
    '{"time_s":0.40000002086162567,"frame":"world","pose":{"position":[-38.7087,-141.6659,'
    '0.5935],"orientation":[-0.0181,0.0080,0.7068,0.7071]},"twist":{"linear":[-0.0230,0.0403,'
    '0.0590],"angular":[-0.0134,-0.0771,0.0004]},"utm":{"easting":500438.0926,'
    '"northing":4479958.1254,"height":0.5935,"heading_deg":0.0958},"id":8,"ok":true,'
    '"result":1}')
EPISODE = json.loads(
    '{"event":"episode","episode_id":"20261002T070414-0000","episode":0,"reset_epoch":0,'
    '"step":0,"time_s":0,"episode_time_s":0,"state":2,"lockstep":true,"seed":42,'
    '"source":"unreal","map":"V03ACRE","agents":["polaris"]}')
FARM = json.loads(
    '{"crushed_m2":0,"harvested_kg":0,"fields":[{"field":48,"name":"F48","crop":"soybean",'
    '"crop_area_m2":5098.080000000243,"crushed_m2":0,"crushed_in_band_m2":0,'
    '"crushed_out_band_m2":0,"harvested_m2":0,"tilled_m2":0,"seeded_m2":0,"sprayed_m2":0,'
    '"theta_mean":0.3231109465020577,"pond_mean_m":0,"rut_area_m2":0}],'
    '"time_s":0.608333365060389,"id":40,"ok":true,"result":1}')
SHIFTS = json.loads(
    '{"shifts":[{"agent":"polaris","label":"test shift","steering_offset_deg":2,'
    '"ulc_speed_bias_mps":0.1,"throttle_bias_pct":0,"brake_bias_bar":0,'
    '"camera_offset_m":[0,0,0],"camera_offset_rpy_deg":[0,0,0],"lidar_offset_m":[0,0,0],'
    '"lidar_offset_rpy_deg":[0,0.5,0]}],"id":33,"ok":true,"result":1}')
FIELD = json.loads(
    '{"field":53,"surface":"soil","ground_z":0.1400557905435562,'
    '"theta":0.22414907813072205,"pond_m":0,"rut_m":0,"worked":0,"crop":"soybean",'
    '"crop_crushed":0,"edge_distance_m":28.918342892677302,"id":42,"ok":true,"result":1}')

SHAPE_1 = simulation.InterfaceShape(spawn_resource=False, spawnable_resource=False,
                                    set_state_flags=False)
SHAPE_2 = simulation.InterfaceShape(spawn_resource=True, spawnable_resource=True,
                                    set_state_flags=True)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


# --- shape ----------------------------------------------------------------------------------

def _fields_type(**fields: str) -> type:
    return type('Fake', (), {'get_fields_and_field_types': staticmethod(lambda: fields)})


def test_the_shape_is_read_from_the_fields_of_the_types():
    one = simulation.detect_shape(
        spawn_request=_fields_type(uri='string', resource_string='string'),
        spawnable=_fields_type(uri='string'), set_state_request=_fields_type(entity='string'))
    two = simulation.detect_shape(
        spawn_request=_fields_type(entity_resource='simulation_interfaces/Resource'),
        spawnable=_fields_type(entity_resource='simulation_interfaces/Resource'),
        set_state_request=_fields_type(set_pose='boolean', set_twist='boolean'))
    assert (one, one.major) == (SHAPE_1, 1)
    assert (two, two.major) == (SHAPE_2, 2)


def test_the_installed_shape_matches_the_installed_spawn_request():
    shape = simulation.detect_shape()
    fields = SpawnEntity.Request.get_fields_and_field_types()
    assert shape.spawn_resource == ('entity_resource' in fields)
    assert shape.spawn_resource != ('uri' in fields)


# --- results --------------------------------------------------------------------------------

@pytest.mark.parametrize('reply', [
    {'ok': False, 'result': 0, 'error': 'unknown op "frobnicate"'},
    {'ok': True, 'result': 1},
    {'ok': False, 'result': 2, 'error': 'no entity "nobody"'},
    {'ok': False, 'result': 3, 'error': 'a step request is in progress'},
    {'ok': False, 'result': 4, 'error': 'agents cannot be deleted at run time'},
    {'ok': False, 'result': 101, 'error': '"cone1" exists'},
    {'ok': False, 'result': 107, 'error': 'no mesh'},
    {'ok': True, 'result': 1, 'error': 'the physics clock is not reset (SCOPE_TIME): the '
     'episode clock restarts instead'},
])
def test_result_codes_and_texts_pass_unchanged(reply):
    result = simulation.result_from_reply(reply)
    assert (result.result, result.error_message) == (reply['result'], reply.get('error', ''))


@pytest.mark.parametrize('reply, text', [
    ({'ok': True}, 'result must be a code from 0 to 255, got None'),
    ({'result': True}, 'got True'),
    ({'result': 256}, 'got 256'),
    ({'result': -1}, 'got -1'),
    ({'result': 1.0}, 'got 1.0'),
    ({'result': 4, 'error': 7}, 'error must be a string'),
])
def test_a_reply_without_a_valid_result_is_malformed(reply, text):
    with pytest.raises(ReplyError, match=re.escape(text)):
        simulation.result_from_reply(reply)


def test_failed_results_and_warnings():
    result = simulation.failed_result('no reply to step within 10 s')
    assert (result.result, result.error_message) == (
        Result.RESULT_OPERATION_FAILED, 'no reply to step within 10 s')
    assert simulation.failed_result('x', Result.RESULT_FEATURE_UNSUPPORTED).result == 0
    simulation.add_warning(result, 'more')
    assert result.error_message == 'no reply to step within 10 s; more'
    empty = Result(result=1)
    simulation.add_warning(empty, 'only')
    assert empty.error_message == 'only'


# --- poses ----------------------------------------------------------------------------------

@given(st.lists(finite, min_size=7, max_size=7), st.lists(finite, min_size=6, max_size=6))
def test_poses_and_twists_survive_the_wire_form(pose_values, twist_values):
    pose_dict = {'position': pose_values[:3], 'orientation': pose_values[3:]}
    assert simulation.pose_to_dict(simulation.pose_from_dict(pose_dict)) == pose_dict
    twist_dict = {'linear': twist_values[:3], 'angular': twist_values[3:]}
    assert simulation.twist_to_dict(simulation.twist_from_dict(twist_dict)) == twist_dict


def test_a_pose_without_orientation_is_identity_and_a_twist_without_vectors_zero():
    pose = simulation.pose_from_dict({'position': [1, 2, 3]})
    assert (pose.position.x, pose.position.y, pose.position.z) == (1.0, 2.0, 3.0)
    assert isinstance(pose.position.x, float)
    assert (pose.orientation.x, pose.orientation.w) == (0.0, 1.0)
    assert simulation.twist_to_dict(simulation.twist_from_dict({})) == {
        'linear': [0.0, 0.0, 0.0], 'angular': [0.0, 0.0, 0.0]}
    assert simulation.pose_to_dict(Pose())['orientation'] == [0.0, 0.0, 0.0, 1.0]
    assert simulation.twist_to_dict(Twist())['linear'] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize('pose, text', [
    (None, 'pose must be an object'),
    ({}, 'pose.position is missing'),
    ({'position': [1, 2]}, 'pose.position must be a list of 3 numbers'),
    ({'position': [1, 2, 'x']}, 'pose.position must be a list of 3 numbers'),
    ({'position': [1, 2, float('nan')]}, 'pose.position must be a list of 3 numbers'),
    ({'position': [1, 2, True]}, 'pose.position must be a list of 3 numbers'),
    ({'position': [1, 2, 3], 'orientation': [0, 0, 1]}, 'pose.orientation must be a list of 4'),
])
def test_a_broken_pose_names_its_key(pose, text):
    with pytest.raises(ReplyError, match=re.escape(text)):
        simulation.pose_from_dict(pose)


def test_the_frame_of_an_empty_header_is_world():
    assert simulation.frame_from_header('') == 'world'
    assert simulation.frame_from_header('utm') == 'utm'
    assert simulation.frame_from_header('map') == 'map'      # the simulator refuses it


# --- entities -------------------------------------------------------------------------------

def test_an_entity_state_is_in_world_stamped_with_the_simulation_time():
    state = simulation.entity_state_from_reply(ENTITY_STATE)
    assert state.header.frame_id == 'world'
    assert (state.header.stamp.sec, state.header.stamp.nanosec) == (0, 400000021)
    assert state.pose.position.y == -141.6659 and state.pose.orientation.w == 0.7071
    assert state.twist.linear.z == 0.0590 and state.twist.angular.y == -0.0771
    assert state.acceleration.linear.x == 0.0


@pytest.mark.parametrize('change, text', [
    ({'time_s': -1.0}, 'time_s must be a number, 0 or more'),
    ({'time_s': 'now'}, 'time_s must be a number'),
    ({'frame': 3}, 'frame must be a string'),
    ({'twist': {'linear': [0, 0]}}, 'twist.linear must be a list of 3 numbers'),
])
def test_a_broken_entity_state_is_malformed(change, text):
    with pytest.raises(ReplyError, match=re.escape(text)):
        simulation.entity_state_from_reply({**ENTITY_STATE, **change})


def _state(x: float, frame: str = '', vx: float = 0.0) -> EntityState:
    state = EntityState()
    state.header.frame_id = frame
    state.pose.position.x = x
    state.twist.linear.x = vx
    return state


def test_set_entity_state_sends_both_parts_in_the_header_frame():
    fields = simulation.set_entity_state_fields('cone1', _state(5.0, 'utm', 1.0))
    assert fields == {'entity': 'cone1', 'frame': 'utm',
                      'pose': {'position': [5.0, 0.0, 0.0], 'orientation': [0.0, 0.0, 0.0, 1.0]},
                      'twist': {'linear': [1.0, 0.0, 0.0], 'angular': [0.0, 0.0, 0.0]}}


def test_set_entity_state_keeps_a_part_from_the_current_state():
    keep_pose = simulation.set_entity_state_fields(
        'cone1', _state(5.0, 'utm', 1.0), set_pose=False, current=ENTITY_STATE)
    assert keep_pose['frame'] == 'world'
    assert keep_pose['pose'] == ENTITY_STATE['pose']
    assert keep_pose['twist']['linear'] == [1.0, 0.0, 0.0]
    keep_twist = simulation.set_entity_state_fields(
        'cone1', _state(5.0, 'utm', 1.0), set_twist=False, current=ENTITY_STATE)
    assert (keep_twist['frame'], keep_twist['pose']['position']) == ('utm', [5.0, 0.0, 0.0])
    assert keep_twist['twist'] == ENTITY_STATE['twist']
    with pytest.raises(ValueError):
        simulation.set_entity_state_fields('cone1', _state(5.0), set_twist=False)


def test_entity_names_are_filtered_with_a_search_anywhere():
    names = ['polaris', 'cone1', 'cone1_1', 'w1']
    assert simulation.filter_names(names, '') == names
    assert simulation.filter_names(names, 'cone') == ['cone1', 'cone1_1']
    assert simulation.filter_names(names, '^cone[0-9]$') == ['cone1']
    assert simulation.filter_names(names, '1$') == ['cone1', 'cone1_1', 'w1']
    with pytest.raises(re.error):
        simulation.filter_names(names, 'cone(')
    assert simulation.entity_names_from_reply({'entities': names}) == names
    with pytest.raises(ReplyError, match=re.escape('entities[1] must be a string')):
        simulation.entity_names_from_reply({'entities': ['a', 2]})


def test_filters_the_simulator_cannot_serve_are_named():
    assert simulation.entity_filters_unsupported(EntityFilters(filter='cone')) is None
    categories = EntityFilters(categories=[EntityCategory(category=1)])
    assert 'ENTITY_CATEGORIES' in simulation.entity_filters_unsupported(categories)
    tags = EntityFilters(tags=TagsFilter(tags=['prop']))
    assert 'ENTITY_TAGS' in simulation.entity_filters_unsupported(tags)
    bounds = EntityFilters(bounds=Bounds(type=Bounds.TYPE_BOX))
    assert 'ENTITY_BOUNDS' in simulation.entity_filters_unsupported(bounds)


def _spawn_request(shape: simulation.InterfaceShape, uri: str, resource: str = '') -> object:
    """A SpawnEntity request of either shape (the other shape as a stand-in object)."""
    pose = SpawnEntity.Request().initial_pose
    pose.header.frame_id = 'utm'
    pose.pose.position.x = 500438.0
    fields = {'name': 'cone1', 'allow_renaming': True, 'initial_pose': pose}
    if shape.spawn_resource:
        return SimpleNamespace(entity_resource=SimpleNamespace(
            uri=uri, resource_string=resource), **fields)
    return SimpleNamespace(uri=uri, resource_string=resource, **fields)


@pytest.mark.parametrize('shape', [SHAPE_1, SHAPE_2])
def test_spawn_sends_the_uri_of_either_shape_and_the_pose_frame(shape):
    fields = simulation.spawn_entity_fields(_spawn_request(shape, 'prop:cone'), shape)
    assert fields == {'name': 'cone1', 'uri': 'prop:cone', 'allow_renaming': True,
                      'frame': 'utm', 'pose': {'position': [500438.0, 0.0, 0.0],
                                               'orientation': [0.0, 0.0, 0.0, 1.0]}}
    assert simulation.spawn_resource(_spawn_request(shape, '', '<sdf/>'), shape) == ('', '<sdf/>')


def test_spawnables_carry_the_uri_where_the_installed_shape_keeps_it():
    shape = simulation.detect_shape()
    reply = {'spawnables': [{'uri': 'prop:cone', 'description': 'traffic cone, 0.7 m tall'},
                            {'uri': 'person'}]}
    spawnables = simulation.spawnables_from_reply(reply, shape)
    uris = [(item.entity_resource if shape.spawnable_resource else item).uri
            for item in spawnables]
    assert uris == ['prop:cone', 'person']
    assert [item.description for item in spawnables] == ['traffic cone, 0.7 m tall', '']
    with pytest.raises(ReplyError, match=re.escape('spawnables[0] must be an object')):
        simulation.spawnables_from_reply({'spawnables': ['prop:cone']}, shape)
    with pytest.raises(ReplyError, match=re.escape('spawnables must be a list')):
        simulation.spawnables_from_reply({}, shape)


def test_named_poses_and_their_tags_filter():
    reply = {'poses': [
        {'name': 'spawn-icsc-garage', 'description': 'Spawn: ICSC garage',
         'tags': ['spawn', 'heading'], 'pose': {'position': [-38.7097, -140.5131, 0.6392],
                                                'orientation': [0, 0, 0.7071, 0.7071]}},
        {'name': 'west-yard', 'tags': ['yard'], 'pose': {'position': [-137.6, -160.0, 0.0]}}]}
    poses = simulation.named_poses_from_reply(reply)
    assert [pose.name for pose in poses] == ['spawn-icsc-garage', 'west-yard']
    assert poses[0].tags == ['spawn', 'heading'] and poses[1].description == ''
    assert poses[0].pose.orientation.z == 0.7071
    any_of = TagsFilter(tags=['heading', 'yard'], filter_mode=TagsFilter.FILTER_MODE_ANY)
    all_of = TagsFilter(tags=['spawn', 'heading'], filter_mode=TagsFilter.FILTER_MODE_ALL)
    assert [simulation.tags_match(pose.tags, any_of) for pose in poses] == [True, True]
    assert [simulation.tags_match(pose.tags, all_of) for pose in poses] == [True, False]
    assert simulation.tags_match([], TagsFilter())
    with pytest.raises(ValueError, match='unknown tags.filter_mode 7'):
        simulation.tags_match(['x'], TagsFilter(tags=['x'], filter_mode=7))
    with pytest.raises(ReplyError, match=re.escape('poses[1].pose.position is missing')):
        simulation.named_poses_from_reply(
            {'poses': [reply['poses'][0], {'name': 'x', 'pose': {}}]})


# --- acres messages -------------------------------------------------------------------------

def test_hello_fills_every_key_and_the_agents():
    response = acres.hello_response(HELLO, Hello.Response())
    assert (response.protocol, response.map, response.physics_hz) == (1, 'V03ACRE', 120)
    assert (response.state, response.lockstep, response.step, response.time_s) == (
        2, True, 0, 0.0)
    assert response.episode_id == '20261002T070414-0000' and response.seed == 42
    assert response.source == Hello.Response.SOURCE_UNREAL
    assert list(response.features) == HELLO['features']
    assert response.agents == [AgentInfo(name='polaris', vehicle='polaris', index=0,
                                         implement='', sensor_stream=0, rl_port=5556,
                                         can_udp=0)]
    assert response.result == Result()           # the caller sets the result
    core = acres.hello_response({**HELLO, 'source': 'core', 'headless': True},
                                Hello.Response())
    assert (core.source, core.headless) == ('core', True)
    assert simulation.features_from_reply(HELLO) == HELLO['features']


def test_an_episode_event_becomes_an_episode_message():
    episode = acres.episode_from_event({**EPISODE, 'step': 48, 'time_s': 0.4})
    assert (episode.episode_id, episode.episode, episode.state) == (
        '20261002T070414-0000', 0, 2)
    assert (episode.step, episode.time_s, episode.source, episode.agents) == (
        48, 0.4, 'unreal', ['polaris'])


def test_farm_state_field_query_and_shifts_fill_their_responses():
    farm = acres.farm_state_response(FARM, FarmState.Response())
    assert farm.time_s == 0.608333365060389 and farm.crushed_m2 == 0.0
    [field] = farm.fields
    assert (field.field, field.name, field.crop) == (48, 'F48', 'soybean')
    assert field.crop_area_m2 == 5098.080000000243
    point = responses.fill_message(FieldQuery.Response(), FIELD, skip=('result',))
    assert (point.field, point.surface, point.worked) == (53, 'soil', 0)
    assert point.theta == 0.22414907813072205
    shifts = acres.vehicle_shifts_response(SHIFTS, GetVehicleShifts.Response())
    [shift] = shifts.shifts
    assert (shift.agent, shift.label) == ('polaris', 'test shift')
    assert shift.steering_offset_deg == 2.0
    assert list(shift.lidar_offset_rpy_deg) == [0.0, 0.5, 0.0]


@pytest.mark.parametrize('data, text', [
    ({'physics_hz': -1}, 'physics_hz must be an integer from 0 to 4294967295, got -1'),
    ({'physics_hz': 120.5}, 'physics_hz must be an integer'),
    ({'physics_hz': '120'}, 'physics_hz must be an integer'),
    ({'lockstep': 1}, 'lockstep must be true or false'),
    ({'time_s': None}, 'time_s must be a finite number'),
    ({'map': 5}, 'map must be a string'),
    ({'features': [1, 70000]}, 'features[1] must be an integer from 0 to 65535'),
    ({'agents': [{'name': 'polaris', 'sensor_stream': 70000}]},
     'agents[0].sensor_stream must be an integer from 0 to 65535'),
    ({'agents': ['polaris']}, 'agents[0] must be an object'),
])
def test_fill_message_checks_each_value_and_names_its_key(data, text):
    with pytest.raises(ReplyError, match=re.escape(text)):
        acres.hello_response(data, Hello.Response())


def test_fill_message_takes_integral_floats_and_checks_fixed_arrays():
    assert responses.fill_message(Record.Response(), {'messages': 40.0}).messages == 40
    with pytest.raises(ReplyError, match=re.escape('lidar_offset_m must have 3 items, got 2')):
        responses.fill_message(VehicleShift(), {'lidar_offset_m': [0, 0]})


def test_request_fields_leave_out_what_the_simulator_defaults():
    conditions = SetConditions.Request(set_clock=True, clock_date='2026-07-04', clock_hour=15.5,
                                       set_weather=True, set_soil_water=True,
                                       soil_water_wetness=0.6, restore_fields=True,
                                       restore_fields_fields=[48, 53])
    assert acres.set_conditions_fields(conditions) == {
        'clock': {'date': '2026-07-04', 'hour': 15.5}, 'weather': {'rain_mm_h': -1.0},
        'soil_water': {'wetness': 0.6}, 'restore_fields': {'fields': [48, 53]}}
    assert acres.set_conditions_fields(SetConditions.Request()) == {}
    assert acres.farm_state_fields(FarmState.Request()) == {'edge_band_m': 0.0}
    assert acres.farm_state_fields(FarmState.Request(fields=[48], edge_band_m=3.0)) == {
        'fields': [48], 'edge_band_m': 3.0}
    assert acres.field_query_fields(FieldQuery.Request(x=-38.71, y=-81.67)) == {
        'x': -38.71, 'y': -81.67, 'frame': 'world'}
    assert acres.record_fields(Record.Request(action='stop')) == {'action': 'stop'}
    assert acres.record_fields(Record.Request(action='start', path='/d/e.mcap')) == {
        'action': 'start', 'path': '/d/e.mcap'}


def test_a_vehicle_shift_is_sent_with_every_field_and_agent_0_by_default():
    shift = VehicleShift(label='test shift', steering_offset_deg=2.0,
                         lidar_offset_rpy_deg=[0.0, 0.5, 0.0])
    fields = acres.vehicle_shift_fields(shift)
    assert 'agent' not in fields
    assert fields['lidar_offset_rpy_deg'] == [0.0, 0.5, 0.0]
    assert json.loads(json.dumps(fields)) == fields
    assert set(fields) == set(VehicleShift.get_fields_and_field_types()) - {'agent'}
    assert acres.vehicle_shift_fields(VehicleShift(agent='maxxum'))['agent'] == 'maxxum'


def test_control_stats_become_a_diagnostic_status():
    stats = {'connected': True, 'reason': 'connected to 127.0.0.1:5600', 'requests': 5,
             'replies': 4, 'timeouts': 1, 'round_trip_p50_ms': 0.25, 'round_trip_max_ms': None}
    status = diagnostics.control_stats_to_status(
        stats, name='sim_control: control channel', hardware_id='127.0.0.1:5600')
    values = {item.key: item.value for item in status.values}
    assert status.level == DiagnosticStatus.WARN
    assert status.message == 'connected with new timeouts'
    assert status.name == 'sim_control: control channel'
    assert status.hardware_id == '127.0.0.1:5600'
    assert (values['requests'], values['round_trip_p50_ms'], values['round_trip_max_ms']) == (
        '5', '0.250', 'n/a')
    assert set(values) == set(diagnostics.CONTROL_KEYS)
    calm = diagnostics.control_stats_to_status(stats, name='x', previous=stats)
    assert (calm.level, calm.message) == (DiagnosticStatus.OK, 'connected')
    down = diagnostics.control_stats_to_status(
        {'connected': False, 'reason': 'cannot connect to 127.0.0.1:5600: refused'}, name='x')
    assert (down.level, down.message) == (
        DiagnosticStatus.ERROR, 'disconnected: cannot connect to 127.0.0.1:5600: refused')


# --- the composed services -------------------------------------------------------------------

SERVED = ('spawn_entity', 'delete_entity', 'get_entity_state', 'get_entities_states',
          'get_entity_info', 'get_current_world', 'get_available_worlds', 'spawn_entities')


def test_only_served_features_are_listed_and_unknown_or_refused_ids_are_dropped():
    # 4 (tags) and 8 (categories) are refused by get_entities, 99 is no feature at all.
    assert simulation.served_features([0, 4, 8, 99, 1, 10, 10], SERVED) == [
        0, 1, 10, 12, 44, 45, 50]
    # A feature needs every service that serves it; a composed one its simulator features.
    assert simulation.served_features([0, 10], ('get_entity_state',)) == []
    assert simulation.served_features([], SERVED) == [12, 44, 45]


def test_entities_states_leave_out_entities_deleted_meanwhile():
    gone = {'ok': False, 'result': 2, 'error': 'no entity "cone1"'}
    names, states, result = simulation.entities_states_from_replies(
        [('polaris', ENTITY_STATE), ('cone1', gone), ('w1', ENTITY_STATE)])
    assert (names, result.result) == (['polaris', 'w1'], Result.RESULT_OK)
    assert states == [simulation.entity_state_from_reply(ENTITY_STATE)] * 2
    names, states, result = simulation.entities_states_from_replies(
        [('polaris', ENTITY_STATE), ('w1', {'ok': False, 'result': 3, 'error': 'stepping'})])
    assert (names, states) == ([], [])
    assert (result.result, result.error_message) == (3, "get_entity_state of 'w1': stepping")
    with pytest.raises(ReplyError, match='time_s'):
        simulation.entities_states_from_replies([('polaris', {'ok': True, 'result': 1})])


def test_entity_info_from_the_agents_of_hello_and_the_uris_spawned():
    robot = simulation.entity_info('polaris', HELLO, {})
    assert (robot.category.category, robot.description) == (
        EntityCategory.CATEGORY_ROBOT, 'agent 0: a polaris')
    maxxum = {**HELLO, 'agents': [{'name': 'm', 'vehicle': 'maxxum', 'index': 1,
                                   'implement': 'sprayer'}]}
    assert simulation.entity_info('m', maxxum, {}).description == (
        'agent 1: a maxxum with a sprayer')
    spawned = {'cone1': 'prop:cone', 'w1': 'person'}
    assert simulation.entity_info('cone1', HELLO, spawned).category.category == (
        EntityCategory.CATEGORY_OBJECT)
    assert simulation.entity_info('w1', HELLO, spawned).category.category == (
        EntityCategory.CATEGORY_HUMAN)
    unknown = simulation.entity_info('old', HELLO, spawned)
    assert unknown.category.category == EntityCategory.CATEGORY_OBJECT
    assert 'unknown' in unknown.description


def test_spawn_results_fail_together_naming_each_failure():
    ok = simulation.spawn_result_from_reply({'ok': True, 'result': 1, 'entity': 'cone1'})
    assert (ok.result.result, ok.entity_name) == (Result.RESULT_OK, 'cone1')
    taken = simulation.spawn_result_from_reply(
        {'ok': False, 'result': 101, 'error': '"cone1" exists'})
    assert (taken.result.result, taken.entity_name) == (101, '')
    assert simulation.spawn_results_outcome([ok]) == Result(result=Result.RESULT_OK)
    assert simulation.spawn_results_outcome([]) == Result(result=Result.RESULT_OK)
    outcome = simulation.spawn_results_outcome([ok, taken, simulation.failed_spawn_result('x')])
    assert (outcome.result, outcome.error_message) == (
        150, '2 of 3 spawns failed: 1: "cone1" exists; 2: x')
    assert simulation.resource_string_unsupported('', '<sdf/>').endswith(
        '(feature SPAWNING_RESOURCE_STRING)')
    assert simulation.resource_string_unsupported('prop:cone', '<sdf/>') is None


def test_the_world_is_the_map_of_hello():
    world = simulation.world_from_hello(HELLO)
    assert (world.name, world.world_resource.uri) == ('V03ACRE', 'V03ACRE')
    assert world.description == 'the ACRES map V03ACRE (unreal)'
    assert simulation.world_from_hello({**HELLO, 'map': ''}) is None
    with pytest.raises(ReplyError, match='map'):
        simulation.world_from_hello({**HELLO, 'map': 7})


def test_step_feedback_and_the_simulation_state():
    feedback = simulation.step_feedback(SimulateSteps.Feedback, {'completed': 12,
                                                                 'remaining': 24})
    assert (feedback.completed_steps, feedback.remaining_steps) == (12, 24)
    with pytest.raises(ReplyError, match='progress.remaining_steps'):
        simulation.step_feedback(SimulateSteps.Feedback, {'completed': 12, 'remaining': -1})
    assert simulation.simulation_state_from_reply({'state': 2, 'step': 0}).state == 2


def test_the_interface_probe_finds_installed_types_and_none_for_missing_ones():
    assert responses.installed_interface('simulation_interfaces', 'srv', 'SpawnEntity',
                                         'Request') is SpawnEntity.Request
    assert responses.installed_interface('simulation_interfaces', 'srv', 'Nothing') is None
    assert responses.installed_interface('no_such_package', 'msg', 'X') is None
