# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What the sensor bridges on one node share: ``/tf``, ``/tf_static`` and ``/diagnostics``.

``/tf_static`` is one transient-local writer whose message is the union of every bridge's
static transforms; ``/diagnostics`` is one array per second from a steady-clock timer of the
executor, gathered from every source added (streams, the control channel, lockstep). Also the
QoS of the bridge's publishers and the way they are created.
"""

from collections.abc import Callable
import threading

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import TransformStamped
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
try:
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import PublisherEventCallbacks
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from tf2_msgs.msg import TFMessage

from acres_bridge.conversions.diagnostics import diagnostic_array

TF_DEPTH = 100
DIAGNOSTICS_DEPTH = 10
DIAGNOSTICS_PERIOD_S = 1.0


def reliable_qos(depth: int) -> QoSProfile:
    """Return the QoS of the bridge's publishers: reliable, volatile, keep-last ``depth``."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def tf_static_qos() -> QoSProfile:
    """Return the QoS of ``/tf_static``: reliable, transient local, keep-last 1, as tf2's."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def create_publisher(node: Node, message_type: type, topic: str, qos: QoSProfile) -> Publisher:
    """
    Create a publisher whose QoS users may override and that adds nothing to the wait set.

    rclpy gives each publisher an incompatible-QoS event handler, a waitable of the executor's
    wait set; destroying it while an executor builds its wait set kills the executor
    (InvalidHandle). Without it a bridge can be destroyed while its node spins; a subscriber
    that asks for an incompatible QoS still hears about it from its own side.
    """
    return node.create_publisher(
        message_type, topic, qos,
        qos_overriding_options=QoSOverridingOptions.with_default_policies(),
        event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))


class SharedPublishers:
    """
    The topics every sensor bridge on one node shares: ``/tf``, ``/tf_static``, ``/diagnostics``.

    Create it, and call :meth:`tf_publisher` and :meth:`add_diagnostics`, on the thread that
    builds the node (they create entities); :meth:`set_static_transforms` and publishing are
    safe from any thread.

    :param diagnostics_period_s: the period of the ``/diagnostics`` timer (steady time, so it
        runs while the simulation is paused).
    """

    def __init__(self, node: Node, *, diagnostics_period_s: float = DIAGNOSTICS_PERIOD_S
                 ) -> None:
        self._node = node
        self._lock = threading.Lock()
        self._static: dict[int, list[TransformStamped]] = {}
        self._tf_static = create_publisher(node, TFMessage, '/tf_static', tf_static_qos())
        self._tf: Publisher | None = None
        self._diagnostics: Publisher | None = None
        self._timer = None
        self._diagnostics_period_s = diagnostics_period_s
        self._sources: list[Callable[[], list[DiagnosticStatus]]] = []

    def tf_publisher(self) -> Publisher:
        """Return the ``/tf`` publisher, created on the first call."""
        if self._tf is None:
            self._tf = create_publisher(self._node, TFMessage, '/tf', reliable_qos(TF_DEPTH))
        return self._tf

    def set_static_transforms(self, owner: object, transforms: list[TransformStamped]) -> None:
        """Replace the static transforms of ``owner`` and publish the union of all owners."""
        with self._lock:
            self._static[id(owner)] = list(transforms)
            self._publish_static_locked()

    def remove_static_transforms(self, owner: object) -> None:
        """Forget the static transforms of ``owner``; publish the rest if it had any."""
        with self._lock:
            if self._static.pop(id(owner), None) is not None and self._static and (
                    self._node.context.ok()):     # not after Ctrl-C shut the context down
                self._publish_static_locked()

    def _publish_static_locked(self) -> None:
        transforms = [transform for owned in self._static.values() for transform in owned]
        self._tf_static.publish(TFMessage(transforms=transforms))

    def add_diagnostics(self, source: Callable[[], list[DiagnosticStatus]]) -> None:
        """Add a source of statuses to the ``/diagnostics`` array (creates the timer once)."""
        if self._diagnostics is None:
            self._diagnostics = create_publisher(self._node, DiagnosticArray, '/diagnostics',
                                                 reliable_qos(DIAGNOSTICS_DEPTH))
            self._timer = self._node.create_timer(
                self._diagnostics_period_s, self.publish_diagnostics,
                clock=RosClock(clock_type=ClockType.STEADY_TIME))
        with self._lock:
            self._sources.append(source)

    def remove_diagnostics(self, source: Callable[[], list[DiagnosticStatus]]) -> None:
        """Remove a source of statuses."""
        with self._lock:
            if source in self._sources:
                self._sources.remove(source)

    def publish_diagnostics(self) -> None:
        """Publish one ``/diagnostics`` array of every source's statuses (the timer's job)."""
        with self._lock:
            sources = list(self._sources)
        if self._diagnostics is None or not sources:
            return
        statuses = [status for source in sources for status in source()]
        stamp = self._node.get_clock().now().to_msg()
        self._diagnostics.publish(diagnostic_array(statuses, stamp))

    def destroy(self) -> None:
        """Destroy the timer and the publishers."""
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
        for publisher in (self._diagnostics, self._tf, self._tf_static):
            if publisher is not None:
                self._node.destroy_publisher(publisher)
        self._diagnostics = self._tf = None
