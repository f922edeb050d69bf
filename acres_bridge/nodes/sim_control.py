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
sim_control: the simulator control channel as ROS 2 services, one action and one topic.

Every op of seed 004 has a service (the simulation_interfaces ones and ``acres/*``), ``step``
with progress is the ``simulate_steps`` action, and episode events go to ``acres/episode``
(transient local, depth 1). Every other service of simulation_interfaces is served too:
composed of ops (get_entities_states, spawn_entities, get_entity_info, get_current_world,
get_available_worlds; conversions/simulation.py builds their answers) or answering
RESULT_FEATURE_UNSUPPORTED at once. Names and meanings are in CONTRACT.md's sim_control
section.

Callbacks are ``async def`` in one reentrant callback group: each sends its request through
``ControlClient.request_async`` and awaits the reply future, which the control reader thread
completes; the executor never blocks on the socket. The node runs in any executor, alone
(``main``) or beside sensor bridges in one process, and takes a ``barrier_hook`` that
``step_simulation`` and ``simulate_steps`` await before answering (the lockstep guarantee).
"""

from collections.abc import Awaitable
from collections.abc import Callable
import concurrent.futures
import json
import re
import sys
import threading
from typing import Any

from acres_interfaces.msg import Episode
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.action import ActionServer
from rclpy.action import CancelResponse
from rclpy.action import GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import Executor
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from simulation_interfaces.msg import Result

from acres_bridge.conversions.acres import episode_from_event
from acres_bridge.conversions.acres import farm_state_fields
from acres_bridge.conversions.acres import farm_state_response
from acres_bridge.conversions.acres import field_query_fields
from acres_bridge.conversions.acres import hello_response
from acres_bridge.conversions.acres import record_fields
from acres_bridge.conversions.acres import set_conditions_fields
from acres_bridge.conversions.acres import vehicle_shift_fields
from acres_bridge.conversions.acres import vehicle_shifts_response
from acres_bridge.conversions.diagnostics import control_stats_to_status
from acres_bridge.conversions.messages import fill_message
from acres_bridge.conversions.messages import installed_interface
from acres_bridge.conversions.messages import ReplyError
from acres_bridge.conversions.simulation import add_warning
from acres_bridge.conversions.simulation import detect_shape
from acres_bridge.conversions.simulation import entities_states_from_replies
from acres_bridge.conversions.simulation import entity_filters_unsupported
from acres_bridge.conversions.simulation import entity_info
from acres_bridge.conversions.simulation import entity_names_from_reply
from acres_bridge.conversions.simulation import entity_state_from_reply
from acres_bridge.conversions.simulation import failed_result
from acres_bridge.conversions.simulation import failed_spawn_result
from acres_bridge.conversions.simulation import features_from_reply
from acres_bridge.conversions.simulation import filter_names
from acres_bridge.conversions.simulation import named_poses_from_reply
from acres_bridge.conversions.simulation import resource_string_unsupported
from acres_bridge.conversions.simulation import result_from_reply
from acres_bridge.conversions.simulation import served_features
from acres_bridge.conversions.simulation import set_entity_state_fields
from acres_bridge.conversions.simulation import simulation_state_from_reply
from acres_bridge.conversions.simulation import spawn_entity_fields
from acres_bridge.conversions.simulation import spawn_resource
from acres_bridge.conversions.simulation import spawn_result_from_reply
from acres_bridge.conversions.simulation import spawn_results_outcome
from acres_bridge.conversions.simulation import spawnables_from_reply
from acres_bridge.conversions.simulation import spawned_name
from acres_bridge.conversions.simulation import step_feedback
from acres_bridge.conversions.simulation import tags_match
from acres_bridge.conversions.simulation import UNSUPPORTED_SERVICES
from acres_bridge.conversions.simulation import world_from_hello
from acres_bridge.nodes.futures import FutureWaiter
from acres_bridge.nodes.logs import protocol_log
from acres_bridge.nodes.parameters import declare_sim_control_parameters
from acres_bridge.nodes.parameters import destroyed_on_parameter_error
from acres_bridge.nodes.parameters import SimControlParameters
from acres_bridge.nodes.process import run_until_shutdown
from acres_bridge.protocol.control import ControlClient
from acres_bridge.protocol.errors import ControlError
from acres_bridge.protocol.errors import ControlTimeout

DEFAULT_PHYSICS_HZ = 120
# A step may take this many times its simulated duration on the wall clock before it times
# out (the game needs about 2x with sensors; a loaded machine more).
STEP_WALL_FACTOR = 10.0

EPISODE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

RESULT_OK = Result.RESULT_OK
RESULT_NOT_FOUND = Result.RESULT_NOT_FOUND
RESULT_FEATURE_UNSUPPORTED = Result.RESULT_FEATURE_UNSUPPORTED
RESULT_OPERATION_FAILED = Result.RESULT_OPERATION_FAILED
# reset_simulation scope bits that remove the spawned entities (0 is the same as 255).
_SCOPE_SPAWNED = 4

BarrierHook = Callable[[int], Awaitable[Any]]
MatchHook = Callable[[], Awaitable[Any]]
Reply = dict[str, Any]


class SimControlNode(Node):
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
        simulation = 'simulation_interfaces'
        acres = 'acres_interfaces'
        return [
            ('get_simulator_features', simulation, 'GetSimulatorFeatures', 'hello',
             self._get_simulator_features),
            ('get_simulation_state', simulation, 'GetSimulationState', 'get_state',
             self._get_simulation_state),
            ('set_simulation_state', simulation, 'SetSimulationState', 'set_state',
             self._set_simulation_state),
            ('step_simulation', simulation, 'StepSimulation', 'step', self._step_simulation),
            ('reset_simulation', simulation, 'ResetSimulation', 'reset',
             self._reset_simulation),
            ('get_entities', simulation, 'GetEntities', 'get_entities', self._get_entities),
            ('get_entity_state', simulation, 'GetEntityState', 'get_entity_state',
             self._get_entity_state),
            ('set_entity_state', simulation, 'SetEntityState', 'set_entity_state',
             self._set_entity_state),
            ('spawn_entity', simulation, 'SpawnEntity', 'spawn_entity', self._spawn_entity),
            ('delete_entity', simulation, 'DeleteEntity', 'delete_entity',
             self._delete_entity),
            ('get_spawnables', simulation, 'GetSpawnables', 'get_spawnables',
             self._get_spawnables),
            ('get_named_poses', simulation, 'GetNamedPoses', 'get_named_poses',
             self._get_named_poses),
            ('get_entities_states', simulation, 'GetEntitiesStates',
             'get_entities + get_entity_state', self._get_entities_states),
            ('spawn_entities', simulation, 'SpawnEntities', 'spawn_entity',
             self._spawn_entities),
            ('get_entity_info', simulation, 'GetEntityInfo', 'get_entities',
             self._get_entity_info),
            ('get_current_world', simulation, 'GetCurrentWorld', 'hello',
             self._get_current_world),
            ('get_available_worlds', simulation, 'GetAvailableWorlds', 'hello',
             self._get_available_worlds),
        ] + [
            (name, simulation, _type_name(name), 'none', self._unsupported(reason))
            for name, reason in UNSUPPORTED_SERVICES.items()
        ] + [
            ('acres/hello', acres, 'Hello', 'hello', self._hello_service),
            ('acres/set_conditions', acres, 'SetConditions', 'set_conditions',
             self._set_conditions),
            ('acres/set_vehicle_shift', acres, 'SetVehicleShift', 'set_vehicle_shift',
             self._set_vehicle_shift),
            ('acres/get_vehicle_shifts', acres, 'GetVehicleShifts', 'get_vehicle_shifts',
             self._get_vehicle_shifts),
            ('acres/record', acres, 'Record', 'record', self._record),
            ('acres/farm_state', acres, 'FarmState', 'farm_state', self._farm_state),
            ('acres/field_query', acres, 'FieldQuery', 'field_query', self._field_query),
            ('acres/screenshot', acres, 'Screenshot', 'screenshot', self._screenshot),
        ]

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

    # --- simulation_interfaces services ------------------------------------------------------

    async def _get_simulator_features(self, request: Any, response: Any) -> None:
        try:
            reply = await self._reply('hello')
            features = features_from_reply(reply)
        except (ControlError, ReplyError) as exc:
            # The response has no result field: custom_info carries a failed reply instead.
            response.features.custom_info = json.dumps(
                {'ok': False, 'result': RESULT_OPERATION_FAILED, 'error': str(exc)})
            return
        self._remember_hello(reply)
        response.features.features = served_features(features, self.served)
        response.features.custom_info = json.dumps(reply)

    async def _get_simulation_state(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_state')
        if reply is not None:
            response.state = simulation_state_from_reply(reply)

    async def _set_simulation_state(self, request: Any, response: Any) -> None:
        await self._call(response, 'set_state', state=request.state.state)

    async def _step_simulation(self, request: Any, response: Any) -> None:
        await self._step(response, request.steps)

    async def _simulate_steps(self, goal_handle: Any) -> Any:
        action_type = self._simulate_steps_type
        steps = goal_handle.request.steps

        def on_progress(event: Reply) -> None:
            # On the control reader thread, in the order of the socket: all feedback goes out
            # before the reply completes the goal.
            goal_handle.publish_feedback(step_feedback(action_type.Feedback, event))

        result = action_type.Result()
        try:
            await self._step(result, steps, on_progress=on_progress, progress=True)
        except ReplyError as exc:
            result.result = failed_result(f'malformed step reply: {exc}')
        if result.result.result == RESULT_OK:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    async def _reset_simulation(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'reset', scope=request.scope)
        if (reply is not None and response.result.result == RESULT_OK
                and (request.scope == 0 or request.scope & _SCOPE_SPAWNED)):
            self._spawned.clear()

    async def _get_entities(self, request: Any, response: Any) -> list[str] | None:
        """Answer get_entities (or the names of get_entities_states); the names, or None."""
        filters = request.filters
        unsupported = entity_filters_unsupported(filters)
        if unsupported is not None:
            response.result = failed_result(unsupported, RESULT_FEATURE_UNSUPPORTED)
            return None
        try:
            filter_names([], filters.filter)
        except re.error as exc:
            response.result = failed_result(
                f'filters.filter {filters.filter!r} is not a regular expression: {exc}')
            return None
        reply = await self._call(response, 'get_entities')
        if reply is None or response.result.result != RESULT_OK:
            return None
        response.entities = filter_names(entity_names_from_reply(reply), filters.filter)
        return list(response.entities)

    async def _get_entity_state(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_entity_state', entity=request.entity)
        if reply is not None and response.result.result == RESULT_OK:
            response.state = entity_state_from_reply(reply)

    async def _set_entity_state(self, request: Any, response: Any) -> None:
        # 1.x has no flags: both parts apply. 2.x: a part not set is kept, which the op
        # cannot do by itself (it always applies a pose and a twist), so it is read first.
        set_pose = getattr(request, 'set_pose', True)
        set_twist = getattr(request, 'set_twist', True)
        current = None
        if not (set_pose and set_twist):
            current = await self._call(response, 'get_entity_state', entity=request.entity)
            if current is None or response.result.result != RESULT_OK:
                return
            if not (set_pose or set_twist):
                return       # nothing to change; the entity exists
        fields = set_entity_state_fields(request.entity, request.state, set_pose=set_pose,
                                         set_twist=set_twist, current=current)
        await self._call(response, 'set_entity_state', **fields)

    async def _spawn_entity(self, request: Any, response: Any) -> None:
        refused = resource_string_unsupported(*spawn_resource(request, self.shape))
        if refused is not None:
            response.result = failed_result(refused, RESULT_FEATURE_UNSUPPORTED)
            return
        fields = spawn_entity_fields(request, self.shape)
        reply = await self._call(response, 'spawn_entity', **fields)
        if reply is not None and 'entity' in reply:
            fill_message(response, {'entity_name': reply['entity']}, key='entity')
        self._remember_spawn(reply, fields['uri'])

    def _remember_spawn(self, reply: Reply | None, uri: str) -> None:
        name = spawned_name(reply) if reply is not None else None
        if name is not None:
            self._spawned[name] = uri

    async def _delete_entity(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'delete_entity', entity=request.entity)
        if reply is not None and response.result.result in (RESULT_OK, RESULT_NOT_FOUND):
            self._spawned.pop(request.entity, None)

    async def _get_spawnables(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_spawnables')
        if reply is None or response.result.result != RESULT_OK:
            return
        response.spawnables = spawnables_from_reply(reply, self.shape)
        sources = [source for source in request.sources if source]
        if sources:
            add_warning(response.result, 'the simulator has no other sources; not searched: '
                        + ', '.join(sources))

    async def _get_named_poses(self, request: Any, response: Any) -> None:
        try:
            tags_match([], request.tags)
        except ValueError as exc:
            response.result = failed_result(str(exc))
            return
        reply = await self._call(response, 'get_named_poses')
        if reply is not None and response.result.result == RESULT_OK:
            response.poses = [pose for pose in named_poses_from_reply(reply)
                              if tags_match(pose.tags, request.tags)]

    # --- simulation_interfaces services composed of ops --------------------------------------

    async def _get_entities_states(self, request: Any, response: Any) -> None:
        # The names as get_entities gives them, then every state requested at once (the
        # replies come in the order of the requests).
        names = await self._get_entities(request, response)
        response.entities = []
        if names is None:
            return
        waiting = [(name, self._send('get_entity_state', entity=name)) for name in names]
        replies = []
        for name, reply in waiting:
            try:
                replies.append((name, await reply))
            except ControlError as exc:
                response.result = failed_result(f'get_entity_state of {name!r}: {exc}')
                return
        response.entities, response.states, response.result = (
            entities_states_from_replies(replies))

    async def _spawn_entities(self, request: Any, response: Any) -> None:
        # Every spawn is sent at once, in the order of the requests, so renaming and name
        # clashes within the call come out as if they were sent one by one.
        pending = []
        for spawn in request.spawn_requests:
            refused = resource_string_unsupported(*spawn_resource(spawn))
            if refused is not None:
                pending.append((None, None, refused))
                continue
            fields = spawn_entity_fields(spawn)
            pending.append((fields['uri'], self._send('spawn_entity', **fields), None))
        results = []
        for uri, waiting_reply, refused in pending:
            if refused is not None:
                results.append(failed_spawn_result(refused, RESULT_FEATURE_UNSUPPORTED))
                continue
            try:
                reply = await waiting_reply
            except ControlError as exc:
                results.append(failed_spawn_result(str(exc)))
                continue
            try:
                results.append(spawn_result_from_reply(reply))
            except ReplyError as exc:
                results.append(failed_spawn_result(f'malformed spawn_entity reply: {exc}'))
                continue
            self._remember_spawn(reply, uri)
        response.results = results
        response.result = spawn_results_outcome(results)

    async def _get_entity_info(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_entities')
        if reply is None or response.result.result != RESULT_OK:
            return
        if request.entity not in entity_names_from_reply(reply):
            response.result = failed_result(f'no entity {request.entity!r}', RESULT_NOT_FOUND)
            return
        hello = self.hello
        if hello is None:
            hello = await self._call(response, 'hello')
            if hello is None or response.result.result != RESULT_OK:
                return
        response.info = entity_info(request.entity, hello, self._spawned)

    async def _get_current_world(self, request: Any, response: Any) -> None:
        world = await self._hello_world(response)
        if world is not None:
            response.world = world

    async def _get_available_worlds(self, request: Any, response: Any) -> None:
        if list(request.filter.tags):
            response.result = failed_result('worlds have no tags to filter by (feature '
                                            'WORLD_TAGS)', RESULT_FEATURE_UNSUPPORTED)
            return
        world = await self._hello_world(response)
        if world is None:
            return
        response.worlds = [world]
        sources = [source for source in request.additional_sources if source]
        if sources:
            add_warning(response.result, 'the simulator has only the map it runs; not '
                        'searched: ' + ', '.join(sources))

    async def _hello_world(self, response: Any) -> Any:
        """Return the world of a fresh hello (None with the result set when there is none)."""
        reply = await self._call(response, 'hello')
        if reply is None or response.result.result != RESULT_OK:
            return None
        self._remember_hello(reply)
        world = world_from_hello(reply)
        if world is None:
            response.result = failed_result('the simulator names no map',
                                            type(response).NO_WORLD_LOADED)
        return world

    def _unsupported(self, reason: str) -> Callable[..., Awaitable[None]]:
        """Return a handler that answers RESULT_FEATURE_UNSUPPORTED at once, sending nothing."""
        async def handler(request: Any, response: Any) -> None:
            response.result = failed_result(reason, RESULT_FEATURE_UNSUPPORTED)
        return handler

    # --- acres_interfaces services -----------------------------------------------------------

    async def _hello_service(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'hello')
        if reply is not None:
            hello_response(reply, response)
            self._remember_hello(reply)

    async def _set_conditions(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'set_conditions', set_conditions_fields(request))

    async def _set_vehicle_shift(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'set_vehicle_shift',
                           {'shift': vehicle_shift_fields(request.shift)})

    async def _get_vehicle_shifts(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'get_vehicle_shifts', {}, vehicle_shifts_response)

    async def _record(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'record', record_fields(request))

    async def _farm_state(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'farm_state', farm_state_fields(request),
                           farm_state_response)

    async def _field_query(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'field_query', field_query_fields(request))

    async def _screenshot(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'screenshot', {'path': request.path})

    async def _mirror(self, response: Any, op: str, fields: dict[str, Any],
                      fill: Callable[[Reply, Any], Any] | None = None) -> None:
        """Send an op and copy the reply's keys into the response fields of the same name."""
        reply = await self._call(response, op, **fields)
        if reply is None:
            return
        if fill is None:
            fill_message(response, reply, skip=('result',))
        else:
            fill(reply, response)


def _session_of(hello: Reply | None) -> Any:
    """Return what tells one simulator session from another: the start of its episode_id."""
    episode_id = (hello or {}).get('episode_id')
    return episode_id.split('-')[0] if isinstance(episode_id, str) else None


def _type_name(name: str) -> str:
    """Return the service type of a conventional name (GetEntityBounds: get_entity_bounds)."""
    return ''.join(part.capitalize() for part in name.split('_'))


def main(args: list[str] | None = None) -> int:
    """Run sim_control until Ctrl-C or shutdown; 2 for a bad parameter."""
    def build(executor: Executor) -> Callable[[], None]:
        node = SimControlNode()
        executor.add_node(node)
        return node.destroy_node

    return run_until_shutdown('sim_control', SingleThreadedExecutor, build, args)


if __name__ == '__main__':
    sys.exit(main())
