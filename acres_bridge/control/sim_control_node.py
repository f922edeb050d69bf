# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
sim_control: the simulator control channel as ROS 2 services, one action and one topic.

Every op of seed 004 has a service (the simulation_interfaces ones and ``acres/*``), ``step``
with progress is the ``simulate_steps`` action, and episode events go to ``acres/episode``
(transient local, depth 1). Every other service of simulation_interfaces is served too:
composed of ops (get_entities_states, spawn_entities, get_entity_info, get_current_world,
get_available_worlds; conversions/replies/simulation.py builds their answers) or answering
RESULT_FEATURE_UNSUPPORTED at once. Names and meanings are in CONTRACT.md's sim_control
section.

The handlers live in two mixins, one per interface package: control/simulation_services.py
and control/acres_services.py; this module keeps the node, the channel and its hello cache, the
service table's set-up, the step between the lockstep hooks and the episode events.

Callbacks are ``async def`` in one reentrant callback group: each sends its request through
``ControlClient.request_async`` and awaits the reply future, which the control reader thread
completes; the executor never blocks on the socket. The node runs in any executor, alone
(``main``) or beside sensor bridges in one process, and takes a ``barrier_hook`` that
``step_simulation`` and ``simulate_steps`` await before answering (the lockstep guarantee).
"""

from collections.abc import Awaitable
from collections.abc import Callable
import concurrent.futures
import threading
from typing import Any

from acres_interfaces.msg import Episode
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.action import ActionServer
from rclpy.action import CancelResponse
from rclpy.action import GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from simulation_interfaces.msg import Result

from acres_bridge.control.acres_services import AcresServices
from acres_bridge.control.parameters import declare_sim_control_parameters
from acres_bridge.control.parameters import SimControlParameters
from acres_bridge.control.simulation_services import SimulationServices
from acres_bridge.conversions.diagnostics import control_stats_to_status
from acres_bridge.conversions.replies.acres import episode_from_event
from acres_bridge.conversions.replies.responses import installed_interface
from acres_bridge.conversions.replies.responses import ReplyError
from acres_bridge.conversions.replies.simulation import add_warning
from acres_bridge.conversions.replies.simulation import detect_shape
from acres_bridge.conversions.replies.simulation import failed_result
from acres_bridge.conversions.replies.simulation import result_from_reply
from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.protocol.errors import ControlError
from acres_bridge.protocol.errors import ControlTimeout
from acres_bridge.runtime.futures import FutureWaiter
from acres_bridge.runtime.logs import protocol_log
from acres_bridge.runtime.parameters import destroyed_on_parameter_error

DEFAULT_PHYSICS_HZ = 120
# A step may take this many times its simulated duration on the wall clock before it times
# out (the game needs about 2x with sensors; a loaded machine more).
STEP_WALL_FACTOR = 10.0

EPISODE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

RESULT_OK = Result.RESULT_OK
RESULT_OPERATION_FAILED = Result.RESULT_OPERATION_FAILED

BarrierHook = Callable[[int], Awaitable[Any]]
MatchHook = Callable[[], Awaitable[Any]]
Reply = dict[str, Any]


class SimControlNode(SimulationServices, AcresServices, Node):
    """
    The control channel's ops as services, the simulate_steps action and acres/episode.

    :param node_name: the node name (``sim_control``).
    :param parameters: use these instead of declaring and reading the node's parameters
        (for a process that hosts several nodes and reads its parameters once).
    :param barrier_hook: awaited with the reply's ``barrier`` step after every successful
        step, before the service or the action answers; it may return any awaitable rclpy
        can await in a coroutine (an rclpy Future, a coroutine, a ``FutureWaiter``). An
        exception from it turns the answer into RESULT_OPERATION_FAILED with its text.
    :param match_hook: awaited before every step request is sent (lockstep: the sensor
        writers match every reader the session knows); what it returns may carry a
        ``warning``, added to the step's result message. An exception from it fails the step
        before anything is sent.
    :param on_hello: called on the control reader thread with each successful hello reply
        (one is requested on every connection).
    :param kwargs: passed to ``rclpy.node.Node`` (namespace, context, parameter_overrides...).
    :raises ParameterError: for a parameter the node cannot run with (the node is destroyed).
    """

    def __init__(self, node_name: str = 'sim_control', *,
                 parameters: SimControlParameters | None = None,
                 barrier_hook: BarrierHook | None = None,
                 match_hook: MatchHook | None = None,
                 on_hello: Callable[[Reply], None] | None = None, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        with destroyed_on_parameter_error(super().destroy_node):
            self.parameters = (parameters if parameters is not None
                               else declare_sim_control_parameters(self))
        self.shape = detect_shape()
        self.barrier_hook = barrier_hook
        self.match_hook = match_hook
        self._on_hello = on_hello
        self._hello_lock = threading.Lock()
        self._hello: Reply | None = None
        # The uri of each entity spawned through this node (name: uri), for get_entity_info.
        self._spawned: dict[str, str] = {}
        self._last_stats: dict[str, Any] | None = None
        self._group = ReentrantCallbackGroup()
        self._episode_publisher = self.create_publisher(Episode, 'acres/episode', EPISODE_QOS)
        self.served: list[str] = []
        # Not ``self._services``: rclpy's Node keeps its own services (the parameter services
        # among them) in that attribute.
        self._service_servers = [self._create_service(*spec)
                                 for spec in self._service_specs()]
        self._action_server = self._create_action_server()
        self.control = ControlClient(
            self.parameters.address, self.parameters.port, timeout_s=self.parameters.timeout_s,
            reconnect_s=self.parameters.reconnect_s, on_event=self._on_event,
            on_connection=self._on_connection, log=protocol_log(self.get_logger()))
        self.control.start()
        self.get_logger().info(
            f'serving {len(self.served)} interfaces (simulation_interfaces {self.shape.major}.x '
            f'shape) for the control channel at {self.parameters.host}:{self.parameters.port}')

    def destroy_node(self) -> None:
        """Stop the control client (failing waiting requests), then the ROS entities."""
        self.control.stop()
        if self._action_server is not None:
            self._action_server.destroy()
            self._action_server = None
        super().destroy_node()

    @property
    def hello(self) -> Reply | None:
        """The last successful hello reply, None before one."""
        with self._hello_lock:
            return self._hello

    @property
    def physics_hz(self) -> float:
        """The physics rate of the last hello reply (120 before one)."""
        hello = self.hello
        rate = hello.get('physics_hz') if hello is not None else None
        if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate > 0:
            return float(rate)
        return float(DEFAULT_PHYSICS_HZ)

    def diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Return the control channel's diagnostic status (for a /diagnostics publisher)."""
        stats = self.control.stats
        status = control_stats_to_status(
            stats, name=f'{self.get_name()}: control channel',
            hardware_id=f'{stats["address"]}:{stats["port"]}', previous=self._last_stats)
        self._last_stats = stats
        return [status]

    def step_timeout_s(self, steps: int) -> float:
        """Return the reply time-out of a step request: timeout_s plus time per step."""
        return self.parameters.timeout_s + steps / self.physics_hz * STEP_WALL_FACTOR

    # --- set-up ------------------------------------------------------------------------------

    def _service_specs(self) -> list[tuple[str, str, str, str, Callable[..., Awaitable[None]]]]:
        """Return (ROS name, package, type, op, handler) of every service."""
        return self._simulation_service_specs() + self._acres_service_specs()

    def _create_service(self, name: str, package: str, type_name: str, op: str,
                        handler: Callable[..., Awaitable[None]]) -> Any:
        srv_type = installed_interface(package, 'srv', type_name)
        if srv_type is None:
            self.get_logger().info(f'{package} has no srv/{type_name}: {name} not served')
            return None

        async def callback(request: Any, response: Any) -> Any:
            try:
                await handler(request, response)
            except ReplyError as exc:
                response.result = failed_result(f'malformed {op} reply: {exc}')
            except Exception as exc:  # noqa: B902 - every call is answered, none left waiting
                self.get_logger().error(f'{name} failed: {exc!r}')
                if hasattr(response, 'result'):
                    response.result = failed_result(f'{name} failed in the bridge: {exc!r}')
            return response

        self.served.append(name)
        return self.create_service(srv_type, name, callback, callback_group=self._group)

    def _create_action_server(self) -> ActionServer | None:
        action_type = installed_interface('simulation_interfaces', 'action', 'SimulateSteps')
        if action_type is None:
            self.get_logger().info(
                'simulation_interfaces has no action/SimulateSteps: simulate_steps not served')
            return None
        self.served.append('simulate_steps')
        self._simulate_steps_type = action_type
        return ActionServer(
            self, action_type, 'simulate_steps', execute_callback=self._simulate_steps,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda goal_handle: CancelResponse.REJECT,
            callback_group=self._group)

    # --- the control channel -----------------------------------------------------------------

    def _on_connection(self, connected: bool, reason: str) -> None:
        # The client logs the change itself (through protocol_log).
        if connected:
            self._ask_hello()

    def _ask_hello(self) -> None:
        self.control.request_async('hello').add_done_callback(self._hello_arrived)

    def _hello_arrived(self, future: concurrent.futures.Future) -> None:
        try:
            reply = future.result()
        except ControlError as exc:
            # A busy simulator may answer after the time-out (its late reply is dropped): ask
            # again while the connection lasts. Only then: a channel that closed fails the
            # request at once, and asking again before the client has seen the close spun in
            # a loop of failed sends; the next connection asks on its own.
            again = isinstance(exc, ControlTimeout) and self.control.connected
            self.get_logger().warning(
                f'no hello after connecting: {exc}{"; asking again" if again else ""}')
            if again:
                self._ask_hello()
            return
        self._remember_hello(reply)

    def _remember_hello(self, reply: Reply) -> None:
        if reply.get('result') != RESULT_OK:
            return
        with self._hello_lock:
            if _session_of(self._hello) != _session_of(reply):
                self._spawned.clear()       # another simulator session: other entities
            self._hello = reply
        if self._on_hello is not None:
            self._on_hello(reply)

    def _on_event(self, event: Reply) -> None:
        if event.get('event') != 'episode':
            return
        try:
            message = episode_from_event(event)
        except ReplyError as exc:
            self.get_logger().warning(f'skipped a malformed episode event: {exc}',
                                      throttle_duration_sec=5.0)
            return
        self._episode_publisher.publish(message)

    async def _reply(self, op: str, *, timeout_s: float | None = None,
                     on_progress: Callable[[Reply], None] | None = None,
                     **fields: Any) -> Reply:
        """Send one request and await its reply; ControlError when none came."""
        return await self._send(op, timeout_s=timeout_s, on_progress=on_progress, **fields)

    def _send(self, op: str, *, timeout_s: float | None = None,
              on_progress: Callable[[Reply], None] | None = None,
              **fields: Any) -> Awaitable[Reply]:
        """Send one request now; return an awaitable of its reply (several can be in flight)."""
        future = self.control.request_async(op, timeout_s=timeout_s, on_progress=on_progress,
                                            **fields)
        return FutureWaiter(future, self.executor)

    async def _call(self, response: Any, op: str, *, timeout_s: float | None = None,
                    on_progress: Callable[[Reply], None] | None = None,
                    **fields: Any) -> Reply | None:
        """
        Send one request; put its result code and error text into ``response.result``.

        :return: the reply, None when none came (result RESULT_OPERATION_FAILED saying why:
            not connected, closed, or no reply in time, with any lines that were not JSON).
        :raises ReplyError: when the reply has no valid result code.
        """
        bad_lines = self.control.stats['bad_lines']
        try:
            reply = await self._reply(op, timeout_s=timeout_s, on_progress=on_progress,
                                      **fields)
        except ControlError as exc:
            text = str(exc)
            if isinstance(exc, ControlTimeout):
                skipped = self.control.stats['bad_lines'] - bad_lines
                if skipped:
                    text += (f' ({skipped} line{"s" if skipped > 1 else ""} that '
                             f'{"were" if skipped > 1 else "was"} not JSON came meanwhile)')
                self.get_logger().warning(text, throttle_duration_sec=5.0)
            response.result = failed_result(text)
            return None
        response.result = result_from_reply(reply)
        return reply

    async def _step(self, result_holder: Any, steps: int, **fields: Any) -> None:
        """
        Send one step request between the two lockstep hooks; fill ``result_holder.result``.

        The match hook comes first: a step is sent only once the sensor writers have matched
        the readers the session knows (or the wait ran out, which the result then says).
        """
        warning = None
        if self.match_hook is not None:
            try:
                warning = getattr(await self.match_hook(), 'warning', None)
            except Exception as exc:  # noqa: B902 - the hook is the caller's: answer, never raise
                result_holder.result = failed_result(f'step not sent: {exc}')
                return
        reply = await self._call(result_holder, 'step', timeout_s=self.step_timeout_s(steps),
                                 steps=steps, **fields)
        if reply is not None and result_holder.result.result == RESULT_OK:
            await self._after_step(reply, result_holder.result)
        if warning:
            add_warning(result_holder.result, warning)

    async def _after_step(self, reply: Reply, result: Result) -> None:
        """
        Await the barrier hook with the step's barrier; a failure fails the result.

        What the hook returns may carry a ``warning`` (lockstep's StepReport: readers that did
        not acknowledge in time); it is added to the result's message, which stays a success.
        """
        if self.barrier_hook is None:
            return
        barrier = reply.get('barrier', reply.get('step'))
        if not isinstance(barrier, int) or isinstance(barrier, bool) or barrier < 0:
            raise ReplyError(f'barrier must be a step number, got {barrier!r}')
        try:
            report = await self.barrier_hook(barrier)
        except Exception as exc:  # noqa: B902 - the hook is the caller's: answer, never raise
            result.result = RESULT_OPERATION_FAILED
            result.error_message = (f'stepped to step {barrier}, but the sensor barrier '
                                    f'failed: {exc}')
            return
        warning = getattr(report, 'warning', None)
        if warning:
            add_warning(result, f'step {barrier}: {warning}')


def _session_of(hello: Reply | None) -> Any:
    """Return what tells one simulator session from another: the start of its episode_id."""
    episode_id = (hello or {}).get('episode_id')
    return episode_id.split('-')[0] if isinstance(episode_id, str) else None
