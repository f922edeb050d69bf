# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
One agent's sensor stream to ROS topics: the ``sensor_bridge`` node and the parts it is made of.

* :class:`SensorBridge` attaches one stream to a given node under a namespace relative to the
  node's (``polaris`` -> ``polaris/lidar/points``). Its reader thread ``sensor-rx:<name>``
  decodes, converts and publishes each frame, but hands clouds and images to a
  ``sensor-tx:<name>/lidar`` and a ``sensor-tx:<name>/camera`` thread (sensors/outbox.py), so
  that the clock and INS frames behind them need not wait while rmw sends them, and a cloud
  need not wait for the image that arrived with it; no thread creates or destroys an entity.
  ``camera/image_raw/compressed`` is encoded only while it has a subscriber, on a
  ``sensor-enc:<name>`` thread (sensors/image_encoder.py). Its ``barriers`` (lockstep's
  :class:`BarrierTracker`) tell when the barrier of a step is out, which is after the step's
  clouds, images and compressed images.
* What the bridges on one node share (``/tf``, ``/tf_static``, ``/diagnostics``) is
  :class:`SharedPublishers` (sensors/publishers.py).
* :class:`SensorBridgeNode` is the ``sensor_bridge`` executable's node: parameters, one bridge,
  its diagnostics. Several bridges in one process and one executor (the ``acres_bridge``
  executable) attach :class:`SensorBridge` objects to one node with one ``SharedPublishers``.

Publisher QoS is reliable keep-last (overridable with the standard ``qos_overrides.<topic>``
parameters): depth :data:`SMALL_DEPTH` for clock, INS, camera info and barrier,
:data:`LARGE_DEPTH` for clouds and images, 100 for /tf, ``/tf_static`` transient local with
depth 1.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import time
from typing import Any

from acres_interfaces.msg import StepBarrier
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.publisher import Publisher
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo
from sensor_msgs.msg import CompressedImage
from sensor_msgs.msg import Image
from sensor_msgs.msg import Imu
from sensor_msgs.msg import NavSatFix
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header

from acres_bridge.conversions.camera import camera_info_cdr
from acres_bridge.conversions.clock import clock_frame_to_cdr
from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.conversions.diagnostics import FRAME_TYPES
from acres_bridge.conversions.diagnostics import stream_stats_to_status
from acres_bridge.conversions.ins import ins_frame_to_cdr
from acres_bridge.conversions.ins import ins_frame_to_transform_cdr
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.conversions.tf import AgentFrames
from acres_bridge.conversions.tf import hello_to_static_transforms
from acres_bridge.lockstep.barriers import BarrierTracker
from acres_bridge.protocol.frames import BarrierFrame
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.protocol.frames import ClockFrame
from acres_bridge.protocol.frames import Frame
from acres_bridge.protocol.frames import frame_name
from acres_bridge.protocol.frames import HelloFrame
from acres_bridge.protocol.frames import InsFrame
from acres_bridge.protocol.frames import LidarFrame
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.hello import LidarLayout
from acres_bridge.protocol.stream_client import SensorStreamClient
from acres_bridge.protocol.throttle import held_text
from acres_bridge.protocol.throttle import LOG_INTERVAL_S
from acres_bridge.protocol.throttle import LogThrottle
from acres_bridge.runtime.logs import protocol_log
from acres_bridge.runtime.parameters import destroyed_on_parameter_error
from acres_bridge.sensors.image_encoder import ImageEncoder
from acres_bridge.sensors.message_pool import MessagePool
from acres_bridge.sensors.message_pool import PooledMessage
from acres_bridge.sensors.outbox import Outbox
from acres_bridge.sensors.parameters import declare_sensor_bridge_parameters
from acres_bridge.sensors.parameters import SensorBridgeParameters
from acres_bridge.sensors.publishers import create_publisher
from acres_bridge.sensors.publishers import reliable_qos
from acres_bridge.sensors.publishers import SharedPublishers

# Keep-last depths. At ten times real time one agent sends 1200 clock, 1000 INS, 100 LiDAR and
# 100 camera frames per second. A reliable keep-last writer drops a sample it has to overwrite
# before every reader acknowledged it, so the history must outlast the acknowledgement round
# trip under load: 200 is 170 ms of clock at 10x; 10 clouds are 100 ms at 10x, 1 s in real
# time. Smaller depths lost clock and INS at 10x on a loaded machine, and clouds and images did
# not need more (docs/benchmarks.md, "Figures behind choices in the code"). The depth only
# matters with prompt heartbeats: stock Fast DDS repairs a missed sample 3 s later, long after
# any of these histories has dropped it.
SMALL_DEPTH = 200
LARGE_DEPTH = 10
# Cloud and image buffers per type: one being published while the reader fills the next.
LARGE_SLOTS = 2
# The frame types whose messages the reader hands to a sensor-tx thread, one thread each.
LARGE_KINDS = ('lidar', 'camera')
# How long the reader waits for the sensor-tx thread (a free buffer, room in its queue, or
# the clouds and images before a barrier) before it goes on without.
OUTBOX_WAIT_S = 1.0


def _transform_key(transforms: Iterable[TransformStamped]) -> tuple:
    """Return what identifies a set of static transforms (the stamp aside)."""
    return tuple(
        (t.header.frame_id, t.child_frame_id,
         (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z),
         (t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
          t.transform.rotation.w))
        for t in transforms)


@dataclasses.dataclass(frozen=True, slots=True)
class _Layout:
    """What the bridge takes from the Hello of the current connection."""

    hello: Hello | None
    frames: AgentFrames
    times: PointTimes


class SensorBridge:
    """
    Publish one agent's sensor stream on the topics of the contract, attached to a node.

    Topics are ``<namespace>/lidar/points`` ... relative to the node's namespace, plus
    ``/clock`` (with ``parameters.publish_clock``), ``/tf`` (with ``publish_tf`` ins or truth),
    ``/tf_static`` and ``/diagnostics`` through ``shared``. Build it on the thread that builds
    the node, then :meth:`start`; :meth:`destroy` stops and joins the reader before it
    destroys the publishers.

    :param node: the node the publishers belong to.
    :param parameters: the stream's settings (validated).
    :param name: names the reader thread (``sensor-rx:<name>``), the log lines and the
        diagnostic status; default: the namespace, else the node's name.
    :param namespace: a namespace relative to the node's, e.g. the agent's name; empty: the
        node's own.
    :param shared: the shared topics of the node; default: a new set owned by this bridge.
    """

    def __init__(self, node: Node, parameters: SensorBridgeParameters, *,
                 name: str | None = None, namespace: str = '',
                 shared: SharedPublishers | None = None) -> None:
        self.node = node
        self.parameters = parameters
        self.namespace = namespace.strip('/')
        self.name = name or self.namespace.replace('/', '.') or node.get_name()
        self._owns_shared = shared is None
        self._shared = shared if shared is not None else SharedPublishers(node)
        self._logger = node.get_logger()
        self._layout = _Layout(None, AgentFrames.of(None, parameters.frame_prefix),
                               self._point_times(None))
        self._static_key: tuple | None = None
        self._published = dict.fromkeys(FRAME_TYPES, 0)
        self._dropped = dict.fromkeys(FRAME_TYPES, 0)
        self._previous: dict[str, Any] | None = None
        self._drop_log = LogThrottle(LOG_INTERVAL_S)
        self._send_log = LogThrottle(LOG_INTERVAL_S)
        self.barriers = BarrierTracker()

        # A profile per publisher: rclpy writes the QoS overrides into the profile it is given.
        self._publishers: dict[str, Publisher] = {}
        self._clock = (self._create(Clock, '/clock', SMALL_DEPTH) if parameters.publish_clock
                       else None)
        self._cloud = self._create(PointCloud2, self._topic('lidar/points'), LARGE_DEPTH)
        self._image = self._create(Image, self._topic('camera/image_raw'), LARGE_DEPTH)
        self._encoder = None if parameters.compressed_format == 'none' else ImageEncoder(
            self.name, self._create(CompressedImage, self._topic('camera/image_raw/compressed'),
                                    LARGE_DEPTH),
            image_format=parameters.compressed_format,
            jpeg_quality=parameters.compressed_jpeg_quality,
            png_level=parameters.compressed_png_level, on_error=self._encode_failed)
        self._camera_info = self._create(CameraInfo, self._topic('camera/camera_info'),
                                         SMALL_DEPTH)
        self._fix = self._create(NavSatFix, self._topic('ins/fix'), SMALL_DEPTH)
        self._imu = self._create(Imu, self._topic('ins/imu'), SMALL_DEPTH)
        self._odometry = self._create(Odometry, self._topic('ins/odometry'), SMALL_DEPTH)
        self._truth = self._create(Odometry, self._topic('ground_truth/odometry'), SMALL_DEPTH)
        self._step_barrier = self._create(StepBarrier, self._topic('step_barrier'), SMALL_DEPTH)
        self._tf = self._shared.tf_publisher() if parameters.publish_tf != 'none' else None
        self._shared.add_diagnostics(self.diagnostic_statuses)
        self._handlers: dict[str, Callable[[Any], None]] = {
            'hello': self._publish_hello, 'clock': self._publish_clock,
            'ins': self._publish_ins, 'lidar': self._publish_lidar,
            'camera': self._publish_camera, 'barrier': self._publish_barrier}
        # Clouds and images go out serialised from buffers of a fixed size, which the reader
        # receives their payloads into (sensors/message_pool.py), published by the outbox.
        self._pool = MessagePool(parameters.point_fields, slots=LARGE_SLOTS,
                                 wait_s=OUTBOX_WAIT_S)
        self._configure_pool()
        # One outbox per type: a step's cloud and image arrive together, and one thread would
        # publish the second only once the first is out.
        self._outboxes = {kind: Outbox(f'{self.name}/{kind}', on_error=self._send_failed)
                          for kind in LARGE_KINDS}
        self._client = SensorStreamClient(
            parameters.address, parameters.port, name=self.name, on_frame=self._handle_frame,
            payload_target=self._pool.payload_target,
            reconnect_s=parameters.reconnect_s, log=protocol_log(self._logger))

    def _topic(self, name: str) -> str:
        return f'{self.namespace}/{name}' if self.namespace else name

    def _create(self, message_type: type, topic: str, depth: int) -> Publisher:
        publisher = create_publisher(self.node, message_type, topic, reliable_qos(depth))
        self._publishers[topic] = publisher
        return publisher

    # --- life cycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the reader thread: it connects, and reconnects every ``reconnect_s``."""
        for outbox in self._outboxes.values():
            outbox.start()
        if self._encoder is not None:
            self._encoder.start()
        self._client.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the reader thread, then the sensor-tx threads; nothing is published afterwards."""
        self._client.stop(timeout_s)
        for outbox in self._outboxes.values():
            outbox.stop(timeout_s)
        if self._encoder is not None:
            self._encoder.stop(timeout_s)

    def destroy(self) -> None:
        """Stop and join the reader, then destroy this bridge's publishers."""
        self.stop()
        self._shared.remove_diagnostics(self.diagnostic_statuses)
        self._shared.remove_static_transforms(self)
        for publisher in self._publishers.values():
            self.node.destroy_publisher(publisher)
        self._publishers.clear()
        if self._owns_shared:
            self._shared.destroy()

    # --- state -------------------------------------------------------------------------------

    @property
    def client(self) -> SensorStreamClient:
        """The stream's SensorStreamClient, with its ``stats``, ``hello`` and ``connected``."""
        return self._client

    @property
    def publishers(self) -> Mapping[str, Publisher]:
        """This bridge's own publishers by topic as created (``polaris/lidar/points``)."""
        return dict(self._publishers)

    @property
    def connected(self) -> bool:
        """Whether the stream is connected."""
        return self._client.connected

    @property
    def hello(self) -> Hello | None:
        """The Hello of the last connection (kept after a disconnection), None before one."""
        return self._layout.hello

    @property
    def frames(self) -> AgentFrames:
        """The frame ids the bridge stamps its messages with."""
        return self._layout.frames

    @property
    def stats(self) -> dict[str, Any]:
        """
        Return the client's statistics with the bridge's counters merged in.

        Adds ``published`` and ``dropped`` (frames received but not published) to each
        ``by_type`` entry and their totals at the top.
        """
        stats = self._client.stats
        published, dropped = dict(self._published), dict(self._dropped)
        for outbox in self._outboxes.values():
            for kind, failed in dict(outbox.failed).items():
                published[kind] -= failed
                dropped[kind] += failed
        for kind, figures in stats['by_type'].items():
            figures['published'] = published.get(kind, 0)
            figures['dropped'] = dropped.get(kind, 0)
        stats['published'] = sum(published.values())
        stats['dropped'] = sum(dropped.values())
        if self._encoder is not None:
            stats['compressed'] = self._encoder.stats
        return stats

    def diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Return the status of this stream for ``/diagnostics`` (one per call)."""
        stats = self.stats
        status = stream_stats_to_status(
            stats, name=f'{self.node.get_name()}: {self.name} sensor stream',
            hardware_id=f'{self.parameters.address}:{self.parameters.port}',
            previous=self._previous, hello=self.hello)
        self._previous = stats
        return [status]

    # --- lockstep ----------------------------------------------------------------------------

    @property
    def last_barrier(self) -> tuple[int, float] | None:
        """The (step, stamp_s) of the last barrier published, None before one."""
        return self.barriers.last

    @property
    def topic_namespace(self) -> str:
        """The absolute namespace of the stream's relative topics (``/polaris``)."""
        base = self.node.get_namespace().rstrip('/')
        return f'{base}/{self.namespace}' if self.namespace else (base or '/')

    def step_publishers(self) -> list[Publisher]:
        """Return the publishers of a step's messages: this bridge's own and ``/tf``."""
        publishers = list(self._publishers.values())
        return publishers + [self._tf] if self._tf is not None else publishers

    # --- the reader thread -------------------------------------------------------------------

    def _handle_frame(self, frame: Frame) -> None:
        kind = frame_name(frame.header.frame_type)
        try:
            self._handlers[kind](frame)
        except Exception as exc:
            # The top level of one frame on the reader thread: count it and go on.
            self._dropped[kind] += 1
            if not self.node.context.ok():
                return      # Ctrl-C shut the context down before destroy() stopped the reader
            held = self._drop_log.ready()
            if held is not None:
                self._logger.warning(
                    f'sensor stream {self.name}: {kind} frame {frame.header.sequence} not '
                    f'published: {type(exc).__name__}: {exc}' + held_text(held))
            return
        self._published[kind] += 1

    def _publish_hello(self, frame: HelloFrame) -> None:
        hello = frame.hello
        prefix = self.parameters.frame_prefix
        self._layout = _Layout(hello, AgentFrames.of(hello, prefix),
                               self._point_times(hello.lidar))
        self._configure_pool()
        transforms = hello_to_static_transforms(
            hello, stamp_to_time(frame.header.stamp_s), frame_prefix=prefix)
        key = _transform_key(transforms)
        if key != self._static_key:
            self._shared.set_static_transforms(self, transforms)
            self._static_key = key
        self._logger.info(
            f'sensor stream {self.name}: hello from agent {hello.agent} ({hello.vehicle}): '
            + ', '.join(_sensor_text(hello)))

    # Clock and INS go out serialised (publish(bytes)): building the message objects cost
    # most of the reader thread's time (docs/benchmarks.md, "Where the bridge's time goes").

    def _publish_clock(self, frame: ClockFrame) -> None:
        if self._clock is not None:
            self._clock.publish(clock_frame_to_cdr(frame))

    def _publish_ins(self, frame: InsFrame) -> None:
        body = self._layout.frames.base_footprint
        world = self.parameters.world_frame
        fix, imu, odometry, truth = ins_frame_to_cdr(frame, body_frame_id=body,
                                                     world_frame_id=world)
        self._fix.publish(fix)
        self._imu.publish(imu)
        self._odometry.publish(odometry)
        self._truth.publish(truth)
        if self._tf is not None:
            self._tf.publish(ins_frame_to_transform_cdr(
                frame, body_frame_id=body, world_frame_id=world,
                ground_truth=self.parameters.publish_tf != 'ins'))

    def _publish_lidar(self, frame: LidarFrame) -> None:
        self._send('lidar', self._cloud, self._pool.cloud(frame))

    def _send(self, kind: str, publisher: Publisher, message: PooledMessage) -> None:
        """Hand a serialised cloud or image to the sensor-tx thread of its type."""
        if not self._outboxes[kind].put(kind, publisher, message, OUTBOX_WAIT_S):
            raise TimeoutError(f'the sensor-tx thread took no message for {OUTBOX_WAIT_S:g} s')

    def _send_failed(self, kind: str, exc: Exception) -> None:
        """Log a cloud or image the sensor-tx thread could not publish (it counted it)."""
        if not self.node.context.ok():
            return      # Ctrl-C shut the context down before destroy() stopped the thread
        held = self._send_log.ready()
        if held is not None:
            self._logger.warning(f'sensor stream {self.name}: a {kind} message was not '
                                 f'published: {type(exc).__name__}: {exc}' + held_text(held))

    def _encode_failed(self, exc: Exception) -> None:
        """Log a compressed image the encoder thread could not publish (it counted it)."""
        self._send_failed('compressed image', exc)

    def _point_times(self, lidar: LidarLayout | None) -> PointTimes:
        return PointTimes.of(lidar, sweep_s=self.parameters.lidar_sweep_s,
                             origin=self.parameters.point_time_origin)

    def _configure_pool(self) -> None:
        layout = self._layout
        self._pool.configure(layout.hello, lidar_frame_id=layout.frames.lidar,
                             camera_frame_id=layout.frames.camera_optical, times=layout.times)

    def _publish_camera(self, frame: CameraFrame) -> None:
        self._send('camera', self._image, self._pool.image(frame))
        layout = self._layout
        if layout.hello is not None:
            self._camera_info.publish(camera_info_cdr(
                layout.hello, frame_id=layout.frames.camera_optical,
                stamp_s=frame.header.stamp_s))
        # After the raw image is handed on: the copy for the encoder waits for nothing else.
        if self._encoder is not None and frame.encoding == 'bgr8' and self._encoder.wanted():
            self._encoder.put(frame, layout.frames.camera_optical)

    def _publish_barrier(self, frame: BarrierFrame) -> None:
        deadline = time.monotonic() + OUTBOX_WAIT_S
        # The step's compressed images too: only while the topic has a subscriber is there
        # anything to wait for (image_encoder.py).
        senders = [*self._outboxes.values(), *([self._encoder] if self._encoder else [])]
        drained = [sender.drain(max(0.0, deadline - time.monotonic())) for sender in senders]
        if not all(drained):
            held = self._send_log.ready()
            if held is not None:
                waiting = sum(sender.waiting for sender in senders)
                self._logger.warning(
                    f'sensor stream {self.name}: barrier of step {frame.step} published while '
                    f'{waiting} clouds and images before it were still not out '
                    f'after {OUTBOX_WAIT_S:g} s' + held_text(held))
        stamp_s = frame.header.stamp_s
        self._step_barrier.publish(StepBarrier(header=Header(stamp=stamp_to_time(stamp_s)),
                                               step=frame.step))
        self.barriers.published(frame.step, stamp_s)


def _sensor_text(hello: Hello) -> list[str]:
    parts = []
    if hello.lidar.enabled:
        parts.append(f'lidar {hello.lidar.columns} x {hello.lidar.rings} at {hello.lidar.hz:g} Hz')
    if hello.camera.enabled:
        parts.append(f'camera {hello.camera.width} x {hello.camera.height} at '
                     f'{hello.camera.hz:g} Hz')
    if hello.ins.enabled:
        parts.append(f'INS at {hello.ins.hz:g} Hz')
    return parts or ['no sensors enabled']


class SensorBridgeNode(Node):
    """
    The ``sensor_bridge`` node: one agent's sensor stream to topics (see the contract).

    :param node_name: the node's name.
    :param autostart: start the stream's reader at once; False leaves it to
        ``node.bridge.start()``.
    :param kwargs: passed to ``rclpy.node.Node`` (``context``, ``namespace``,
        ``parameter_overrides``, ``cli_args`` ...).
    :raises ParameterError: for a parameter the node cannot run with (the node is destroyed).
    """

    def __init__(self, node_name: str = 'sensor_bridge', *, autostart: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.bridge: SensorBridge | None = None
        with destroyed_on_parameter_error(super().destroy_node):
            self.parameters = declare_sensor_bridge_parameters(self)
        name = self.get_namespace().strip('/').replace('/', '.') or self.get_name()
        self.bridge = SensorBridge(self, self.parameters, name=name)
        if autostart:
            self.bridge.start()

    def destroy_node(self) -> None:
        """Stop and join the reader thread, then destroy the publishers and the node."""
        if self.bridge is not None:
            self.bridge.destroy()
            self.bridge = None
        super().destroy_node()
