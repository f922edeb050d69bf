# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A whole session in one process: the ``acres_bridge`` executable.

Two nodes share one executor: ``sim_control`` (the control channel's services, the action and
``acres/episode``) and ``acres_bridge``, which holds one :class:`SensorBridge` per agent that
has a sensor stream, each under the agent's name (``/polaris/lidar/points``), with ``/clock``
from agent 0 only (the agent whose ``index`` in hello is 0: when it has no stream, nothing
publishes /clock) and the agent's name as frame prefix when the session has several agents
(every agent of hello counts, with a stream or without) and no ``frame_prefix`` is set.

The agents come from the control channel's ``hello`` reply, which sim_control asks for on
every connection; the ports are the reply's ``sensor_stream`` values, or the ``sensor_ports``
parameter in agent order when it is set. The bridges are built once, on the executor (the
reply arrives on the control reader thread, where creating ROS entities is not safe); a later
``hello`` that names other agents or ports is reported, not followed, since topics cannot move
under running clients.

Lockstep (lockstep/coordinator.py): sim_control answers a step only after every connected stream
published the barrier of the step's reply and every reliable reader acknowledged every message
of the step (bounded by ``ack_timeout_s``), so a client that steps and then reads has all of it.

``sensor_processes`` says where the streams run: in this process (``in_process``), or each in
a child process of its own (``per_agent``: a ``sensor_bridge`` node in the agent's namespace,
sensors/agent_processes.py), which lockstep asks for each step's barrier and acknowledgements;
``auto`` takes per_agent for several agents when this process may use a core for each and two
more (runtime/cores.py: its affinity, capped by a container's CPU quota), and in_process
otherwise (on two cores one process carried more agents).
"""

import dataclasses
import threading

from rclpy.executors import Executor
from rclpy.node import Node

from acres_bridge.control.sim_control_node import SimControlNode
from acres_bridge.lockstep.coordinator import Lockstep
from acres_bridge.lockstep.delivery import DeliverySource
from acres_bridge.runtime.cores import usable_cores
from acres_bridge.runtime.parameters import destroyed_on_parameter_error
from acres_bridge.sensors.agent_processes import SensorProcess
from acres_bridge.sensors.parameters import SensorBridgeParameters
from acres_bridge.sensors.publishers import SharedPublishers
from acres_bridge.sensors.sensor_node import SensorBridge
from acres_bridge.session.parameters import BridgeParameters
from acres_bridge.session.parameters import declare_bridge_parameters


@dataclasses.dataclass(frozen=True, slots=True)
class SessionLayout:
    """
    The sensor streams of a session as its ``hello`` reply gives them.

    :ivar streams: (agent name, port) of every agent with a port, in index order.
    :ivar agent_count: every agent of the reply, with a stream or without.
    :ivar clock_agent: the name of agent 0 (``index`` 0), whose stream alone publishes /clock;
        None when the reply has no agent 0.
    """

    streams: tuple[tuple[str, int], ...] = ()
    agent_count: int = 0
    clock_agent: str | None = None

    @property
    def several(self) -> bool:
        """Whether the session has more than one agent (then frame ids carry agent names)."""
        return self.agent_count > 1


def session_layout(hello: dict, sensor_ports: tuple[int, ...]) -> SessionLayout:
    """
    Return the sensor streams, the agent count and agent 0 of a ``hello`` reply.

    An agent without ``index`` takes its position in the list (the seed lists agent 0 first).

    :param sensor_ports: ports in agent (index) order that replace the reply's (empty: use the
        reply's ``sensor_stream``); agents beyond the list keep the reply's port.
    """
    agents = [(agent.get('index', position), agent) for position, agent in
              enumerate(agent for agent in hello.get('agents') or [] if isinstance(agent, dict))]
    agents.sort(key=lambda item: item[0] if isinstance(item[0], int) else len(agents))
    streams = []
    clock_agent = None
    for position, (index, agent) in enumerate(agents):
        name = str(agent.get('name') or f'agent{index}')
        if index == 0 and clock_agent is None:
            clock_agent = name
        port = sensor_ports[position] if position < len(sensor_ports) else agent.get(
            'sensor_stream', 0)
        if isinstance(port, int) and 0 < port < 65536:
            streams.append((name, port))
    return SessionLayout(tuple(streams), len(agents), clock_agent)


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
        with destroyed_on_parameter_error(self.node.destroy_node):
            self.parameters: BridgeParameters = declare_bridge_parameters(self.node)
        self.shared = SharedPublishers(self.node)
        self.lockstep = Lockstep(self.node, barrier_timeout_s=self.parameters.timeout_s,
                                 ack_timeout_s=self.parameters.ack_timeout_s,
                                 match_timeout_s=self.parameters.match_timeout_s)
        self.bridges: list[SensorBridge] = []
        self.processes: list[SensorProcess] = []
        self._layout: SessionLayout | None = None
        self._lock = threading.Lock()
        self._destroyed = False
        self.control = SimControlNode(parameters=self.parameters.control(),
                                      barrier_hook=self.lockstep.hook(executor, self._streams),
                                      match_hook=self.lockstep.match_hook(
                                          executor, lambda: self._streams(starting=True)),
                                      on_hello=self._on_hello, **kwargs)
        self.shared.add_diagnostics(self.control.diagnostic_statuses)
        self.shared.add_diagnostics(
            lambda: self.lockstep.diagnostic_statuses(self._streams(starting=True)))
        executor.add_node(self.node)
        executor.add_node(self.control)

    @property
    def logger(self):
        return self.node.get_logger()

    def _on_hello(self, reply: dict) -> None:
        """Plan the bridges from a hello reply (control reader thread)."""
        layout = session_layout(reply, self.parameters.sensor_ports)
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

    def _build_bridges(self, layout: SessionLayout) -> None:
        """Create and start one sensor bridge per agent (an executor task)."""
        several = layout.several and not self.parameters.frame_prefix
        cores = usable_cores()
        per_agent = self.parameters.processes_per_agent(len(layout.streams), cores)
        with self._lock:
            if self._destroyed:
                return
            for agent, port in layout.streams:
                settings = self.parameters.sensor(
                    port, frame_prefix=agent if several else None,
                    publish_clock=self.parameters.publish_clock and agent == layout.clock_agent)
                if per_agent:
                    self._start_process(agent, settings)
                    continue
                bridge = SensorBridge(self.node, settings, name=agent, namespace=agent,
                                      shared=self.shared)
                self.shared.add_diagnostics(bridge.diagnostic_statuses)
                self.bridges.append(bridge)
                bridge.start()
        described = ', '.join(f'{agent} on port {port}' for agent, port in layout.streams)
        where = 'one process per agent' if per_agent else 'in this process'
        if self.parameters.sensor_processes == 'auto' and layout.several:
            where += f'; sensor_processes auto on {cores} cores'
        self.logger.info(f'sensor streams ({where}): '
                         f'{described or "none (no agent has a port)"}')
        if self.parameters.publish_clock and layout.clock_agent not in dict(layout.streams):
            self.logger.warning(
                f'agent 0 ({layout.clock_agent or "none in hello"}) has no sensor stream: '
                'nothing publishes /clock')

    def _start_process(self, agent: str, settings: SensorBridgeParameters) -> None:
        """Start one agent's sensor_bridge in a child process (sensor_processes per_agent)."""
        namespace = f'{self.node.get_namespace().rstrip("/")}/{agent}'
        process = SensorProcess(agent, namespace, settings,
                                ack_timeout_s=self.parameters.ack_timeout_s,
                                deadlines=self.lockstep.deadlines, node=self.node)
        process.start()
        self.shared.add_diagnostics(process.diagnostic_statuses)
        self.processes.append(process)

    def _streams(self, *, starting: bool = False) -> list[DeliverySource]:
        """
        Return the streams a step waits for (lockstep).

        Every connected bridge of this process and every running sensor process (which answers
        at once while its own stream is not connected). With ``starting`` (before a step is
        sent) also the bridges that have not had their first Hello: the step waits for them
        to come up, within the match time-out, as a stream that never connected has readers
        that expect the step too; a stream that was up and went down is left out.
        """
        with self._lock:
            streams = [bridge for bridge in self.bridges
                       if bridge.connected or (starting and bridge.hello is None)]
            running = [process for process in self.processes if process.running]
        return [self.lockstep.stream(bridge.name, bridge.topic_namespace, bridge.barriers,
                                     bridge.step_publishers,
                                     ready=lambda bridge=bridge: bridge.hello is not None)
                for bridge in streams] + running

    def destroy(self) -> None:
        """Stop every reader thread, then destroy the publishers and both nodes."""
        with self._lock:
            self._destroyed = True
            bridges, self.bridges = self.bridges, []
            processes, self.processes = self.processes, []
        self.lockstep.destroy()
        for process in processes:
            process.close_channel()     # every child ends at once, then each is waited for
        for process in processes:
            process.stop()
        for bridge in bridges:
            bridge.destroy()
        self.control.destroy_node()
        self.shared.destroy()
        self.node.destroy_node()
