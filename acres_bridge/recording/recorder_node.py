# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The ``lidar_recorder`` node: an organised PointCloud2 plus odometry to acres-lidar-dataset-1.

It subscribes to ``points_topic``, ``odometry_topic``, ``fix_topic`` and ``/tf_static`` (relative
names resolve in the node's namespace, so one recorder per agent lives under the agent's name),
publishes its state on ``/diagnostics`` once a second (scans, commits, skipped clouds, gaps),
and hands every message to :class:`~acres_bridge.dataset.recorder.LidarRecorder`, which writes
``<root>/<set>/<sequence>/``. The open shard is committed every ``commit_interval_s`` (10 s of
wall time), at each 256th scan and when the node is destroyed (Ctrl-C), so a crash loses at
most that much.
"""

import signal
import sys
import threading

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from nav_msgs.msg import Odometry
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sensor_msgs.msg import NavSatFix
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from acres_bridge.dataset.cloud import cloud_to_organised
from acres_bridge.dataset.cloud import mount_of
from acres_bridge.dataset.cloud import odometry_to_sample
from acres_bridge.dataset.cloud import stamp_ns_of
from acres_bridge.dataset.cloud import transforms_of
from acres_bridge.dataset.format import data_root
from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import META
from acres_bridge.dataset.recorder import default_sequence_name
from acres_bridge.dataset.recorder import LidarRecorder
from acres_bridge.protocol.throttle import LOG_INTERVAL_S
from acres_bridge.recording.parameters import declare_lidar_recorder_parameters
from acres_bridge.runtime.parameters import destroyed_on_parameter_error
from acres_bridge.runtime.parameters import ParameterError

# At ten times real time 100 clouds arrive per second: a second of them (about 92 MB) may wait
# while the process is short of CPU. Odometry comes at 1000/s at 10x, and the executor takes one
# message per subscription and wake-up, so behind a queue of clouds it falls behind: the queue
# holds 2 s of it at 10x, so that it arrives late (a scan's pose is rewritten until odometry
# after it came) rather than with holes the poses cannot be interpolated across (a 200-deep
# queue left scans without a pose: docs/benchmarks.md, "Figures behind choices in the code").
POINTS_DEPTH = 100
ODOMETRY_DEPTH = 2000
FIX_DEPTH = 100
POLL_PERIOD_S = 1.0
DIAGNOSTICS_PERIOD_S = 1.0
DIAGNOSTICS_DEPTH = 10


def _reliable(depth: int, *, latched: bool = False) -> QoSProfile:
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


class LidarRecorderNode(Node):
    """
    The node of the ``lidar_recorder`` executable.

    :raises ParameterError: for a bad parameter, or an existing sequence with ``existing``
        ``refuse`` (the node is destroyed).
    """

    def __init__(self, node_name: str = 'lidar_recorder', **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)
        with destroyed_on_parameter_error(super().destroy_node):
            settings = declare_lidar_recorder_parameters(self)
            root = data_root(settings.root or None)
            sequence = settings.sequence or default_sequence_name(self.get_namespace())
            folder = root / settings.set_name / sequence
            if settings.existing == 'refuse' and (folder / META).exists():
                raise ParameterError(f'parameter sequence: {folder} exists and existing is '
                                     'refuse; choose another sequence name')
        self.settings = settings
        self.points_topic = self.resolve_topic_name(settings.points_topic)
        odometry_topic = self.resolve_topic_name(settings.odometry_topic)
        ground_truth = 'ground_truth' in odometry_topic
        self.recorder = LidarRecorder(
            root, settings.set_name, sequence, split=settings.split, existing=settings.existing,
            ground_truth=ground_truth, log=self.get_logger().info,
            commit_interval_s=settings.commit_interval_s,
            source={'kind': 'ros', 'node': self.get_fully_qualified_name(),
                    'points_topic': self.points_topic, 'odometry_topic': odometry_topic,
                    'fix_topic': None if ground_truth else self.resolve_topic_name(
                        settings.fix_topic)})
        self.folder = folder
        self.failed: str | None = None
        self.skipped = 0
        self._lock = threading.Lock()
        self._transforms: dict[str, tuple] = {}
        self._frame_id: str | None = None
        self.create_subscription(PointCloud2, settings.points_topic, self._on_cloud,
                                 _reliable(POINTS_DEPTH))
        self.create_subscription(Odometry, settings.odometry_topic, self._on_odometry,
                                 _reliable(ODOMETRY_DEPTH))
        if not ground_truth:
            self.create_subscription(NavSatFix, settings.fix_topic, self._on_fix,
                                     _reliable(FIX_DEPTH))
        self.create_subscription(TFMessage, '/tf_static', self._on_tf_static,
                                 _reliable(100, latched=True))
        # Steady time: commits and /diagnostics go on while a simulation is paused.
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics',
                                                  _reliable(DIAGNOSTICS_DEPTH))
        self._reported_skipped = 0
        self._timer = self.create_timer(min(POLL_PERIOD_S, settings.commit_interval_s),
                                        self._poll,
                                        clock=RosClock(clock_type=ClockType.STEADY_TIME))
        self._diagnostics_timer = self.create_timer(
            DIAGNOSTICS_PERIOD_S, self._publish_diagnostics,
            clock=RosClock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f'recording {self.points_topic} with {odometry_topic} into {folder} '
            f'(split {settings.split})')

    @property
    def scans(self) -> int:
        """The scans recorded in the sequence (earlier runs included)."""
        writer = self.recorder.writer
        return 0 if writer is None else writer.scans

    @property
    def static_frames(self) -> set[str]:
        """The child frames of /tf_static received so far."""
        with self._lock:
            return set(self._transforms)

    def _on_cloud(self, message: PointCloud2) -> None:
        if self.failed is not None:
            self.skipped += 1
            return
        try:
            cloud = cloud_to_organised(message)
        except DatasetError as exc:
            self._skip(exc)
            return
        with self._lock:
            if self._frame_id != cloud.frame_id:
                self._frame_id = cloud.frame_id
                self._update_mount()
            try:
                self.recorder.add_cloud(cloud)
            except DatasetError as exc:
                if self.recorder.writer is None or self.recorder.writer.failed:
                    # Nothing can be recorded: an existing sequence of another shape, a full
                    # disk. One line, then the clouds are only counted.
                    self.failed = str(exc)
                    self.skipped += 1
                    self.get_logger().error(f'not recording: {exc}')
                else:
                    self._skip(exc)

    def _skip(self, exc: Exception) -> None:
        self.skipped += 1
        self.get_logger().warning(f'cloud skipped ({self.skipped} so far): {exc}',
                                  throttle_duration_sec=LOG_INTERVAL_S)

    def _on_odometry(self, message: Odometry) -> None:
        with self._lock:
            self.recorder.add_odometry(odometry_to_sample(message))

    def _on_fix(self, message: NavSatFix) -> None:
        with self._lock:
            self.recorder.add_fix_status(stamp_ns_of(message.header), message.status.status)

    def _on_tf_static(self, message: TFMessage) -> None:
        with self._lock:
            for parent, child, translation, rotation in transforms_of(message):
                self._transforms[child] = (parent, child, translation, rotation)
            self._update_mount()

    def _update_mount(self) -> None:
        if self._frame_id is not None:
            self.recorder.set_mount(mount_of(self._transforms.values(), self._frame_id))

    def _poll(self) -> None:
        if self.failed is None:
            with self._lock:
                try:
                    self.recorder.poll()
                except DatasetError as exc:
                    self.failed = str(exc)
                    self.get_logger().error(f'not recording: {exc}')

    def diagnostic_status(self) -> DiagnosticStatus:
        """
        Return the recorder's status for ``/diagnostics``.

        ERROR when it stopped recording, WARN when clouds were skipped since the last call, OK
        otherwise.
        """
        with self._lock:
            recorder = self.recorder
            writer = recorder.writer
            rows = recorder.rows
            values = {
                'folder': str(self.folder), 'points_topic': self.points_topic,
                'scans': 0 if writer is None else writer.scans,
                'committed': 0 if writer is None else writer.committed,
                'skipped_clouds': self.skipped, 'gaps': recorder.counts['gaps'],
                'clipped_returns': recorder.counts['clipped_returns'],
                'last_source_index': int(rows['source_index'][-1]) if len(rows) else 'n/a',
                'mount': 'known' if recorder.mount is not None else 'not yet (/tf_static)'}
        skipped = self.skipped - self._reported_skipped
        self._reported_skipped = self.skipped
        if self.failed is not None:
            level, message = DiagnosticStatus.ERROR, f'not recording: {self.failed}'
        elif skipped:
            level, message = DiagnosticStatus.WARN, f'{skipped} clouds skipped'
        elif writer is None:
            level, message = DiagnosticStatus.OK, 'waiting for the first cloud'
        else:
            level, message = DiagnosticStatus.OK, f'{values["scans"]} scans'
        return DiagnosticStatus(
            level=level, name=f'{self.get_name()}: {self.folder.name}', message=message,
            hardware_id=self.points_topic,
            values=[KeyValue(key=key, value=str(value)) for key, value in values.items()])

    def _publish_diagnostics(self) -> None:
        status = self.diagnostic_status()
        self._diagnostics.publish(DiagnosticArray(
            header=Header(stamp=self.get_clock().now().to_msg()), status=[status]))

    def close(self) -> None:
        """Commit the open shard and wait for the writes (idempotent)."""
        # rclpy wakes the executor on Ctrl-C and also lets Python raise KeyboardInterrupt in
        # the main thread, which can land here, after spinning stopped: the commit of the last
        # scans is finished rather than cut short, and a second Ctrl-C waits for it.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            with self._lock:
                for _ in range(3):
                    try:
                        self.recorder.close()
                        break
                    except KeyboardInterrupt:
                        continue
                    except DatasetError as exc:
                        self.get_logger().error(f'the last scans were not written: {exc}')
                        break
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        with self._lock:
            if self.recorder.writer is not None:
                line = f'{self.recorder.writer.scans} scans in {self.folder}'
                if self.context.ok():
                    self.get_logger().info(line)
                else:                   # after Ctrl-C: /rosout is gone, stderr is not
                    print(f'[lidar_recorder] {line}', file=sys.stderr, flush=True)

    def destroy_node(self) -> None:
        """Commit what is open, then destroy the subscriptions."""
        self.close()
        super().destroy_node()
