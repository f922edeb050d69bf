# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
get_simulator_features lists exactly the features whose services are served and serve them.

A client that reads the list and calls what it offers must never meet a refusal: every
listed feature is exercised here against the emulator (a feature without a call in this file
fails the test), and a simulator that claims every identifier gets only the served ones
advertised. Runs with either shape of simulation_interfaces.
"""

from collections.abc import Callable

from action_msgs.msg import GoalStatus
import pytest
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import Result
from simulation_interfaces.msg import SimulationState
from simulation_interfaces.msg import SimulatorFeatures
from simulation_interfaces.msg import SpawnEntity as SpawnEntityMessage
from simulation_interfaces.srv import DeleteEntity
from simulation_interfaces.srv import GetAvailableWorlds
from simulation_interfaces.srv import GetCurrentWorld
from simulation_interfaces.srv import GetEntitiesStates
from simulation_interfaces.srv import GetEntityInfo
from simulation_interfaces.srv import GetEntityState
from simulation_interfaces.srv import GetNamedPoses
from simulation_interfaces.srv import GetSimulationState
from simulation_interfaces.srv import GetSimulatorFeatures
from simulation_interfaces.srv import GetSpawnables
from simulation_interfaces.srv import ResetSimulation
from simulation_interfaces.srv import SetEntityState
from simulation_interfaces.srv import SetSimulationState
from simulation_interfaces.srv import SpawnEntities
from simulation_interfaces.srv import SpawnEntity
from simulation_interfaces.srv import StepSimulation
from support.sim_control_graph import CALL_TIMEOUT_S
from support.sim_control_graph import ControlGraph
from support.sim_control_graph import graph_fixtures
from support.sim_control_graph import ScriptedSimulator
from support.sim_control_graph import wait_for

from acres_bridge.conversions.replies.simulation import detect_shape

pytestmark = pytest.mark.ros

SHAPE = detect_shape()
OK = Result.RESULT_OK
F = SimulatorFeatures
PAUSED = SimulationState(state=SimulationState.STATE_PAUSED)
PLAYING = SimulationState(state=SimulationState.STATE_PLAYING)
# The features no service of the node serves: a client must never see them listed.
REFUSED = {F.POSE_BOUNDS, F.ENTITY_TAGS, F.ENTITY_BOUNDS, F.ENTITY_BOUNDS_BOX,
           F.ENTITY_BOUNDS_CONVEX, F.ENTITY_CATEGORIES, F.SPAWNING_RESOURCE_STRING,
           F.ENTITY_INFO_SETTING, F.WORLD_LOADING, F.WORLD_RESOURCE_STRING, F.WORLD_TAGS,
           F.WORLD_UNLOADING}


graph, emulator = graph_fixtures()


def _results(*results: Result) -> list[Result]:
    return list(results)


def _spawn(graph: ControlGraph) -> list[Result]:
    request = SpawnEntity.Request(name='feature_cone')
    (request.entity_resource if SHAPE.spawn_resource else request).uri = 'prop:cone'
    return _results(graph.call(SpawnEntity, 'spawn_entity', request).result)


def _spawn_many(graph: ControlGraph) -> list[Result]:
    spawn = SpawnEntityMessage(name='feature_box', allow_renaming=True)
    spawn.entity_resource.uri = 'prop:box'
    response = graph.call(SpawnEntities, 'spawn_entities',
                          SpawnEntities.Request(spawn_requests=[spawn]))
    return _results(response.result, *[result.result for result in response.results])


def _set_state(graph: ControlGraph, state: SimulationState) -> Result:
    return graph.call(SetSimulationState, 'set_simulation_state',
                      SetSimulationState.Request(state=state)).result


def _play_then_pause(graph: ControlGraph) -> list[Result]:
    return _results(_set_state(graph, PLAYING), _set_state(graph, PAUSED))


def _set_entity_state(graph: ControlGraph) -> list[Result]:
    current = graph.call(GetEntityState, 'get_entity_state',
                         GetEntityState.Request(entity='polaris'))
    request = SetEntityState.Request(entity='polaris', state=current.state)
    if SHAPE.set_state_flags:
        request.set_pose = request.set_twist = True
    return _results(current.result,
                    graph.call(SetEntityState, 'set_entity_state', request).result)


def _reset(scope: int) -> Callable[[ControlGraph], list[Result]]:
    def call(graph: ControlGraph) -> list[Result]:
        return _results(graph.call(ResetSimulation, 'reset_simulation',
                                   ResetSimulation.Request(scope=scope)).result)
    return call


def _step(steps: int) -> Callable[[ControlGraph], list[Result]]:
    def call(graph: ControlGraph) -> list[Result]:
        return _results(graph.call(StepSimulation, 'step_simulation',
                                   StepSimulation.Request(steps=steps)).result)
    return call


def _simulate_steps(graph: ControlGraph) -> list[Result]:
    caller = graph.action_caller()
    goal = caller.send_goal(SimulateSteps.Goal(steps=3), timeout_s=CALL_TIMEOUT_S)
    assert goal.accepted
    answer = caller.result(goal, CALL_TIMEOUT_S)
    assert answer.status == GoalStatus.STATUS_SUCCEEDED
    return _results(answer.result.result)


def _plain(srv_type: type, name: str, **fields) -> Callable[[ControlGraph], list[Result]]:
    def call(graph: ControlGraph) -> list[Result]:
        return _results(graph.call(srv_type, name, srv_type.Request(**fields)).result)
    return call


# One call (or a few) that uses each feature, in the order of the identifiers: spawning comes
# before deleting what it spawned.
CALLS: dict[int, Callable[[ControlGraph], list[Result]]] = {
    F.SPAWNING: _spawn,
    F.DELETING: _plain(DeleteEntity, 'delete_entity', entity='feature_cone'),
    F.NAMED_POSES: _plain(GetNamedPoses, 'get_named_poses'),
    F.ENTITY_STATE_GETTING: lambda graph: (
        _plain(GetEntityState, 'get_entity_state', entity='polaris')(graph)
        + _plain(GetEntitiesStates, 'get_entities_states')(graph)),
    F.ENTITY_STATE_SETTING: _set_entity_state,
    F.ENTITY_INFO_GETTING: _plain(GetEntityInfo, 'get_entity_info', entity='polaris'),
    F.SPAWNABLES: _plain(GetSpawnables, 'get_spawnables'),
    F.SIMULATION_RESET: _reset(ResetSimulation.Request.SCOPE_DEFAULT),
    F.SIMULATION_RESET_TIME: _reset(ResetSimulation.Request.SCOPE_TIME),
    F.SIMULATION_RESET_STATE: _reset(ResetSimulation.Request.SCOPE_STATE),
    F.SIMULATION_RESET_SPAWNED: _reset(ResetSimulation.Request.SCOPE_SPAWNED),
    F.SIMULATION_STATE_GETTING: _plain(GetSimulationState, 'get_simulation_state'),
    F.SIMULATION_STATE_SETTING: _play_then_pause,
    F.SIMULATION_STATE_PAUSE: _play_then_pause,
    F.STEP_SIMULATION_SINGLE: _step(1),
    F.STEP_SIMULATION_MULTIPLE: _step(5),
    F.STEP_SIMULATION_ACTION: _simulate_steps,
    F.WORLD_INFO_GETTING: _plain(GetCurrentWorld, 'get_current_world'),
    F.AVAILABLE_WORLDS: _plain(GetAvailableWorlds, 'get_available_worlds'),
    F.SPAWNING_ENTITIES: _spawn_many,
}


def test_every_listed_feature_is_served_and_none_refuses(graph):
    features = list(graph.call(GetSimulatorFeatures, 'get_simulator_features').features.features)
    assert features == sorted(set(features))
    assert not REFUSED & set(features)
    missing = [feature for feature in features if feature not in CALLS]
    assert not missing, f'no call in this test uses the listed features {missing}'
    for feature in features:
        for result in CALLS[feature](graph):
            # SCOPE_TIME is served with the simulator's warning, like every warning on OK.
            assert result.result == OK, (feature, result)


def _advertised(claimed: list[int]) -> list[int]:
    """Return what get_simulator_features lists for a simulator whose hello claims features."""
    simulator = ScriptedSimulator({'hello': {'ok': True, 'result': OK, 'map': 'V03ACRE',
                                             'features': claimed}})
    graph = ControlGraph(simulator.port)
    try:
        wait_for(lambda: graph.node.hello is not None, what='the hello on connection')
        return list(graph.call(GetSimulatorFeatures,
                               'get_simulator_features').features.features)
    finally:
        graph.close()
        simulator.close()


def test_a_simulator_that_claims_every_feature_gets_only_the_served_ones_listed():
    features = _advertised(list(range(0, 64)))
    assert features == sorted(CALLS)
    assert not REFUSED & set(features)


def test_composed_features_need_the_simulator_features_they_are_made_of():
    # Without SPAWNING there is no SPAWNING_ENTITIES; the features composed from hello stay.
    assert _advertised([F.SIMULATION_STATE_GETTING, 4, 8]) == [
        F.ENTITY_INFO_GETTING, F.SIMULATION_STATE_GETTING, F.WORLD_INFO_GETTING,
        F.AVAILABLE_WORLDS]
