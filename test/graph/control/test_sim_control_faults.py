# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
sim_control when the control channel misbehaves: down, late, not JSON, closed, malformed.

Each test runs its own graph. The fault proxy sits between the node and the emulator; a
scripted simulator answers with replies the emulator never gives (codes 105 and 107, broken
schemas).
"""

import json

from acres_interfaces.msg import Episode
from acres_interfaces.srv import Screenshot
from diagnostic_msgs.msg import DiagnosticStatus
import pytest
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import GetEntityState
from simulation_interfaces.srv import GetSimulationState
from simulation_interfaces.srv import GetSimulatorFeatures
from simulation_interfaces.srv import SpawnEntity
from support.sim_control_graph import connected_graph
from support.sim_control_graph import ControlGraph
from support.sim_control_graph import ScriptedSimulator
from support.sim_control_graph import wait_for

from acres_devkit.ports import free_port


pytestmark = pytest.mark.ros

FAILED = Result.RESULT_OPERATION_FAILED
FAST = {'timeout_s': 0.3, 'reconnect_s': 0.05}
# For tests whose replies do come: a time-out a loaded machine cannot reach by accident.
PATIENT = {'timeout_s': 10.0, 'reconnect_s': 0.05}


@pytest.fixture
def graph(control_proxy):
    with connected_graph(control_proxy.port, parameters=FAST) as graph:
        yield graph


def _state(graph: ControlGraph) -> Result:
    return graph.call(GetSimulationState, 'get_simulation_state').result


def test_a_channel_that_is_down_fails_at_once_then_the_node_reconnects(emulator_factory):
    port = free_port()
    graph = ControlGraph(port, parameters=FAST)
    try:
        # The client reports its first attempt on its own thread: wait for it, not for time.
        wait_for(lambda: graph.node.control.stats['reason'].startswith('cannot connect'),
                 what='the first refused connection')
        [status] = graph.node.diagnostic_statuses()
        assert status.level == DiagnosticStatus.ERROR
        assert status.message.startswith('disconnected: cannot connect to 127.0.0.1:')
        result = _state(graph)
        assert result.result == FAILED
        assert result.error_message.startswith('control channel not connected (cannot connect')
        assert result.error_message.endswith('get_state not sent')
        features = graph.call(GetSimulatorFeatures, 'get_simulator_features').features
        assert list(features.features) == []
        info = json.loads(features.custom_info)
        assert (info['ok'], info['result']) == (False, FAILED)
        assert 'not connected' in info['error']
        emulator_factory(lockstep=True, drive='hold', control_port=port)
        wait_for(lambda: graph.node.control.connected, what='the reconnection')
        assert _state(graph).result == Result.RESULT_OK
        [status] = graph.node.diagnostic_statuses()
        assert (status.level, status.message) == (DiagnosticStatus.OK, 'connected')
    finally:
        graph.close()


def test_a_reply_that_comes_too_late_fails_and_is_dropped_when_it_comes(graph, control_proxy):
    graph.node.diagnostic_statuses()
    held = control_proxy.inject('delay', op='get_state', delay_s=30.0)
    result = _state(graph)
    assert (result.result, result.error_message) == (FAILED, 'no reply to get_state within 0.3 s')
    [status] = graph.node.diagnostic_statuses()
    assert (status.level, status.message) == (DiagnosticStatus.WARN,
                                              'connected with new timeouts')
    held.release.set()
    wait_for(lambda: graph.node.control.stats['late_replies'] == 1, what='the late reply')
    assert _state(graph).result == Result.RESULT_OK


def test_a_hello_that_comes_too_late_is_asked_for_again(emulator, control_proxy):
    late = control_proxy.inject('delay', op='hello', delay_s=30.0)
    graph = ControlGraph(control_proxy.port, parameters=FAST)
    try:
        wait_for(lambda: graph.node.hello is not None, what='the hello asked for again')
        assert not late.fired.is_set()      # the answer to a second hello, not the first
        assert [request['op'] for request in emulator.requests.since()].count('hello') >= 2
    finally:
        late.release.set()
        graph.close()


def test_a_reply_that_is_not_json_fails_saying_so(graph, control_proxy):
    control_proxy.inject('replace', op='get_state', line=b'<html>502 Bad Gateway</html>')
    result = _state(graph)
    assert (result.result, result.error_message) == (
        FAILED, 'no reply to get_state within 0.3 s (1 line that was not JSON came meanwhile)')
    assert _state(graph).result == Result.RESULT_OK


def test_a_channel_that_closes_before_the_reply_fails_then_reconnects(graph, control_proxy):
    dropped = control_proxy.inject('drop', op='get_state')
    result = _state(graph)
    assert dropped.fired.is_set()
    assert result.result == FAILED
    assert result.error_message.startswith('control channel closed before the reply to get_state')
    wait_for(lambda: control_proxy.open_connections == 1 and graph.node.control.connected,
             what='the reconnection')
    assert _state(graph).result == Result.RESULT_OK


def test_the_episode_of_each_new_connection_is_published(graph, control_proxy):
    received = graph.subscribe_latched(Episode, 'acres/episode')
    wait_for(lambda: received, what='the first episode')
    control_proxy.drop_all()
    wait_for(lambda: len(received) >= 2, what='the episode of the new connection')
    assert received[-1].episode_id == received[0].episode_id


def test_a_simulator_without_the_op_answers_0(emulator_factory, tmp_path):
    core = emulator_factory(mode='core', lockstep=True, drive='hold')
    graph = ControlGraph(core.control_port, parameters=PATIENT)
    try:
        wait_for(lambda: graph.node.control.connected, what='the connection')
        response = graph.call(Screenshot, 'acres/screenshot',
                              Screenshot.Request(path=str(tmp_path / 'view.png')))
        assert (response.result.result, response.result.error_message) == (
            Result.RESULT_FEATURE_UNSUPPORTED, 'unknown op "screenshot"')
    finally:
        graph.close()


@pytest.fixture
def scripted():
    simulators = []

    def start(replies: dict[str, dict]) -> ControlGraph:
        simulator = ScriptedSimulator(replies)
        simulators.append(simulator)
        graph = ControlGraph(simulator.port, parameters=PATIENT)
        simulators.append(graph)
        wait_for(lambda: graph.node.control.connected, what='the connection')
        return graph

    yield start
    for item in reversed(simulators):
        item.close()


@pytest.mark.parametrize('code, error', [
    (105, 'the namespace is not valid'),
    (107, 'the mesh of prop:cone is not in this build'),
])
def test_spawn_codes_the_emulator_never_gives_pass_through(scripted, code, error):
    graph = scripted({'spawn_entity': {'ok': False, 'result': code, 'error': error}})
    response = graph.call(SpawnEntity, 'spawn_entity', SpawnEntity.Request(name='cone'))
    assert (response.result.result, response.result.error_message) == (code, error)
    assert response.entity_name == ''


@pytest.mark.parametrize('reply, error', [
    ({'ok': True, 'result': 1, 'frame': 'world', 'time_s': 1.0, 'pose': {'position': [1, 2]}},
     'malformed get_entity_state reply: pose.position must be a list of 3 numbers'),
    ({'ok': True, 'result': 1, 'frame': 'world', 'pose': {'position': [1, 2, 3]}},
     'malformed get_entity_state reply: time_s must be a number, 0 or more, got None'),
    ({'ok': True, 'result': 300},
     'malformed get_entity_state reply: result must be a code from 0 to 255, got 300'),
    ({'ok': True}, 'malformed get_entity_state reply: result must be a code from 0 to 255, '
     'got None'),
])
def test_a_reply_that_breaks_the_schema_fails_naming_the_key(scripted, reply, error):
    graph = scripted({'get_entity_state': reply})
    response = graph.call(GetEntityState, 'get_entity_state',
                          GetEntityState.Request(entity='polaris'))
    assert (response.result.result, response.result.error_message) == (FAILED, error)
