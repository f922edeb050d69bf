# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A small rclpy graph for the sim_control tests: the node under test and a client node.

``ControlGraph`` owns an rclpy Context, a multi-threaded executor spinning on its own thread
(as a user's process would), the ``SimControlNode`` and a client node, and calls services from
the test thread, waiting on events with time-outs. The action is called through an
``ActionCaller``, which the test thread spins itself (see action_caller.py for why).
"""

from collections.abc import Iterator
import contextlib
import itertools
import json
import os
import socket
import threading
from typing import Any

import pytest
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from simulation_interfaces.action import SimulateSteps
from support.action_caller import ActionCaller
from support.spinning import SpinningExecutor
from support.waiting import wait_until

from acres_bridge.control.sim_control_node import SimControlNode
from acres_bridge.emulator.server import Emulator

CALL_TIMEOUT_S = 15.0
_NAMESPACES = itertools.count()


wait_for = wait_until   # the name the sim_control tests import


def wait_future(future: Any, timeout_s: float = CALL_TIMEOUT_S) -> Any:
    """Wait until an rclpy future is done (from a thread that does not spin); its result."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    assert done.wait(timeout_s), 'no answer in time'
    return future.result()


def unique_namespace() -> str:
    """
    Return a namespace no other graph uses, in this process or another.

    Test runs on one machine may share a ROS_DOMAIN_ID; a namespace of their own keeps a
    client from finding the services of another run's node.
    """
    return f'/sim_control_test_{os.getpid()}_{next(_NAMESPACES)}'


class ControlGraph:
    """
    A SimControlNode connected to ``port`` and a client node, spun by one executor.

    Both nodes live in a namespace of their own (``namespace``); the services, the action and
    the topic are relative to it, as the contract says.

    :param port: the control channel port.
    :param parameters: more parameter overrides of the node (name: value).
    :param node_options: passed to SimControlNode (barrier_hook, on_hello...).
    """

    def __init__(self, port: int, *, parameters: dict[str, Any] | None = None,
                 **node_options: Any) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        overrides = [Parameter('port', value=port)] + [
            Parameter(name, value=value) for name, value in (parameters or {}).items()]
        self.namespace = unique_namespace()
        self.node = SimControlNode(context=self.context, parameter_overrides=overrides,
                                   namespace=self.namespace, **node_options)
        self.client_node = rclpy.create_node('sim_control_test_client', context=self.context,
                                             namespace=self.namespace)
        self._action_callers = {'simulate_steps': ActionCaller(
            self.context, SimulateSteps, 'simulate_steps', node_name='sim_control_test_action',
            namespace=self.namespace)}
        self._action_ready: set[str] = set()
        self._spinner = SpinningExecutor(self.context)
        self.executor = self._spinner.executor
        self.executor.add_node(self.node)
        self.executor.add_node(self.client_node)
        self._clients: dict[str, Any] = {}

    def close(self) -> None:
        """Stop spinning, destroy the nodes and shut the context down."""
        self._spinner.shutdown()
        for action_caller in self._action_callers.values():
            action_caller.close()
        self.node.destroy_node()
        self.client_node.destroy_node()
        self.context.try_shutdown()

    def client(self, srv_type: type, name: str) -> Any:
        """Return a (cached) service client that has found its server."""
        client = self._clients.get(name)
        if client is None:
            client = self.client_node.create_client(srv_type, name)
            assert client.wait_for_service(timeout_sec=CALL_TIMEOUT_S), f'no service {name}'
            self._clients[name] = client
        return client

    def call(self, srv_type: type, name: str, request: Any | None = None,
             timeout_s: float = CALL_TIMEOUT_S) -> Any:
        """Call a service and return its response."""
        client = self.client(srv_type, name)
        request = srv_type.Request() if request is None else request
        return wait_future(client.call_async(request), timeout_s)

    def action_caller(self, name: str = 'simulate_steps') -> ActionCaller:
        """Return the action's caller once its client has found the server."""
        caller = self._action_callers[name]
        if name not in self._action_ready:
            assert caller.wait_for_server(CALL_TIMEOUT_S), f'no action {name}'
            # The server's services can be found before its feedback publisher has matched
            # the client's subscriptions (rclpy's and the caller's own): feedback sent before
            # that would be lost.
            topic = f'{self.namespace}/{name}/_action/feedback'
            wait_for(lambda: self.node.count_subscribers(topic) >= 2,
                     CALL_TIMEOUT_S, f'the {name} feedback subscriptions')
            self._action_ready.add(name)
        return caller

    def subscribe_latched(self, msg_type: type, topic: str) -> list[Any]:
        """Subscribe reliable and transient local; return the list the messages go to."""
        received: list[Any] = []
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.client_node.create_subscription(msg_type, topic, received.append, qos)
        return received


@contextlib.contextmanager
def control_session(parameters: dict[str, Any] | None = None,
                    **emulator_options: Any) -> Iterator[tuple[Emulator, ControlGraph]]:
    """
    Run an emulator (the game, lockstep, vehicles holding still) and a graph connected to it.

    :param parameters: parameter overrides of the node.
    :param emulator_options: more options of the Emulator.
    """
    emulator = Emulator(**{'lockstep': True, 'drive': 'hold', **emulator_options}).start()
    try:
        with connected_graph(emulator.control_port, parameters=parameters) as graph:
            yield emulator, graph
    finally:
        emulator.stop()


@contextlib.contextmanager
def connected_graph(port: int, **options: Any) -> Iterator[ControlGraph]:
    """Give a ControlGraph on ``port`` once its node has the simulator's hello; close it after."""
    graph = ControlGraph(port, **options)
    try:
        wait_for(lambda: graph.node.hello is not None, what='the hello on connection')
        yield graph
    finally:
        graph.close()


def graph_fixtures(parameters: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """
    Return the module-scoped fixtures ``graph`` and ``emulator`` of one control session.

    A test module assigns them (``graph, emulator = graph_fixtures({'timeout_s': 3.0})``);
    every test of the module then shares the emulator and the graph.
    """
    @pytest.fixture(scope='module', name='graph')
    def graph_fixture() -> Iterator[ControlGraph]:
        with control_session(parameters) as (emulator, graph):
            graph.emulator = emulator
            yield graph

    @pytest.fixture(scope='module', name='emulator')
    def emulator_fixture(graph: ControlGraph) -> Emulator:
        return graph.emulator

    return graph_fixture, emulator_fixture


class Requests:
    """The JSON requests the emulator receives from a point on, without their ids."""

    def __init__(self, emulator: Emulator) -> None:
        self._emulator = emulator
        self._start = emulator.requests.count

    def __call__(self) -> list[dict]:
        requests = self._emulator.requests.since(self._start)
        assert all(isinstance(request.pop('id', None), int) for request in requests)
        return requests


class ScriptedSimulator:
    """A control channel that answers each op with a fixed reply (its id added)."""

    def __init__(self, replies: dict[str, dict]) -> None:
        self.replies = replies
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self.listener.settimeout(5.0)
        self.thread = threading.Thread(target=self._serve, name='scripted-sim', daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        with connection, connection.makefile('rwb') as stream:
            stream.write(b'{"event":"episode","episode":0}\n')
            stream.flush()
            for line in stream:
                request = json.loads(line)
                reply = {**self.replies.get(request['op'], {'result': 0, 'ok': False}),
                         'id': request['id']}
                stream.write(json.dumps(reply).encode() + b'\n')
                stream.flush()

    def close(self) -> None:
        self.listener.close()
