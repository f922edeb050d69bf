# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sim_control node under faults the other control tests leave out, and under load.

A reply with an unknown id, lines that are not replies, a simulator restart while a step
waits, a second client on the channel, and 8 service clients calling at once, each call
answered to its own caller through ROS. (A late reply, a reply that is not JSON, a channel
that closes or is down are in ``test_sim_control_faults.py``.)

The load test makes ``ACRES_LOAD_CALLS`` calls per client (50 unless set); the documented
run of docs/reliability.md uses 500::

    ACRES_LOAD_CALLS=500 pytest -q -s test/graph/control/test_faults_sim_control.py -k load
"""

import os
import threading
import time

import pytest
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import GetEntityState
from simulation_interfaces.srv import GetSimulationState
from simulation_interfaces.srv import StepSimulation
from support.sim_control_graph import ControlGraph
from support.sim_control_graph import wait_for
from support.sim_control_graph import wait_future

from acres_bridge.emulator.faults import FaultProxy
from acres_devkit.ports import free_port

pytestmark = pytest.mark.ros

FAILED = Result.RESULT_OPERATION_FAILED
FAST = {'timeout_s': 0.5, 'reconnect_s': 0.05}
EMULATOR = {'lockstep': True, 'drive': 'hold', 'render_every': 10}
CALLERS = 8
CALLS = int(os.environ.get('ACRES_LOAD_CALLS', '50'))


@pytest.fixture
def proxied(emulator_factory):
    emulator = emulator_factory(**EMULATOR)
    with FaultProxy(emulator.control_port, protocol='control', name='control') as proxy:
        graph = ControlGraph(proxy.port, parameters=FAST)
        try:
            wait_for(lambda: graph.node.control.connected, what='the connection')
            # The client is connected once the kernel queued it; the proxy may not have
            # accepted it yet.
            assert proxy.wait_connections(1, 10.0)
            yield emulator, proxy, graph
        finally:
            graph.close()


def _state(graph: ControlGraph) -> Result:
    return graph.call(GetSimulationState, 'get_simulation_state').result


def test_reply_with_an_unknown_id_fails_the_call_and_the_next_one_works(proxied):
    _, proxy, graph = proxied
    proxy.inject('rewrite_id', op='get_state', id_offset=777)
    result = _state(graph)
    assert result.result == FAILED
    assert result.error_message.startswith('no reply to get_state within 0.5 s')
    assert graph.node.control.stats['unknown_replies'] == 1
    assert _state(graph).result == Result.RESULT_OK


@pytest.mark.parametrize('line', [b'[' * 50000, b'\xff\xfe\x00', b'{"id": 999999, "ok": true}',
                                  b'{"event": "progress", "id": 3}', b'{"event": []}'])
def test_lines_that_are_not_replies_leave_the_node_serving(proxied, line):
    _, proxy, graph = proxied
    assert proxy.send_to_clients(line + b'\n') == 1
    assert _state(graph).result == Result.RESULT_OK
    assert _state(graph).result == Result.RESULT_OK
    stats = graph.node.control.stats
    assert stats['connections'] == 1 and stats['callback_errors'] == 0


def test_simulator_restart_while_a_step_waits_fails_it_then_serves_the_new_one(
        emulator_factory):
    port = free_port()
    first = emulator_factory(control_port=port, **EMULATOR)
    graph = ControlGraph(port, parameters=FAST)
    try:
        wait_for(lambda: graph.node.control.connected, what='the connection')
        client = graph.client(StepSimulation, 'step_simulation')
        # A long step: still running when the simulator goes away.
        waiting = client.call_async(StepSimulation.Request(steps=2_000_000))
        wait_for(lambda: first.control.stepping, what='the step to start')
        first.stop()
        result = wait_future(waiting).result
        assert result.result == FAILED
        assert result.error_message.startswith('control channel closed before the reply to '
                                               'step')
        emulator_factory(control_port=port, **EMULATOR)
        wait_for(lambda: graph.node.control.connected, what='the reconnection')
        assert _state(graph).result == Result.RESULT_OK
        reply = graph.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=12))
        assert reply.result.result == Result.RESULT_OK
    finally:
        graph.close()


def test_a_second_node_waits_until_the_first_leaves(emulator_factory):
    emulator = emulator_factory(**EMULATOR)
    first = ControlGraph(emulator.control_port, parameters=FAST)
    second = None
    try:
        wait_for(lambda: first.node.control.connected, what='the first connection')
        second = ControlGraph(emulator.control_port, parameters=FAST)
        wait_for(lambda: second.node.control.connected, what='the queued connection')
        # Queued by the simulator: the second's calls get no reply while the first is there.
        result = _state(second)
        assert (result.result, result.error_message) == (
            FAILED, 'no reply to get_state within 0.5 s')
        assert _state(first).result == Result.RESULT_OK
        first.close()
        first = None
        wait_for(lambda: second.node.control.stats['events'] >= 1,
                 what='the episode event of the second connection')
        assert _state(second).result == Result.RESULT_OK
    finally:
        for graph in (first, second):
            if graph is not None:
                graph.close()


def test_load_of_8_service_clients_each_get_their_own_replies(emulator_factory):
    emulator = emulator_factory(**EMULATOR)
    graph = ControlGraph(emulator.control_port, parameters={'timeout_s': 30.0})
    try:
        wait_for(lambda: graph.node.control.connected, what='the connection')
        clients = [graph.client_node.create_client(GetEntityState, 'get_entity_state')
                   for _ in range(CALLERS)]
        for client in clients:
            assert client.wait_for_service(timeout_sec=15.0)
        start = threading.Barrier(CALLERS + 1)
        wrong: list[list[str]] = [[] for _ in range(CALLERS)]
        times: list[list[float]] = [[] for _ in range(CALLERS)]

        def caller(index: int) -> None:
            start.wait()
            for call in range(CALLS):
                name = f'nobody_{index}_{call}'
                sent = time.perf_counter()
                result = wait_future(clients[index].call_async(
                    GetEntityState.Request(entity=name)), 60.0).result
                times[index].append(time.perf_counter() - sent)
                if (result.result, result.error_message) != (
                        Result.RESULT_NOT_FOUND, f'no entity "{name}"'):
                    wrong[index].append(f'{name}: {result.result} {result.error_message}')

        threads = [threading.Thread(target=caller, args=(index,), name=f'load-{index}')
                   for index in range(CALLERS)]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join(600.0)
        elapsed = time.perf_counter() - began
        assert wrong == [[]] * CALLERS
        assert all(len(each) == CALLS for each in times)
        stats = graph.node.control.stats
        assert stats['timeouts'] == stats['unknown_replies'] == stats['pending'] == 0
        assert stats['replies'] >= CALLERS * CALLS
        ordered = sorted(sample for each in times for sample in each)
        print(f'\nload: {CALLERS} clients x {CALLS} calls in {elapsed:.2f} s, '
              f'{CALLERS * CALLS / elapsed:.0f} calls/s, ROS round trip p50 '
              f'{ordered[len(ordered) // 2] * 1e3:.2f} ms, p99 '
              f'{ordered[int(len(ordered) * 0.99)] * 1e3:.2f} ms, max {ordered[-1] * 1e3:.2f} ms')
    finally:
        graph.close()
