# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
sim_control through a real rclpy graph against the emulator: every service and topic.

One emulator (the game, lockstep, vehicles holding still) and one graph serve the whole
module, so each test uses names of its own. Each test checks what a ROS client gets and the
JSON request the emulator received. Runs with either shape of simulation_interfaces.
"""

import json
import math
import threading

from acres_interfaces.msg import Episode
from acres_interfaces.msg import VehicleShift
from acres_interfaces.srv import FarmState
from acres_interfaces.srv import FieldQuery
from acres_interfaces.srv import GetVehicleShifts
from acres_interfaces.srv import Hello
from acres_interfaces.srv import Record
from acres_interfaces.srv import Screenshot
from acres_interfaces.srv import SetConditions
from acres_interfaces.srv import SetVehicleShift
import pytest
from simulation_interfaces.msg import EntityCategory
from simulation_interfaces.msg import Result
from simulation_interfaces.msg import SimulationState
from simulation_interfaces.msg import TagsFilter
from simulation_interfaces.srv import DeleteEntity
from simulation_interfaces.srv import GetEntities
from simulation_interfaces.srv import GetEntityState
from simulation_interfaces.srv import GetNamedPoses
from simulation_interfaces.srv import GetSimulationState
from simulation_interfaces.srv import GetSimulatorFeatures
from simulation_interfaces.srv import GetSpawnables
from simulation_interfaces.srv import ResetSimulation
from simulation_interfaces.srv import SetEntityState
from simulation_interfaces.srv import SetSimulationState
from simulation_interfaces.srv import SpawnEntity
from simulation_interfaces.srv import StepSimulation
from support.sim_control_graph import ControlGraph
from support.sim_control_graph import graph_fixtures
from support.sim_control_graph import Requests
from support.sim_control_graph import wait_for
from support.sim_control_graph import wait_future

from acres_bridge.conversions.replies.simulation import detect_shape
from acres_bridge.emulator import geodesy
from acres_bridge.emulator.control_server import FEATURES
from acres_bridge.emulator.control_server import SCOPE_TIME_WARNING
from acres_bridge.emulator.sensors.poses import NAMED_POSES
from acres_bridge.emulator.sensors.props import SPAWNABLES

pytestmark = pytest.mark.ros

SHAPE = detect_shape()
OK = Result.RESULT_OK
PAUSED = SimulationState.STATE_PAUSED
PLAYING = SimulationState.STATE_PLAYING


# One emulator (lockstep, vehicles holding still) and one graph for the whole module.
graph, emulator = graph_fixtures()


def _ok(result: Result) -> None:
    assert (result.result, result.error_message) == (OK, ''), result


def _spawn_request(name: str, uri: str, x: float, y: float, *, frame: str = '',
                   allow_renaming: bool = False) -> SpawnEntity.Request:
    request = SpawnEntity.Request(name=name, allow_renaming=allow_renaming)
    if SHAPE.spawn_resource:
        request.entity_resource.uri = uri
    else:
        request.uri = uri
    request.initial_pose.header.frame_id = frame
    request.initial_pose.pose.position.x = x
    request.initial_pose.pose.position.y = y
    return request


def _spawn(graph: ControlGraph, name: str, x: float, y: float, uri: str = 'prop:cone') -> None:
    response = graph.call(SpawnEntity, 'spawn_entity', _spawn_request(name, uri, x, y))
    _ok(response.result)
    assert response.entity_name == name


def _set_state_request(entity: str, x: float, y: float, *, frame: str = '',
                       vx: float = 0.0) -> SetEntityState.Request:
    request = SetEntityState.Request(entity=entity)
    request.state.header.frame_id = frame
    request.state.pose.position.x = x
    request.state.pose.position.y = y
    request.state.twist.linear.x = vx
    if SHAPE.set_state_flags:
        request.set_pose = True
        request.set_twist = True
    return request


def _pose(x: float, y: float, z: float = 0.0) -> dict:
    return {'position': [x, y, z], 'orientation': [0.0, 0.0, 0.0, 1.0]}


# --- session and state -----------------------------------------------------------------------

def test_every_interface_of_the_contract_is_served(graph):
    assert set(graph.node.served) == {
        'get_simulator_features', 'get_simulation_state', 'set_simulation_state',
        'step_simulation', 'simulate_steps', 'reset_simulation', 'get_entities',
        'get_entity_state', 'set_entity_state', 'spawn_entity', 'delete_entity',
        'get_spawnables', 'get_named_poses', 'get_entities_states', 'spawn_entities',
        'get_entity_info', 'get_current_world', 'get_available_worlds', 'get_entity_bounds',
        'get_named_pose_bounds', 'set_entity_info', 'load_world', 'unload_world',
        'acres/hello', 'acres/set_conditions',
        'acres/set_vehicle_shift', 'acres/get_vehicle_shifts', 'acres/record',
        'acres/farm_state', 'acres/field_query', 'acres/screenshot'}
    namespace = graph.namespace
    wait_for(lambda: f'{namespace}/acres/screenshot' in dict(
        graph.client_node.get_service_names_and_types()), what='the services in the graph')
    names = dict(graph.client_node.get_service_names_and_types())
    assert names[f'{namespace}/get_entities'] == ['simulation_interfaces/srv/GetEntities']
    assert names[f'{namespace}/acres/farm_state'] == ['acres_interfaces/srv/FarmState']


def test_simulator_features_are_the_hello_features_and_custom_info_the_reply(graph, emulator):
    requests = Requests(emulator)
    features = graph.call(GetSimulatorFeatures, 'get_simulator_features').features
    # The simulator's, and those of the composed services: ENTITY_INFO_GETTING,
    # WORLD_INFO_GETTING, AVAILABLE_WORLDS and SPAWNING_ENTITIES.
    assert list(features.features) == sorted(FEATURES + [12, 44, 45, 50])
    hello = json.loads(features.custom_info)
    assert hello['result'] == OK and hello['ok'] is True
    assert hello['physics_hz'] == 120 and hello['map'] == 'V03ACRE'
    assert hello['agents'][0]['sensor_stream'] == emulator.sensor_ports[0]
    assert requests() == [{'op': 'hello'}]


def test_acres_hello_has_every_key_of_the_reply(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(Hello, 'acres/hello')
    _ok(response.result)
    assert (response.protocol, response.map, response.physics_hz) == (1, 'V03ACRE', 120)
    assert (response.state, response.lockstep, response.seed) == (PAUSED, True, 42)
    assert response.episode_id == emulator.world.episode_id
    assert (response.headless, response.replay, response.source) == (False, False, 'unreal')
    assert list(response.features) == FEATURES
    agent = response.agents[0]
    assert (agent.name, agent.vehicle, agent.index, agent.implement) == (
        'polaris', 'polaris', 0, '')
    assert agent.sensor_stream == emulator.sensor_ports[0]
    assert requests() == [{'op': 'hello'}]


def test_simulation_state_is_the_paused_state_of_lockstep(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(GetSimulationState, 'get_simulation_state')
    _ok(response.result)
    assert response.state.state == PAUSED
    assert requests() == [{'op': 'get_state'}]


def test_setting_the_state_it_has_answers_101_with_the_simulator_text(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(SetSimulationState, 'set_simulation_state',
                          SetSimulationState.Request(state=SimulationState(state=PAUSED)))
    assert response.result.result == SetSimulationState.Response.ALREADY_IN_TARGET_STATE == 101
    assert response.result.error_message == 'already in that state'
    assert requests() == [{'op': 'set_state', 'state': PAUSED}]


def test_play_then_pause_and_a_step_while_playing_is_refused_with_3(graph, emulator):
    requests = Requests(emulator)
    play = SetSimulationState.Request(state=SimulationState(state=PLAYING))
    pause = SetSimulationState.Request(state=SimulationState(state=PAUSED))
    try:
        _ok(graph.call(SetSimulationState, 'set_simulation_state', play).result)
        step = graph.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=1))
    finally:
        _ok(graph.call(SetSimulationState, 'set_simulation_state', pause).result)
    assert step.result.result == Result.RESULT_INCORRECT_STATE
    assert 'paused state' in step.result.error_message
    assert requests() == [{'op': 'set_state', 'state': PLAYING}, {'op': 'step', 'steps': 1},
                          {'op': 'set_state', 'state': PAUSED}]


def test_step_simulation_advances_the_paused_world_by_its_steps(graph, emulator):
    before = emulator.world.step
    requests = Requests(emulator)
    response = graph.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=12))
    _ok(response.result)
    assert emulator.world.step == before + 12
    assert requests() == [{'op': 'step', 'steps': 12}]


def test_zero_steps_are_refused_by_the_simulator_with_4(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=0))
    assert response.result.result == Result.RESULT_OPERATION_FAILED
    assert response.result.error_message == 'steps must be an integer, 1 or more'
    assert requests() == [{'op': 'step', 'steps': 0}]


def test_a_step_waits_longer_in_proportion_to_its_steps(graph):
    node = graph.node
    assert node.step_timeout_s(0) == node.parameters.timeout_s
    assert node.step_timeout_s(1200) == pytest.approx(node.parameters.timeout_s + 100.0)


def test_reset_passes_the_scope_and_the_simulator_warning_on_success(graph, emulator):
    episode = emulator.world.episode
    requests = Requests(emulator)
    response = graph.call(ResetSimulation, 'reset_simulation', ResetSimulation.Request(
        scope=ResetSimulation.Request.SCOPE_TIME))
    assert (response.result.result, response.result.error_message) == (OK, SCOPE_TIME_WARNING)
    assert emulator.world.episode == episode + 1
    assert requests() == [{'op': 'reset', 'scope': 1}]


def test_episode_events_are_published_latched_on_acres_episode(graph, emulator):
    received = graph.subscribe_latched(Episode, 'acres/episode')
    first = wait_for(lambda: list(received), what='the latched episode')[0]
    assert first.map == 'V03ACRE' and first.agents == ['polaris'] and first.source == 'unreal'
    assert first.lockstep is True and first.seed == 42
    _ok(graph.call(ResetSimulation, 'reset_simulation', ResetSimulation.Request(
        scope=ResetSimulation.Request.SCOPE_STATE)).result)
    episode = emulator.world.episode
    latest = wait_for(lambda: [message for message in received if message.episode == episode],
                      what='the episode event of the reset')[0]
    assert latest.episode_id == emulator.world.episode_id
    assert latest.state == PAUSED
    assert latest.step == emulator.world.step


# --- entities --------------------------------------------------------------------------------

def test_spawn_entity_sends_the_uri_the_pose_and_the_frame(graph, emulator):
    requests = Requests(emulator)
    request = _spawn_request('spawn_a', 'prop:box', -30.0, -140.0, frame='world')
    request.initial_pose.pose.position.z = 1.5
    request.initial_pose.pose.orientation.z = math.sqrt(0.5)
    request.initial_pose.pose.orientation.w = math.sqrt(0.5)
    response = graph.call(SpawnEntity, 'spawn_entity', request)
    _ok(response.result)
    assert response.entity_name == 'spawn_a'
    assert requests() == [{'op': 'spawn_entity', 'name': 'spawn_a', 'uri': 'prop:box',
                           'allow_renaming': False, 'frame': 'world', 'pose': {
                               'position': [-30.0, -140.0, 1.5],
                               'orientation': [0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5)]}}]
    assert emulator.world.props['spawn_a'].z == 1.5


def test_spawn_entity_in_the_utm_frame_and_renaming(graph, emulator):
    _spawn(graph, 'spawn_b', -20.0, -140.0)
    requests = Requests(emulator)
    easting, northing = geodesy.world_to_utm(-20.0, -130.0)
    request = _spawn_request('spawn_b', 'prop:cone', easting, northing,
                             frame='utm', allow_renaming=True)
    response = graph.call(SpawnEntity, 'spawn_entity', request)
    _ok(response.result)
    assert response.entity_name == 'spawn_b_1'
    [sent] = requests()
    assert (sent['frame'], sent['allow_renaming'], sent['name']) == ('utm', True, 'spawn_b')
    prop = emulator.world.props['spawn_b_1']
    assert (prop.x, prop.y) == (pytest.approx(-20.0, abs=1e-3), pytest.approx(-130.0, abs=1e-3))


@pytest.mark.parametrize('name, uri, code, error', [
    ('spawn_c', 'prop:cone', 101, '"spawn_c" exists'),
    ('', 'prop:cone', 102, 'the name is empty and allow_renaming is false'),
    ('spawn_d', 'prop:unicorn', 103, 'unknown uri "prop:unicorn": see get_spawnables'),
    ('spawn_e', '', 104, 'the uri is empty'),
])
def test_spawn_entity_refusals_keep_their_codes_and_texts(graph, name, uri, code, error):
    if code == 101:
        _spawn(graph, 'spawn_c', -10.0, -140.0)
    response = graph.call(SpawnEntity, 'spawn_entity', _spawn_request(name, uri, 0.0, 0.0))
    assert (response.result.result, response.result.error_message) == (code, error)
    assert response.entity_name == ''


def test_spawning_from_a_resource_string_is_unsupported_and_not_sent(graph, emulator):
    requests = Requests(emulator)
    request = _spawn_request('spawn_f', '', 0.0, 0.0)
    if SHAPE.spawn_resource:
        request.entity_resource.resource_string = '<sdf/>'
    else:
        request.resource_string = '<sdf/>'
    response = graph.call(SpawnEntity, 'spawn_entity', request)
    assert response.result.result == Result.RESULT_FEATURE_UNSUPPORTED
    assert 'resource_string' in response.result.error_message
    graph.call(GetSimulationState, 'get_simulation_state')     # a request after it
    assert requests() == [{'op': 'get_state'}]


def test_get_entities_filters_names_with_a_regular_expression(graph, emulator):
    for name in ('filter_cone1', 'filter_cone2', 'filter_box'):
        _spawn(graph, name, 40.0, -150.0)
    requests = Requests(emulator)
    everything = graph.call(GetEntities, 'get_entities')
    _ok(everything.result)
    assert everything.entities == emulator.world.entity_names()
    assert everything.entities[0] == 'polaris'
    request = GetEntities.Request()
    request.filters.filter = '^filter_cone[0-9]$'
    cones = graph.call(GetEntities, 'get_entities', request)
    _ok(cones.result)
    assert cones.entities == ['filter_cone1', 'filter_cone2']
    request.filters.filter = 'box'
    assert 'filter_box' in graph.call(GetEntities, 'get_entities', request).entities
    assert requests() == [{'op': 'get_entities'}] * 3


def test_get_entities_with_a_bad_expression_or_categories_sends_nothing(graph, emulator):
    requests = Requests(emulator)
    request = GetEntities.Request()
    request.filters.filter = 'cone('
    response = graph.call(GetEntities, 'get_entities', request)
    assert response.result.result == Result.RESULT_OPERATION_FAILED
    assert 'not a regular expression' in response.result.error_message
    request = GetEntities.Request()
    request.filters.categories = [EntityCategory(category=EntityCategory.CATEGORY_ROBOT)]
    response = graph.call(GetEntities, 'get_entities', request)
    assert response.result.result == Result.RESULT_FEATURE_UNSUPPORTED
    assert 'ENTITY_CATEGORIES' in response.result.error_message
    assert requests() == []


def test_get_entity_state_is_in_world_stamped_with_the_simulation_time(graph, emulator):
    _ok(graph.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=5)).result)
    requests = Requests(emulator)
    response = graph.call(GetEntityState, 'get_entity_state',
                          GetEntityState.Request(entity='polaris'))
    _ok(response.result)
    state = response.state
    expected = emulator.world.entity_state('polaris')
    assert state.header.frame_id == 'world'
    stamp_ns = state.header.stamp.sec * 10**9 + state.header.stamp.nanosec
    assert stamp_ns == round(expected['time_s'] * 1e9) and stamp_ns > 0
    position = state.pose.position
    assert [position.x, position.y, position.z] == expected['pose']['position']
    orientation = state.pose.orientation
    assert [orientation.x, orientation.y, orientation.z, orientation.w] == (
        expected['pose']['orientation'])
    assert requests() == [{'op': 'get_entity_state', 'entity': 'polaris'}]


def test_an_unknown_entity_is_not_found_with_the_simulator_text(graph):
    response = graph.call(GetEntityState, 'get_entity_state',
                          GetEntityState.Request(entity='nobody'))
    assert (response.result.result, response.result.error_message) == (
        Result.RESULT_NOT_FOUND, 'no entity "nobody"')


def test_set_entity_state_moves_a_prop_in_the_frame_of_the_header(graph, emulator):
    _spawn(graph, 'move_a', 50.0, -150.0)
    requests = Requests(emulator)
    _ok(graph.call(SetEntityState, 'set_entity_state',
                   _set_state_request('move_a', 52.0, -151.0)).result)
    prop = emulator.world.props['move_a']
    assert (prop.x, prop.y) == (52.0, -151.0)
    easting, northing = geodesy.world_to_utm(55.0, -152.0)
    _ok(graph.call(SetEntityState, 'set_entity_state', _set_state_request(
        'move_a', easting, northing, frame='utm')).result)
    assert (prop.x, prop.y) == (pytest.approx(55.0, abs=1e-3), pytest.approx(-152.0, abs=1e-3))
    zero = {'linear': [0.0, 0.0, 0.0], 'angular': [0.0, 0.0, 0.0]}
    assert requests() == [
        {'op': 'set_entity_state', 'entity': 'move_a', 'frame': 'world',
         'pose': _pose(52.0, -151.0), 'twist': zero},
        {'op': 'set_entity_state', 'entity': 'move_a', 'frame': 'utm',
         'pose': _pose(easting, northing), 'twist': zero}]


def test_set_entity_state_in_an_unknown_frame_fails_with_the_simulator_text(graph):
    response = graph.call(SetEntityState, 'set_entity_state',
                          _set_state_request('polaris', 0.0, 0.0, frame='map'))
    assert response.result.result == Result.RESULT_OPERATION_FAILED
    assert response.result.error_message == 'unknown frame "map": world or utm'


@pytest.mark.skipif(not SHAPE.set_state_flags, reason='simulation_interfaces 1.x: no flags')
def test_set_entity_state_keeps_the_parts_whose_flag_is_false(graph, emulator):
    _spawn(graph, 'flags_a', 60.0, -150.0)
    state = emulator.world.entity_state('flags_a')
    requests = Requests(emulator)
    request = _set_state_request('flags_a', 0.0, 0.0, vx=1.5)
    request.set_pose = False
    _ok(graph.call(SetEntityState, 'set_entity_state', request).result)
    request = _set_state_request('flags_a', 61.0, -151.0, vx=1.5)
    request.set_twist = False
    _ok(graph.call(SetEntityState, 'set_entity_state', request).result)
    request.set_pose = False
    _ok(graph.call(SetEntityState, 'set_entity_state', request).result)
    moved = emulator.world.entity_state('flags_a')
    get = {'op': 'get_entity_state', 'entity': 'flags_a'}
    assert requests() == [
        get, {'op': 'set_entity_state', 'entity': 'flags_a', 'frame': 'world',
              'pose': state['pose'], 'twist': {'linear': [1.5, 0.0, 0.0],
                                               'angular': [0.0, 0.0, 0.0]}},
        get, {'op': 'set_entity_state', 'entity': 'flags_a', 'frame': 'world',
              'pose': _pose(61.0, -151.0), 'twist': state['twist']},
        get]
    assert moved['pose']['position'][:2] == [61.0, -151.0]


def test_delete_entity_removes_a_prop_and_refuses_agents_and_unknown_names(graph, emulator):
    _spawn(graph, 'delete_a', 70.0, -150.0)
    requests = Requests(emulator)
    _ok(graph.call(DeleteEntity, 'delete_entity', DeleteEntity.Request(entity='delete_a'))
        .result)
    assert 'delete_a' not in emulator.world.props
    again = graph.call(DeleteEntity, 'delete_entity', DeleteEntity.Request(entity='delete_a'))
    assert (again.result.result, again.result.error_message) == (
        Result.RESULT_NOT_FOUND, 'no entity "delete_a"')
    agent = graph.call(DeleteEntity, 'delete_entity', DeleteEntity.Request(entity='polaris'))
    assert (agent.result.result, agent.result.error_message) == (
        Result.RESULT_OPERATION_FAILED, 'agents cannot be deleted at run time')
    assert requests() == [{'op': 'delete_entity', 'entity': name}
                          for name in ('delete_a', 'delete_a', 'polaris')]


def test_get_spawnables_lists_the_uris_in_the_installed_shape(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(GetSpawnables, 'get_spawnables')
    _ok(response.result)
    uris = [(item.entity_resource if SHAPE.spawnable_resource else item).uri
            for item in response.spawnables]
    assert uris == [item['uri'] for item in SPAWNABLES]
    assert [item.description for item in response.spawnables] == [
        item['description'] for item in SPAWNABLES]
    response = graph.call(GetSpawnables, 'get_spawnables',
                          GetSpawnables.Request(sources=['file:///elsewhere']))
    assert response.result.result == OK and 'file:///elsewhere' in response.result.error_message
    assert requests() == [{'op': 'get_spawnables'}] * 2


def test_get_named_poses_with_and_without_a_tags_filter(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(GetNamedPoses, 'get_named_poses')
    _ok(response.result)
    assert [pose.name for pose in response.poses] == [
        place['name'] for place in NAMED_POSES]
    first = response.poses[0]
    assert first.tags == ['spawn', 'heading'] and first.description == 'Spawn: ICSC garage'
    assert first.pose.position.x == -38.7097
    assert first.pose.orientation.z == pytest.approx(math.sqrt(0.5))
    request = GetNamedPoses.Request()
    request.tags.tags = ['field', 'yard']
    names = [pose.name for pose in graph.call(GetNamedPoses, 'get_named_poses', request).poses]
    assert names == ['field-53-entrance', 'field-48-corner', 'west-yard']
    request.tags.filter_mode = TagsFilter.FILTER_MODE_ALL
    request.tags.tags = ['spawn', 'heading']
    names = [pose.name for pose in graph.call(GetNamedPoses, 'get_named_poses', request).poses]
    assert names == [place['name'] for place in NAMED_POSES
                     if {'spawn', 'heading'} <= set(place['tags'])]
    assert 'spawn-icsc-garage' in names and 'west-yard' not in names
    assert requests() == [{'op': 'get_named_poses'}] * 3


def test_eight_concurrent_callers_each_get_their_own_reply(graph, emulator):
    names = [f'crowd_{index}' for index in range(8)]
    for index, name in enumerate(names):
        _spawn(graph, name, 100.0 + index, -150.0 - index)
    clients = [graph.client_node.create_client(GetEntityState, 'get_entity_state')
               for _ in names]
    for client in clients:
        assert client.wait_for_service(timeout_sec=10.0)
    requests = Requests(emulator)
    start = threading.Barrier(len(names))
    futures = [None] * len(names)

    def call(index: int) -> None:
        start.wait()
        futures[index] = clients[index].call_async(GetEntityState.Request(entity=names[index]))

    threads = [threading.Thread(target=call, args=(index,)) for index in range(len(names))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    responses = [wait_future(future) for future in futures]
    for index, response in enumerate(responses):
        _ok(response.result)
        position = response.state.pose.position
        assert (position.x, position.y) == (100.0 + index, -150.0 - index)
    assert sorted(request['entity'] for request in requests()) == names


# --- acres services --------------------------------------------------------------------------

def test_set_conditions_sends_the_parts_whose_flag_is_set(graph, emulator):
    requests = Requests(emulator)
    request = SetConditions.Request(
        set_clock=True, clock_date='2026-07-04', clock_hour=15.5, set_weather=True,
        weather_preset='rain', weather_rain_mm_h=4.0, set_soil_water=True,
        soil_water_wetness=0.6, soil_water_fields=[48])
    response = graph.call(SetConditions, 'acres/set_conditions', request)
    _ok(response.result)
    assert response.message.startswith('clock 2026-07-04 15.50 h; weather rain rain 4.0 mm/h;')
    partial = graph.call(SetConditions, 'acres/set_conditions', SetConditions.Request(
        set_weather=True, weather_preset='hail', restore_fields=True,
        restore_fields_fields=[48]))
    assert partial.result.result == OK
    assert partial.result.error_message.startswith('weather: preset must be one of')
    assert partial.message == 'restored 1 fields'
    failed = graph.call(SetConditions, 'acres/set_conditions', SetConditions.Request(
        set_clock=True))
    assert failed.result.result == Result.RESULT_OPERATION_FAILED
    assert failed.result.error_message == 'clock: clock needs a date and an hour from 0 to 24'
    assert requests() == [
        {'op': 'set_conditions', 'clock': {'date': '2026-07-04', 'hour': 15.5},
         'weather': {'preset': 'rain', 'rain_mm_h': 4.0},
         'soil_water': {'wetness': 0.6, 'fields': [48]}},
        {'op': 'set_conditions', 'weather': {'preset': 'hail', 'rain_mm_h': -1.0},
         'restore_fields': {'fields': [48]}},
        {'op': 'set_conditions', 'clock': {'hour': 12.0}}]


def test_vehicle_shifts_round_trip_and_an_unknown_agent_is_not_found(graph, emulator):
    requests = Requests(emulator)
    shift = VehicleShift(label='test shift', steering_offset_deg=2.0, ulc_speed_bias_mps=0.1,
                         lidar_offset_rpy_deg=[0.0, 0.5, 0.0])
    _ok(graph.call(SetVehicleShift, 'acres/set_vehicle_shift',
                   SetVehicleShift.Request(shift=shift)).result)
    shifts = graph.call(GetVehicleShifts, 'acres/get_vehicle_shifts')
    _ok(shifts.result)
    [got] = shifts.shifts
    assert (got.agent, got.label, got.steering_offset_deg) == ('polaris', 'test shift', 2.0)
    assert list(got.lidar_offset_rpy_deg) == [0.0, 0.5, 0.0]
    unknown = graph.call(SetVehicleShift, 'acres/set_vehicle_shift', SetVehicleShift.Request(
        shift=VehicleShift(agent='tractor')))
    assert (unknown.result.result, unknown.result.error_message) == (
        Result.RESULT_NOT_FOUND, 'no agent "tractor"')
    sent = requests()
    assert sent[0] == {'op': 'set_vehicle_shift', 'shift': {
        'label': 'test shift', 'steering_offset_deg': 2.0, 'ulc_speed_bias_mps': 0.1,
        'throttle_bias_pct': 0.0, 'brake_bias_bar': 0.0, 'camera_offset_m': [0.0, 0.0, 0.0],
        'camera_offset_rpy_deg': [0.0, 0.0, 0.0], 'lidar_offset_m': [0.0, 0.0, 0.0],
        'lidar_offset_rpy_deg': [0.0, 0.5, 0.0]}}
    zero = [0.0, 0.0, 0.0]
    assert sent[1:] == [{'op': 'get_vehicle_shifts'}, {'op': 'set_vehicle_shift', 'shift': {
        'agent': 'tractor', 'label': '', 'steering_offset_deg': 0.0, 'ulc_speed_bias_mps': 0.0,
        'throttle_bias_pct': 0.0, 'brake_bias_bar': 0.0, 'camera_offset_m': zero,
        'camera_offset_rpy_deg': zero, 'lidar_offset_m': zero, 'lidar_offset_rpy_deg': zero}}]


def test_record_start_and_stop_and_a_stop_without_recording_is_3(graph, emulator, tmp_path):
    path = str(tmp_path / 'episode.mcap')
    requests = Requests(emulator)
    start = graph.call(Record, 'acres/record', Record.Request(action='start', path=path))
    _ok(start.result)
    assert start.path == path and start.messages > 0
    _ok(graph.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=24)).result)
    stop = graph.call(Record, 'acres/record', Record.Request(action='stop'))
    _ok(stop.result)
    assert stop.path == path and stop.messages >= start.messages
    assert stop.duration_s == pytest.approx(0.2, abs=0.01)
    again = graph.call(Record, 'acres/record', Record.Request(action='stop'))
    assert (again.result.result, again.result.error_message) == (
        Result.RESULT_INCORRECT_STATE, 'no recording')
    assert requests() == [{'op': 'record', 'action': 'start', 'path': path},
                          {'op': 'step', 'steps': 24}, {'op': 'record', 'action': 'stop'},
                          {'op': 'record', 'action': 'stop'}]


def test_farm_state_and_field_query_mirror_their_ops(graph, emulator):
    requests = Requests(emulator)
    farm = graph.call(FarmState, 'acres/farm_state', FarmState.Request(
        fields=[48], edge_band_m=3.0))
    _ok(farm.result)
    [field] = farm.fields
    expected = emulator.world.farm.farm_state([48], 3.0, time_s=emulator.world.time_s)
    assert (field.field, field.name, field.crop) == (48, 'F48', expected['fields'][0]['crop'])
    assert field.crop_area_m2 == expected['fields'][0]['crop_area_m2']
    assert farm.time_s == expected['time_s']
    unknown = graph.call(FarmState, 'acres/farm_state', FarmState.Request(fields=[999]))
    assert (unknown.result.result, unknown.result.error_message) == (
        Result.RESULT_NOT_FOUND, 'no field 999')
    point = graph.call(FieldQuery, 'acres/field_query', FieldQuery.Request(x=-38.71, y=-81.67))
    _ok(point.result)
    expected = emulator.world.farm.field_query(-38.71, -81.67)
    assert (point.field, point.surface, point.crop) == (
        expected['field'], expected['surface'], expected['crop'])
    assert point.edge_distance_m == expected['edge_distance_m']
    assert requests() == [
        {'op': 'farm_state', 'fields': [48], 'edge_band_m': 3.0},
        {'op': 'farm_state', 'edge_band_m': 0.0, 'fields': [999]},
        {'op': 'field_query', 'x': -38.71, 'y': -81.67, 'frame': 'world'}]


def test_screenshot_writes_the_view_and_a_relative_path_fails_with_4(graph, emulator, tmp_path):
    path = str(tmp_path / 'view.png')
    requests = Requests(emulator)
    response = graph.call(Screenshot, 'acres/screenshot', Screenshot.Request(path=path))
    _ok(response.result)
    assert response.path == path
    relative = graph.call(Screenshot, 'acres/screenshot', Screenshot.Request(path='view.png'))
    assert (relative.result.result, relative.result.error_message) == (
        Result.RESULT_OPERATION_FAILED, 'path must be an absolute path that ends with .png')
    assert requests() == [{'op': 'screenshot', 'path': path},
                          {'op': 'screenshot', 'path': 'view.png'}]
