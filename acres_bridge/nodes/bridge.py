# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
A whole session in one process: the ``acres_bridge`` executable.

Two nodes share one executor: ``sim_control`` (the control channel's services, the action and
``acres/episode``) and ``acres_bridge``, which holds one :class:`SensorBridge` per agent that
has a sensor stream, each under the agent's name (``/polaris/lidar/points``), with ``/clock``
from agent 0 only and the agent's name as frame prefix when the session has several agents
and no ``frame_prefix`` is set.

The agents come from the control channel's ``hello`` reply, which sim_control asks for on
every connection; the ports are the reply's ``sensor_stream`` values, or the ``sensor_ports``
parameter in agent order when it is set. The bridges are built once, on the executor (the
reply arrives on the control reader thread, where creating ROS entities is not safe); a later
``hello`` that names other agents or ports is reported, not followed, since topics cannot move
under running clients.

Lockstep: sim_control answers a step only after every connected stream published the barrier
of the step's reply, so a client that steps and then reads has every message of the step.
"""

from collections.abc import Awaitable
from collections.abc import Callable
import sys
import threading

from rclpy.executors import Executor
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from acres_bridge.nodes.parameters import BridgeParameters
from acres_bridge.nodes.parameters import declare_bridge_parameters
from acres_bridge.nodes.parameters import ParameterError
from acres_bridge.nodes.process import run_until_shutdown
from acres_bridge.nodes.sensor_bridge import barriers_future
from acres_bridge.nodes.sensor_bridge import SensorBridge
from acres_bridge.nodes.sensor_bridge import SharedPublishers
from acres_bridge.nodes.sim_control import FutureWaiter
from acres_bridge.nodes.sim_control import SimControlNode


def agents_and_ports(hello: dict, sensor_ports: tuple[int, ...]) -> list[tuple[str, int]]:
    """
    Pair each agent of a ``hello`` reply with its sensor stream port.

    :param sensor_ports: ports in agent order that replace the reply's (empty: use the reply's
        ``sensor_stream``); agents beyond the list keep the reply's port.
    :return: (agent name, port) for every agent with a port; agent 0 first.
    """
    agents = sorted(hello.get('agents') or [], key=lambda agent: agent.get('index', 0))
    pairs = []
    for position, agent in enumerate(agents):
        name = str(agent.get('name') or f'agent{position}')
        port = sensor_ports[position] if position < len(sensor_ports) else agent.get(
            'sensor_stream', 0)
        if isinstance(port, int) and 0 < port < 65536:
            pairs.append((name, port))
    return pairs


class SessionBridge:
    """
    sim_control and a sensor bridge per agent, on one executor.

    :param executor: the executor that spins both nodes (it must be spun by the caller).
    :param kwargs: passed to both nodes (``context``, ``parameter_overrides``, ``cli_args``).
    :raises ParameterError: for a parameter the session cannot run with.
    """

    def __init__(self, executor: Executor, **kwargs: object) -> None:
        self.executor = executor
        self.node = Node('acres_bridge', **kwargs)
        try:
            self.parameters: BridgeParameters = declare_bridge_parameters(self.node)
        except ParameterError:
            self.node.destroy_node()
            raise
        self.shared = SharedPublishers(self.node)
        self.bridges: list[SensorBridge] = []
        self._layout: list[tuple[str, int]] | None = None
        self._lock = threading.Lock()
        self._destroyed = False
        self.control = SimControlNode(parameters=self.parameters.control(),
                                      barrier_hook=self._barrier_hook,
                                      on_hello=self._on_hello, **kwargs)
        self.shared.add_diagnostics(self.control.diagnostic_statuses)
        executor.add_node(self.node)
        executor.add_node(self.control)

    @property
    def logger(self):
        return self.node.get_logger()

    def _on_hello(self, reply: dict) -> None:
        """Plan the bridges from a hello reply (control reader thread)."""
        layout = agents_and_ports(reply, self.parameters.sensor_ports)
        with self._lock:
            if self._destroyed:
                return
            if self._layout is None:
                self._layout = layout
                self.executor.create_task(self._build_bridges, layout)
                return
            changed = layout != self._layout
        if changed:
            self.logger.warning(
                f'the simulator now names agents and ports {layout}, the bridge runs '
                f'{self._layout}; restart the bridge to follow the new session')

    def _build_bridges(self, layout: list[tuple[str, int]]) -> None:
        """Create and start one sensor bridge per agent (an executor task)."""
        several = len(layout) > 1 and not self.parameters.frame_prefix
        with self._lock:
            if self._destroyed:
                return
            for index, (agent, port) in enumerate(layout):
                settings = self.parameters.sensor(
                    port, frame_prefix=agent if several else None,
                    publish_clock=self.parameters.publish_clock and index == 0)
                bridge = SensorBridge(self.node, settings, name=agent, namespace=agent,
                                      shared=self.shared)
                self.shared.add_diagnostics(bridge.diagnostic_statuses)
                self.bridges.append(bridge)
                bridge.start()
        described = ', '.join(f'{agent} on port {port}' for agent, port in layout)
        self.logger.info(f'sensor streams: {described or "none (no agent has a port)"}')

    def _barrier_hook(self, step: int) -> Awaitable:
        """Wait until every connected stream published the barrier of ``step``."""
        with self._lock:
            connected = [bridge for bridge in self.bridges if bridge.connected]
        future = barriers_future(connected, step, timeout_s=self.parameters.timeout_s)
        return FutureWaiter(future, self.executor)

    def destroy(self) -> None:
        """Stop every reader thread, then destroy the publishers and both nodes."""
        with self._lock:
            self._destroyed = True
            bridges, self.bridges = self.bridges, []
        for bridge in bridges:
            bridge.destroy()
        self.control.destroy_node()
        self.shared.destroy()
        self.node.destroy_node()


def main(args: list[str] | None = None) -> int:
    """Run a whole session until Ctrl-C or shutdown; 2 for a bad parameter."""
    def build(executor: Executor) -> Callable[[], None]:
        return SessionBridge(executor).destroy

    return run_until_shutdown('acres_bridge', lambda: MultiThreadedExecutor(num_threads=2),
                              build, args)


if __name__ == '__main__':
    sys.exit(main())
