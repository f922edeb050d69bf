# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
sim_control's stepping through a real rclpy graph: the simulate_steps action and the barrier hook.

Cancel semantics: the simulator cannot abort a step, so the action rejects cancel requests and
the goal ends SUCCEEDED (or ABORTED with the simulator's code) once the step replied.
"""

import concurrent.futures
import threading

from action_msgs.msg import GoalStatus
from action_msgs.srv import CancelGoal
import pytest
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import Result
from simulation_interfaces.msg import SimulationState
from simulation_interfaces.srv import SetSimulationState
from simulation_interfaces.srv import StepSimulation
from support.sim_control_graph import CALL_TIMEOUT_S
from support.sim_control_graph import connected_graph
from support.sim_control_graph import ControlGraph
from support.sim_control_graph import wait_for
from support.sim_control_graph import wait_future

from acres_bridge.emulator.server import Emulator
from acres_bridge.runtime.futures import FutureWaiter

pytestmark = pytest.mark.ros


@pytest.fixture
def graph(control_proxy):
    with connected_graph(control_proxy.port) as graph:
        yield graph


def _send_goal(graph: ControlGraph, steps: int) -> object:
    goal_handle = graph.action_caller().send_goal(SimulateSteps.Goal(steps=steps),
                                                  timeout_s=CALL_TIMEOUT_S)
    assert goal_handle.accepted
    return goal_handle


def _result(graph: ControlGraph, goal_handle) -> object:
    return graph.action_caller().result(goal_handle, CALL_TIMEOUT_S)


def _feedback(graph: ControlGraph, goal_handle) -> list[tuple[int, int]]:
    return [(feedback.completed_steps, feedback.remaining_steps)
            for feedback in graph.action_caller().feedback(goal_handle)]


def _step_requests(emulator: Emulator) -> list[dict]:
    return [{key: value for key, value in request.items() if key != 'id'}
            for request in emulator.requests.since() if request.get('op') == 'step']


def test_simulate_steps_gives_feedback_from_each_progress_event(graph, emulator):
    before = emulator.world.step
    goal_handle = _send_goal(graph, 36)
    outcome = _result(graph, goal_handle)
    assert outcome.status == GoalStatus.STATUS_SUCCEEDED
    assert (outcome.result.result.result, outcome.result.result.error_message) == (
        Result.RESULT_OK, '')
    # Feedback is a topic and the result a service: wait, as their order is not given.
    graph.action_caller().spin_until(lambda: len(_feedback(graph, goal_handle)) == 2,
                                     CALL_TIMEOUT_S, 'two feedback messages')
    assert _feedback(graph, goal_handle) == [(12, 24), (24, 12)]
    assert emulator.world.step == before + 36
    assert _step_requests(emulator) == [{'op': 'step', 'steps': 36, 'progress': True}]


def test_a_cancel_is_rejected_and_the_goal_succeeds_after_its_steps(graph, emulator,
                                                                    control_proxy):
    before = emulator.world.step
    held = control_proxy.inject('delay', op='step', delay_s=30.0)
    goal_handle = _send_goal(graph, 24)
    wait_for(lambda: _step_requests(emulator), what='the step request')
    cancel = graph.action_caller().cancel(goal_handle, CALL_TIMEOUT_S)
    # rclpy answers a rejected cancel with no goal in goals_canceling (and ERROR_NONE, where
    # rclcpp says ERROR_REJECTED).
    assert list(cancel.goals_canceling) == []
    assert cancel.return_code in (CancelGoal.Response.ERROR_NONE,
                                  CancelGoal.Response.ERROR_REJECTED)
    held.release.set()
    outcome = _result(graph, goal_handle)
    assert outcome.status == GoalStatus.STATUS_SUCCEEDED
    assert outcome.result.result.result == Result.RESULT_OK
    graph.action_caller().spin_until(lambda: _feedback(graph, goal_handle), CALL_TIMEOUT_S,
                                     'the feedback')
    assert _feedback(graph, goal_handle) == [(12, 12)]
    assert emulator.world.step == before + 24
    assert _step_requests(emulator) == [{'op': 'step', 'steps': 24, 'progress': True}]


def test_a_goal_while_playing_is_aborted_with_the_simulator_code(graph, emulator):
    play = SetSimulationState.Request(state=SimulationState(state=SimulationState.STATE_PLAYING))
    assert graph.call(SetSimulationState, 'set_simulation_state', play).result.result == 1
    goal_handle = _send_goal(graph, 12)
    outcome = _result(graph, goal_handle)
    assert outcome.status == GoalStatus.STATUS_ABORTED
    assert outcome.result.result.result == Result.RESULT_INCORRECT_STATE
    assert 'paused state' in outcome.result.result.error_message
    assert _feedback(graph, goal_handle) == []


def test_a_goal_without_a_reply_is_aborted_with_operation_failed(control_proxy, emulator):
    with connected_graph(control_proxy.port, parameters={'timeout_s': 0.2}) as graph:
        control_proxy.inject('swallow', op='step')
        goal_handle = _send_goal(graph, 1)
        outcome = _result(graph, goal_handle)
        assert outcome.status == GoalStatus.STATUS_ABORTED
        assert outcome.result.result.result == Result.RESULT_OPERATION_FAILED
        assert outcome.result.result.error_message.startswith('no reply to step within 0.2')


class Barriers:
    """A barrier hook the test controls: it records each call and waits for a release."""

    def __init__(self) -> None:
        self.node = None
        self.steps: list[int] = []
        self.called = threading.Event()
        self.release: concurrent.futures.Future = concurrent.futures.Future()

    def __call__(self, step: int) -> FutureWaiter:
        self.steps.append(step)
        self.called.set()
        return FutureWaiter(self.release, self.node.executor)


@pytest.fixture
def hooked(control_proxy):
    """
    Give a connected graph whose node has a Barriers hook, and the hook.

    Connected: a step asked before the control channel is up is answered at once with the
    channel's error (test_sim_control_faults.py), and never reaches the hook.
    """
    barriers = Barriers()
    with connected_graph(control_proxy.port, barrier_hook=barriers) as graph:
        barriers.node = graph.node
        yield graph, barriers


def test_step_simulation_answers_only_after_the_barrier_hook(hooked, emulator):
    graph, barriers = hooked
    client = graph.client(StepSimulation, 'step_simulation')
    future = client.call_async(StepSimulation.Request(steps=6))
    assert barriers.called.wait(10.0)
    assert barriers.steps == [emulator.world.step]
    assert not future.done()          # the response waits for the hook
    barriers.release.set_result(None)
    response = wait_future(future)
    assert response.result.result == Result.RESULT_OK


def test_the_action_awaits_the_barrier_hook_and_a_failing_hook_fails_the_step(hooked, emulator):
    graph, barriers = hooked
    goal_handle = _send_goal(graph, 12)
    caller = graph.action_caller()
    result_future = caller.request_result(goal_handle)
    caller.spin_until(barriers.called.is_set, 10.0, 'the barrier hook call')
    assert not result_future.done()
    barriers.release.set_exception(TimeoutError('no barrier 12 from polaris in 5 s'))
    outcome = caller.wait(result_future, CALL_TIMEOUT_S, 'result')
    assert outcome.status == GoalStatus.STATUS_ABORTED
    assert outcome.result.result.result == Result.RESULT_OPERATION_FAILED
    step = emulator.world.step
    assert outcome.result.result.error_message == (
        f'stepped to step {step}, but the sensor barrier failed: '
        'no barrier 12 from polaris in 5 s')
    assert barriers.steps == [step]
    refused = graph.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=0))
    assert refused.result.result == Result.RESULT_OPERATION_FAILED
    assert barriers.steps == [step]       # no hook for a step that failed
