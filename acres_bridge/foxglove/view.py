# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The ``foxglove_view`` node: the ROS graph served to Foxglove clients over the WebSocket protocol.

The server is foxglove-sdk's (subprotocol ``foxglove.sdk.v1``). Every topic of the graph whose
type is a message and whose name ``include`` and ``exclude`` let through is a channel: schema
``ros2msg`` (the type's full definition, :mod:`acres_bridge.foxglove.definitions`), message
encoding ``cdr``. A topic is subscribed in ROS only while some client subscribes its channel, as
a serialised subscription (the CDR bytes go out as they came) with the QoS of its publishers:
reliable when all are, transient local when all are (``/tf_static``); the subscriptions are
taken in batches by a thread of their own (:mod:`acres_bridge.foxglove.subscriptions`), never by
the executor. The graph is polled
``GRAPH_PERIOD_S``; new topics are advertised, gone ones unadvertised, and the services of the
graph (but the parameter and type-description services of each node) are offered as Foxglove
services, called with a generic client of their type. The server's time is the node's clock:
simulation time with ``use_sim_time``. Each client has a queue of ``client_queue`` messages; the
SDK drops a slow client's oldest message when it is full, for that client only. /diagnostics
says, once a second, what is served and what each client was sent.
"""

import dataclasses
import importlib
import threading
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
import foxglove
from foxglove.websocket import Capability
from foxglove.websocket import ChannelView
from foxglove.websocket import Client as FoxgloveClient
from rcl_interfaces.msg import SetParametersResult
from rclpy.client import Client
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from rclpy.time import Time

from acres_bridge.conversions.diagnostics import diagnostic_array
from acres_bridge.foxglove.definitions import DefinitionError
from acres_bridge.foxglove.definitions import DefinitionLibrary
from acres_bridge.foxglove.definitions import split_type_name
from acres_bridge.foxglove.parameters import declare_foxglove_view_parameters
from acres_bridge.foxglove.subscriptions import ViewSubscriptions
from acres_bridge.runtime.parameters import destroyed_on_parameter_error
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.sensors.publishers import create_publisher
from acres_bridge.sensors.publishers import reliable_qos

GRAPH_PERIOD_S = 0.25
TIME_PERIOD_S = 0.25
DIAGNOSTICS_PERIOD_S = 1.0
# The depths of the view's readers, as the bridge's writers have them: a lockstep step's burst
# of clocks and INS epochs fits in SMALL_DEPTH, and a reader of clouds and images keeps no more
# than LARGE_DEPTH of them. (The graph does not tell a remote publisher's depth.)
SMALL_DEPTH = 200
LARGE_DEPTH = 10
LARGE_TYPES = frozenset(('sensor_msgs/msg/PointCloud2', 'sensor_msgs/msg/Image',
                         'sensor_msgs/msg/CompressedImage'))
SERVICE_WAIT_S = 5.0
# Before a call goes out, the view's readers of the subscribed topics get this long to match
# their publishers: a client that subscribes and steps at once gets the whole step.
READERS_WAIT_S = 2.0
SERVICE_TIMEOUT_S = 120.0
# Services every node has: Foxglove's parameter panel is the place for those.
NODE_SERVICES = ('describe_parameters', 'get_parameter_types', 'get_parameters',
                 'list_parameters', 'set_parameters', 'set_parameters_atomically',
                 'get_type_description')


@dataclasses.dataclass
class _Topic:
    """A served topic: its channel and the clients subscribed to it."""

    type_name: str
    channel: foxglove.Channel
    clients: set[int] = dataclasses.field(default_factory=set)
    # Messages handed to the SDK; only the readers' thread counts, so the count takes no lock.
    forwarded: int = 0


@dataclasses.dataclass
class _Service:
    """A served service: its ROS type, and the generic client made at its first call."""

    type_name: str
    service_type: type
    client: Client | None = None


def interface_type(type_name: str) -> type:
    """Return the Python class of ``pkg/msg/Type`` or ``pkg/srv/Type``."""
    package, kind, name = split_type_name(type_name)
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def publishers_qos(infos: list[Any], type_name: str) -> QoSProfile:
    """
    Return a subscription QoS of a type that matches every publisher of ``infos``.

    Reliable only when every publisher is (a reliable reader does not match a best-effort
    writer), transient local only when every publisher is (so ``/tf_static`` reaches a late
    client); LARGE_DEPTH for clouds and images, SMALL_DEPTH for the rest.
    """
    profiles = [info.qos_profile for info in infos]
    depth = LARGE_DEPTH if type_name in LARGE_TYPES else SMALL_DEPTH
    reliable = bool(profiles) and all(
        profile.reliability == ReliabilityPolicy.RELIABLE for profile in profiles)
    latched = bool(profiles) and all(
        profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for profile in profiles)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=depth,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


def served_service(name: str, type_name: str) -> bool:
    """Whether a service of the graph is offered: a ``srv`` type, not hidden, not a node's own."""
    if '/srv/' not in type_name or any(part.startswith('_') for part in name.split('/')):
        return False
    return name.rsplit('/', 1)[-1] not in NODE_SERVICES


class FoxgloveViewNode(Node):
    """
    Serve the ROS graph to Foxglove clients; also the SDK's server listener.

    The listener's callbacks come from the SDK's threads: they only note which client wants
    which channel and hand the ROS side to the executor. Service calls block an SDK thread
    (never the executor) until the ROS answer comes.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('foxglove_view', **kwargs)
        with destroyed_on_parameter_error(self.destroy_node):
            self.settings = declare_foxglove_view_parameters(self)
            self._definitions = DefinitionLibrary()
            self._view_lock = threading.Lock()
            self._served_topics: dict[str, _Topic] = {}
            self._topic_of_channel: dict[int, str] = {}
            self._served_services: dict[str, _Service] = {}
            self._left_out: set[tuple[str, str]] = set()
            # A client's messages_sent: what it was sent on channels it left, plus, per channel it
            # subscribes, the topic's count since then (counted per topic, not per message and
            # client, so that forwarding a message takes no lock).
            self._sent: dict[int, int] = {}
            self._sent_since: dict[tuple[int, str], int] = {}
            self._last_time_ns = -1
            self._sdk_context = foxglove.Context()
            self.server = self._start_server()
            self._readers = ViewSubscriptions(
                self, self._forward, lambda: self.get_clock().now().nanoseconds, self._set_time)
            self._take_over_the_clock()
        self.url = f'ws://{self.settings.address}:{self.server.port}'
        if self.settings.loopback:
            self.get_logger().info(f'Foxglove view on {self.url} (this machine only)')
        else:
            self.get_logger().warning(
                f'Foxglove view on {self.url}: open to the network of {self.settings.address}, '
                'not only this machine')
        self._diagnostics_publisher = create_publisher(
            self, DiagnosticArray, '/diagnostics', reliable_qos(10))
        steady = RosClock(clock_type=ClockType.STEADY_TIME)
        self._view_timers = [
            self.create_timer(GRAPH_PERIOD_S, self.refresh_graph, clock=steady),
            self.create_timer(TIME_PERIOD_S, self._broadcast_time, clock=steady),
            self.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics, clock=steady),
        ]
        self.refresh_graph()

    def _take_over_the_clock(self) -> None:
        """
        Follow /clock on the readers' thread, not with rclpy's time source.

        rclpy's time source makes each /clock message (120 a second at 1x) a Python object on the
        executor: a fifth of the view's CPU. Its subscription goes (``detach_node``; it still
        switches the node's clock when ``use_sim_time`` changes), and the readers set the clock
        from their own reader of /clock while ``use_sim_time`` is true. An rclpy whose node has
        no ``_time_source`` keeps its own subscription, and the readers read no clock.
        """
        time_source = getattr(self, '_time_source', None)
        if time_source is None:
            return
        time_source.detach_node()
        self._readers.follow_clock(self.get_parameter('use_sim_time').value is True)
        self.add_on_set_parameters_callback(self._follow_use_sim_time)

    def _follow_use_sim_time(self, parameters: list[Parameter]) -> SetParametersResult:
        for parameter in parameters:
            if parameter.name == 'use_sim_time' and isinstance(parameter.value, bool):
                self._readers.follow_clock(parameter.value)
        return SetParametersResult(successful=True)

    def _set_time(self, nanoseconds: int) -> None:
        """Set the node's clock to a /clock's time (the readers' thread)."""
        self.get_clock().set_ros_time_override(
            Time(nanoseconds=nanoseconds, clock_type=ClockType.ROS_TIME))

    def _start_server(self) -> foxglove.websocket.WebSocketServer:
        try:
            return foxglove.start_server(
                name='acres_bridge foxglove_view', host=self.settings.address,
                port=self.settings.port, capabilities=[Capability.Time, Capability.Services],
                server_listener=self, supported_encodings=['cdr'], context=self._sdk_context,
                message_backlog_size=self.settings.client_queue)
        except RuntimeError as exc:
            raise ParameterError(
                f'parameters address, port: cannot listen on {self.settings.address}:'
                f'{self.settings.port}: {exc}') from None

    # --- the graph (executor) --------------------------------------------------------------

    def refresh_graph(self) -> None:
        """Advertise new topics and services of the graph and unadvertise gone ones."""
        topics = {}
        for name, types in self.get_topic_names_and_types():
            if self.settings.serves(name) and types and self._present(name):
                topics[name] = types[0]
        for name, topic in list(self._served_topics.items()):
            if topics.get(name) != topic.type_name:
                self._remove_topic(name)
        for name, type_name in topics.items():
            if name not in self._served_topics:
                self._add_topic(name, type_name)
            self._reconcile(name)
        services = {name: types[0] for name, types in self.get_service_names_and_types()
                    if types and served_service(name, types[0])}
        gone = [name for name, service in self._served_services.items()
                if services.get(name) != service.type_name]
        for name in gone:
            client = self._served_services.pop(name).client
            if client is not None:
                self.destroy_client(client)
        if gone:
            self.server.remove_services(gone)
        added = [self._add_service(name, type_name) for name, type_name in services.items()
                 if name not in self._served_services]
        added = [service for service in added if service is not None]
        if added:
            self.server.add_services(added)

    def _present(self, name: str) -> bool:
        """Whether a topic is in the graph for its own sake, not only for this node's reader."""
        if self.count_publishers(name) > 0:
            return True
        return self.count_subscribers(name) > self._readers.count(name)

    def _add_topic(self, name: str, type_name: str) -> None:
        try:
            definition = self._definitions.message(type_name)
            interface_type(type_name)
        except (DefinitionError, ImportError, AttributeError) as exc:
            self._leave_out(name, type_name, exc)
            return
        channel = foxglove.Channel(
            name, message_encoding='cdr', context=self._sdk_context,
            schema=foxglove.Schema(name=type_name, encoding='ros2msg',
                                   data=definition.encode()))
        with self._view_lock:
            self._served_topics[name] = _Topic(type_name, channel)
            self._topic_of_channel[channel.id()] = name

    def _remove_topic(self, name: str) -> None:
        with self._view_lock:
            topic = self._served_topics.pop(name)
            self._topic_of_channel.pop(topic.channel.id(), None)
            for client in topic.clients:
                since = self._sent_since.pop((client, name), topic.forwarded)
                self._sent[client] = self._sent.get(client, 0) + topic.forwarded - since
        self._readers.unsubscribe(name)
        topic.channel.close()

    def _add_service(self, name: str, type_name: str) -> foxglove.Service | None:
        try:
            request, response = self._definitions.service(type_name)
            service_type = interface_type(type_name)
        except (DefinitionError, ImportError, AttributeError) as exc:
            self._leave_out(name, type_name, exc)
            return None
        self._served_services[name] = _Service(type_name, service_type)

        def schema(part: str, text: str) -> foxglove.MessageSchema:
            return foxglove.MessageSchema(encoding='cdr', schema=foxglove.Schema(
                name=f'{type_name}_{part}', encoding='ros2msg', data=text.encode()))

        return foxglove.Service(
            name, handler=self._call,
            schema=foxglove.ServiceSchema(type_name, request=schema('Request', request),
                                          response=schema('Response', response)))

    def _leave_out(self, name: str, type_name: str, reason: Exception) -> None:
        if (name, type_name) not in self._left_out:
            self._left_out.add((name, type_name))
            self.get_logger().info(f'not served: {name} ({type_name}): {reason}')

    def _reconcile(self, name: str) -> None:
        """Subscribe a topic while some client wants it, and only then (executor)."""
        with self._view_lock:
            topic = self._served_topics.get(name)
            if topic is None:
                return
            wanted = bool(topic.clients)
        if wanted:
            if self._readers.subscription(name) is None:
                self._readers.subscribe(
                    name, interface_type(topic.type_name),
                    publishers_qos(self.get_publishers_info_by_topic(name), topic.type_name))
        else:
            self._readers.unsubscribe(name)

    def _forward(self, name: str, data: bytes, log_time_ns: int) -> None:
        """Hand a message to the SDK (the readers' thread)."""
        topic = self._served_topics.get(name)
        if topic is not None:
            topic.channel.log(data, log_time=log_time_ns)
            topic.forwarded += 1

    # --- the SDK's server listener (SDK threads) ---------------------------------------------

    def on_subscribe(self, client: FoxgloveClient, channel: ChannelView) -> None:
        """Note the client's subscription; the executor subscribes in ROS."""
        self._follow(client.id, channel.id, subscribed=True)

    def on_unsubscribe(self, client: FoxgloveClient, channel: ChannelView) -> None:
        """Note the end of a subscription (also on disconnect); the executor unsubscribes."""
        self._follow(client.id, channel.id, subscribed=False)

    def _follow(self, client_id: int, channel_id: int, *, subscribed: bool) -> None:
        with self._view_lock:
            name = self._topic_of_channel.get(channel_id)
            topic = self._served_topics.get(name) if name is not None else None
            if topic is None:
                return
            if subscribed:
                if client_id not in topic.clients:
                    topic.clients.add(client_id)
                    self._sent_since[client_id, name] = topic.forwarded
                self._sent.setdefault(client_id, 0)
            elif client_id in topic.clients:
                topic.clients.discard(client_id)
                since = self._sent_since.pop((client_id, name), topic.forwarded)
                self._sent[client_id] = self._sent.get(client_id, 0) + topic.forwarded - since
        executor = self.executor
        if executor is not None:
            executor.create_task(self._reconcile, name)

    def _call(self, request: foxglove.ServiceRequest) -> bytes:
        """
        Call a ROS service for a client and return the CDR of its response.

        An exception's text goes back to the client as the call's failure.
        """
        service = self._served_services.get(request.service_name)
        if service is None:
            raise LookupError(f'{request.service_name} is not served')
        if request.encoding != 'cdr':
            raise ValueError(f'request encoding {request.encoding!r}; this view takes cdr')
        try:
            ros_request = deserialize_message(request.payload, service.service_type.Request)
        except Exception as exc:    # rclpy raises its own errors for bytes that are not CDR
            raise ValueError(f'the request is not a CDR {service.type_name} request: '
                             f'{exc}') from None
        client = self._client_of(request.service_name, service)
        if not client.wait_for_service(timeout_sec=SERVICE_WAIT_S):
            raise TimeoutError(f'{request.service_name} has no server')
        self._wait_for_readers(time.monotonic() + READERS_WAIT_S)
        done = threading.Event()
        future = client.call_async(ros_request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(SERVICE_TIMEOUT_S):
            client.remove_pending_request(future)
            raise TimeoutError(
                f'{request.service_name} did not answer within {SERVICE_TIMEOUT_S} s')
        # What arrived before the answer (a step's messages) goes out before it.
        self._readers.drain()
        return serialize_message(future.result())

    def _client_of(self, name: str, service: _Service) -> Client:
        """
        Return the service's client, made by the executor at the first call.

        Not made with the service's advertisement: some thirty idle clients would be thirty
        more entities for the executor to watch.
        """
        if service.client is None:
            made = threading.Event()

            def make() -> None:
                if service.client is None:
                    service.client = self.create_client(service.service_type, name)
                made.set()

            self.executor.create_task(make)
            if not made.wait(SERVICE_WAIT_S):
                raise TimeoutError(f'no client for {name} within {SERVICE_WAIT_S} s')
        return service.client

    def _wait_for_readers(self, deadline: float) -> None:
        """
        Wait until each topic a client subscribes has a ROS reader matched with its publishers.

        A step's messages go only to the readers the bridge knows of when it steps (lockstep
        waits for those); a reader created a moment before would miss its start.
        """
        pause = threading.Event()
        while time.monotonic() < deadline:
            with self._view_lock:
                topics = [(name, self._readers.subscription(name)) for name, topic in
                          self._served_topics.items() if topic.clients]
            if all(subscription is not None and (
                    subscription.get_publisher_count() > 0 or self.count_publishers(name) == 0)
                   for name, subscription in topics):
                return
            pause.wait(0.01)

    # --- time and diagnostics (executor) ----------------------------------------------------

    def _broadcast_time(self) -> None:
        now_ns = self.get_clock().now().nanoseconds
        if now_ns != self._last_time_ns:     # a paused simulation sends nothing new
            self._last_time_ns = now_ns
            self.server.broadcast_time(now_ns)

    def statuses(self) -> list[DiagnosticStatus]:
        """Return the view's diagnostic statuses: the server, then one per client."""
        with self._view_lock:
            subscribed = {name: sorted(topic.clients)
                          for name, topic in self._served_topics.items()}
            channels = len(self._served_topics)
            sent = dict(self._sent)
            for (client, name), since in self._sent_since.items():
                topic = self._served_topics.get(name)
                if topic is not None:
                    sent[client] = sent.get(client, 0) + topic.forwarded - since
        clients = sorted({client for ids in subscribed.values() for client in ids})
        server = DiagnosticStatus(
            level=DiagnosticStatus.OK, name='foxglove_view: server', hardware_id=self.url,
            message=f'{len(clients)} client(s) subscribed, {channels} channels',
            values=[KeyValue(key=key, value=str(value)) for key, value in (
                ('url', self.url), ('channels', channels),
                ('services', len(self._served_services)),
                ('ros_subscriptions', sum(1 for ids in subscribed.values() if ids)),
                ('client_queue', self.settings.client_queue))])
        statuses = [server]
        for client in clients:
            topics = [name for name, ids in subscribed.items() if client in ids]
            statuses.append(DiagnosticStatus(
                level=DiagnosticStatus.OK, name=f'foxglove_view: client {client}',
                hardware_id=self.url, message=f'{len(topics)} subscriptions',
                values=[KeyValue(key='subscriptions', value=str(len(topics))),
                        KeyValue(key='messages_sent', value=str(sent.get(client, 0))),
                        KeyValue(key='topics', value=' '.join(topics))]))
        return statuses

    def _publish_diagnostics(self) -> None:
        self._diagnostics_publisher.publish(
            diagnostic_array(self.statuses(), self.get_clock().now().to_msg()))

    def destroy_node(self) -> None:
        """Stop the server (its clients are disconnected), then the ROS side."""
        readers = getattr(self, '_readers', None)
        if readers is not None:
            readers.destroy()
        server = getattr(self, 'server', None)
        if server is not None:
            server.stop()
        for topic in list(getattr(self, '_served_topics', {}).values()):
            topic.channel.close()
        super().destroy_node()
