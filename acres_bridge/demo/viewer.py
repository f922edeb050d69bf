# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A live viewer of the bridge's topics, subscribing as any ROS client would.

For each agent namespace (``polaris`` by default) it subscribes to ``lidar/points``,
``camera/image_raw``, ``camera/camera_info``, ``ins/fix``, ``ins/imu``, ``ins/odometry`` and
``ground_truth/odometry``, and once to ``/clock``, ``/tf_static``, ``/tf`` and ``/diagnostics``.
It shows a table per topic, redrawn in place on a terminal and printed every few seconds
otherwise (the columns: :mod:`acres_bridge.demo.topic_table`).

Every ``picture_period_s`` it draws, per namespace, the latest camera image with the LiDAR
points of the nearest-stamped cloud projected into it (through ``/tf_static`` from the cloud
frame into the CameraInfo frame and CameraInfo ``k`` and ``d``, coloured by range) and a
bird's-eye view of the cloud in the root frame of the static tree (``base_footprint``), and
writes them as PNG files (``camera_lidar.png`` and ``birdseye.png`` for the first namespace,
``<namespace>_camera_lidar.png`` ... for the others) with a JSON summary
(``viewer_summary.json``) next to them.

Run: ``python -m acres_bridge.demo.viewer --namespaces polaris --out out/demo``.
"""

import argparse
from collections import deque
from collections.abc import Callable
from collections.abc import Sequence
import json
import math
import os
from pathlib import Path
import signal
import sys
import time
from typing import Any
from typing import TextIO

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription
from rclpy.task import Future
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo
from sensor_msgs.msg import Image
from sensor_msgs.msg import Imu
from sensor_msgs.msg import NavSatFix
from sensor_msgs.msg import PointCloud2
from tf2_msgs.msg import TFMessage

from acres_bridge.conversions.cdr import sequence_length
from acres_bridge.demo.pictures import apply_transform
from acres_bridge.demo.pictures import birds_eye_view
from acres_bridge.demo.pictures import camera_lidar_overlay
from acres_bridge.demo.pictures import cloud_xyz
from acres_bridge.demo.pictures import image_rgb
from acres_bridge.demo.pictures import StaticTransforms
from acres_bridge.demo.pictures import write_png
from acres_bridge.demo.topic_table import ClockHistory
from acres_bridge.demo.topic_table import Display
from acres_bridge.demo.topic_table import format_table
from acres_bridge.demo.topic_table import stamp_seconds
from acres_bridge.demo.topic_table import TopicStats

# The topics of one agent, relative to its namespace, and their types.
AGENT_TOPICS: tuple[tuple[str, type], ...] = (
    ('lidar/points', PointCloud2),
    ('camera/image_raw', Image),
    ('camera/camera_info', CameraInfo),
    ('ins/fix', NavSatFix),
    ('ins/imu', Imu),
    ('ins/odometry', Odometry),
    ('ground_truth/odometry', Odometry),
)
# The topics of the session, absolute.
SESSION_TOPICS: tuple[tuple[str, type], ...] = (
    ('/clock', Clock),
    ('/tf_static', TFMessage),
    ('/tf', TFMessage),
    ('/diagnostics', DiagnosticArray),
)
SUMMARY_NAME = 'viewer_summary.json'
# Newer rclpy passes the message info to two-argument callbacks; Humble's does not.
_WITH_MESSAGE_INFO = hasattr(Subscription, 'CallbackType')


class _Agent:
    """The latest messages of one namespace, serialised, for pictures: (stamp, bytes)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.clouds: deque[tuple[float, bytes]] = deque(maxlen=8)
        self.image: tuple[float, bytes] | None = None
        self.info: tuple[float, bytes] | None = None
        self.drawn_image_stamp_s: float | None = None
        self.pictures: dict[str, Any] = {}


class DemoViewer(Node):
    """
    Subscribe like a client, tabulate rates and ages, and draw pictures of the sensors.

    :param namespaces: the agent namespaces (``polaris``, ``maxxum``).
    :param out_dir: where the PNG files and ``viewer_summary.json`` go.
    :param picture_period_s: how often to draw the pictures (wall-clock seconds).
    :param display_period_s: how often to draw the table (on a terminal, twice a second).
    :param reliable: subscribe reliable (like rviz's default) or best effort.
    :param stream: where the table goes.
    :param on_pictures: called with the paths after each drawing that wrote any.
    """

    def __init__(self, namespaces: Sequence[str] = ('polaris',), *,
                 out_dir: Path | str = 'out/demo', picture_period_s: float = 2.0,
                 display_period_s: float = 5.0, reliable: bool = True,
                 stream: TextIO | None = None,
                 on_pictures: Callable[[list[Path]], None] | None = None,
                 **node_options: Any) -> None:
        super().__init__('acres_demo_viewer', **node_options)
        self.out_dir = Path(out_dir)
        self.display = Display(stream or sys.stdout)
        self.on_pictures = on_pictures
        self.picture_rounds = 0      # drawings in which every agent got both pictures
        self.static = StaticTransforms()
        self.clock = ClockHistory()
        self.started_s = time.time()
        self.stopped_at_s: float | None = None     # rates as of then, once the data stopped
        self.stats: dict[str, TopicStats] = {}
        self.agents = {name.strip('/'): _Agent(name.strip('/')) for name in namespaces}
        self._announced: set[Path] = set()
        reliability = ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT
        # Deep queues for the small, fast topics: a picture being drawn holds the executor for
        # a moment, and a shallow queue would lose samples the bridge delivered.
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=500, reliability=reliability)
        large_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=20,
                               reliability=reliability)
        static_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                                reliability=ReliabilityPolicy.RELIABLE,
                                durability=DurabilityPolicy.TRANSIENT_LOCAL)
        handlers = {'/clock': self._on_clock, '/tf_static': self._on_tf_static,
                    '/tf': self._on_tf, '/diagnostics': self._on_diagnostics}
        for topic, msg_type in SESSION_TOPICS:
            # Ages against the clock make sense for /tf only (the others carry no sensor stamp).
            stats = self._stats(topic, msg_type, aged=topic == '/tf')
            self._subscribe(msg_type, topic, handlers[topic], stats,
                            static_qos if topic == '/tf_static' else qos, large_qos)
        for agent in self.agents.values():
            for relative, msg_type in AGENT_TOPICS:
                topic = f'/{agent.namespace}/{relative}' if agent.namespace else f'/{relative}'
                self._subscribe(msg_type, topic, self._make_handler(agent, relative),
                                self._stats(topic, msg_type), qos, large_qos)
        tty_period_s = 0.5
        self.create_timer(tty_period_s if self.display.tty else display_period_s, self.show)
        self.create_timer(picture_period_s, self.draw_pictures)

    def _stats(self, topic: str, msg_type: type, *, aged: bool = True) -> TopicStats:
        package = msg_type.__module__.split('.')[0]
        stats = TopicStats(topic, f'{package}/{msg_type.__name__}', aged=aged)
        self.stats[topic] = stats
        return stats

    def _subscribe(self, msg_type: type, topic: str,
                   handler: Callable[[Any, float], float | None], stats: TopicStats,
                   qos: QoSProfile, large_qos: QoSProfile) -> None:
        """
        Subscribe with a callback that counts each message at its middleware receive time.

        Messages arrive serialised (``raw``): the stamp is read from the CDR bytes and only the
        messages drawn are deserialised, which keeps a Python viewer up with two agents'
        thousand-odd messages per second. ``/tf_static`` is deserialised (its transforms).
        """
        raw = topic != '/tf_static'
        large = msg_type in (PointCloud2, Image)

        def record(msg: Any, received_s: float, sent_s: float | None) -> None:
            stamp_s = handler(msg, received_s)
            stats.record(received_s, stamp_s, len(msg) if large else 0, sent_s)

        if _WITH_MESSAGE_INFO:
            def on_message(msg: Any, info: dict[str, Any]) -> None:
                # The middleware's send and receive times (system clock): the viewer's own
                # queueing and drawing do not count in rates and ages.
                received_ns = info.get('received_timestamp') or time.time_ns()
                sent_ns = info.get('source_timestamp') or 0
                # A transient-local sample may have been sent long before this reader joined.
                if qos.durability == DurabilityPolicy.TRANSIENT_LOCAL:
                    sent_ns = 0
                record(msg, received_ns * 1e-9, sent_ns * 1e-9)
        else:
            def on_message(msg: Any) -> None:    # Humble: no message info in rclpy
                record(msg, time.time(), None)
        self.create_subscription(msg_type, topic, on_message, large_qos if large else qos,
                                 raw=raw)

    # -- callbacks: cheap, on the executor; each returns the stamp to count ------------------

    def _on_clock(self, raw: bytes, received_s: float) -> float | None:
        clock_s = stamp_seconds(raw)
        if clock_s is not None:
            self.clock.add(received_s, clock_s)
        return clock_s

    def _on_tf_static(self, msg: TFMessage, received_s: float) -> None:
        self.static.add(msg.transforms)

    def _on_tf(self, raw: bytes, received_s: float) -> float | None:
        # TFMessage: a sequence length, then the first transform's header.
        return stamp_seconds(raw, offset=4) if sequence_length(raw) else None

    def _on_diagnostics(self, raw: bytes, received_s: float) -> float | None:
        return stamp_seconds(raw)

    def _make_handler(self, agent: _Agent, relative: str) -> Callable[[bytes, float], float]:
        def on_message(raw: bytes, received_s: float) -> float | None:
            stamp_s = stamp_seconds(raw)
            if stamp_s is None:
                return None
            if relative == 'lidar/points':
                agent.clouds.append((stamp_s, raw))
            elif relative == 'camera/image_raw':
                agent.image = (stamp_s, raw)
            elif relative == 'camera/camera_info':
                agent.info = (stamp_s, raw)
            return stamp_s
        return on_message

    # -- the table -------------------------------------------------------------------------

    def rows(self, now_s: float | None = None) -> list[dict[str, Any]]:
        """Return the lines of the table as figures: the session's topics, then each agent's."""
        now_s = (self.stopped_at_s or time.time()) if now_s is None else now_s
        return [stats.row(now_s, self.clock) for stats in self.stats.values()]

    def last_received_s(self) -> float | None:
        """Return when the latest message of any topic arrived."""
        return max((stats.last_received_s for stats in self.stats.values()
                    if stats.last_received_s is not None), default=None)

    def header(self) -> str:
        """Return the line above the table: times, real-time factor, frames."""
        now_s = self.stopped_at_s or time.time()
        parts = [f'wall {now_s - self.started_s:7.1f} s']
        if self.clock.latest_s is None:
            parts.append('sim -')
        else:
            parts.append(f'sim {self.clock.latest_s:9.3f} s')
            first_wall_s, first_sim_s = self.clock.first
            if now_s - first_wall_s > 0.5:
                factor = (self.clock.latest_s - first_sim_s) / (now_s - first_wall_s)
                parts.append(f'x{factor:.2f} real time')
        parts.append(f'tf_static frames {len(self.static.frames)}')
        return '   '.join(parts)

    def table(self) -> list[str]:
        """Return the lines of the table as shown now."""
        lines = format_table(self.rows(), self.header())
        for agent in self.agents.values():
            for key in ('overlay', 'birds_eye'):
                info = agent.pictures.get(key)
                if info:
                    lines.append(f'{key:>9}: {info["path"]}  ({info["points"]} points, '
                                 f'stamp {info["stamp_s"]:.3f} s)')
        return lines

    def show(self) -> None:
        """Draw the table."""
        self.display.show(self.table())

    # -- pictures --------------------------------------------------------------------------

    def draw_pictures(self) -> list[Path]:
        """Draw and write the pictures of every agent that has what they need; return paths."""
        written = []
        for agent in self.agents.values():
            written.extend(self._draw_agent(agent))
        if len(written) == 2 * len(self.agents):
            self.picture_rounds += 1
        if written:
            self.write_summary()
            fresh = [path for path in written if path not in self._announced]
            if fresh and not self.display.tty:
                self.display.note('pictures: ' + '  '.join(str(path) for path in fresh))
            self._announced.update(written)
            if self.on_pictures is not None:
                self.on_pictures(written)
        return written

    def _draw_agent(self, agent: _Agent) -> list[Path]:
        if not agent.clouds:
            return []
        written = []
        # The first agent's pictures have the plain names the README promises.
        first = agent is next(iter(self.agents.values()))
        prefix = '' if first else f'{agent.namespace}_'
        image = info = None
        if agent.image is not None:
            image_stamp_s = agent.image[0]
            cloud_stamp_s, cloud = min(agent.clouds,
                                       key=lambda item: abs(item[0] - image_stamp_s))
            image = deserialize_message(agent.image[1], Image)
            info = deserialize_message(agent.info[1], CameraInfo) if agent.info else None
        else:
            cloud_stamp_s, cloud = agent.clouds[-1]
        cloud = deserialize_message(cloud, PointCloud2)
        points = cloud_xyz(cloud)
        root = self.static.root(cloud.header.frame_id)
        to_root = self.static.lookup(root, cloud.header.frame_id)
        if to_root is not None and root != cloud.header.frame_id:
            picture = birds_eye_view(apply_transform(to_root, points))
            path = write_png(self.out_dir / f'{prefix}birdseye.png', picture.rgb)
            agent.pictures['birds_eye'] = {
                'path': str(path), 'points': picture.points, 'total': picture.total,
                'frame': root, 'stamp_s': cloud_stamp_s}
            written.append(path)
        if image is not None and info is not None and (
                image_stamp_s != agent.drawn_image_stamp_s or not written):
            to_camera = self.static.lookup(info.header.frame_id, cloud.header.frame_id)
            if to_camera is not None:
                picture = camera_lidar_overlay(image_rgb(image),
                                               apply_transform(to_camera, points),
                                               list(info.k), list(info.d))
                path = write_png(self.out_dir / f'{prefix}camera_lidar.png', picture.rgb)
                agent.pictures['overlay'] = {
                    'path': str(path), 'points': picture.points, 'total': picture.total,
                    'frame': info.header.frame_id, 'stamp_s': image_stamp_s,
                    'cloud_stamp_s': cloud_stamp_s,
                    'width': image.width, 'height': image.height}
                agent.drawn_image_stamp_s = image_stamp_s
                written.append(path)
        return written

    def summary(self) -> dict[str, Any]:
        """Return what the viewer saw: the table rows and the pictures, JSON-ready."""
        return {
            'wall_s': (self.stopped_at_s or time.time()) - self.started_s,
            'sim_time_s': self.clock.latest_s,
            'tf_static_frames': sorted(self.static.frames),
            'topics': {row['topic']: row for row in self.rows()},
            'pictures': {name: agent.pictures for name, agent in self.agents.items()},
        }

    def write_summary(self) -> Path:
        """Write ``viewer_summary.json`` into the output folder."""
        path = self.out_dir / SUMMARY_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + '.part')
        partial.write_text(json.dumps(self.summary(), indent=1, allow_nan=False,
                                      default=_json_default) + '\n')
        partial.replace(path)
        return path

    def finish(self) -> None:
        """Draw the last pictures, write the summary and print the final table once more."""
        # The figures as of the last message: the silence after a stop is not a falling rate.
        self.stopped_at_s = self.last_received_s()
        self.draw_pictures()
        self.write_summary()
        self.display.show(self.table())


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f'cannot write {type(value).__name__} as JSON')


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='acres_demo_viewer',
        description="Show the rates and ages of the bridge's topics and draw pictures of the "
                    'LiDAR and the camera.')
    parser.add_argument('--namespaces', default='polaris',
                        help='agent namespaces, comma separated (default polaris)')
    parser.add_argument('--out', default='out/demo', help='where pictures go (default out/demo)')
    parser.add_argument('--duration', type=float, default=None,
                        help='stop after this many seconds (default: until Ctrl-C)')
    parser.add_argument('--picture-period', type=float, default=2.0,
                        help='seconds between pictures (default 2)')
    parser.add_argument('--print-period', type=float, default=5.0,
                        help='seconds between tables when the output is not a terminal')
    parser.add_argument('--pictures', type=int, default=None,
                        help='stop once every namespace has had both pictures drawn this many '
                             'times')
    parser.add_argument('--best-effort', action='store_true',
                        help='subscribe best effort instead of reliable')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the viewer until Ctrl-C, SIGTERM, ``--duration`` or ``--pictures``."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    ros_args = rclpy.utilities.remove_ros_args(['viewer'] + args_in)[1:]
    args = _parser().parse_args(ros_args)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    try:
        # Ctrl-C and SIGTERM end the spin below rather than shut the context down under a
        # running executor: the viewer then draws its last pictures in order.
        rclpy.init(args=['viewer'] + args_in, signal_handler_options=SignalHandlerOptions.NO)
    except TypeError:                   # an rclpy without the option
        rclpy.init(args=['viewer'] + args_in)
    namespaces = [name.strip() for name in args.namespaces.split(',') if name.strip()]
    done = Future()

    def finish(*_: object) -> None:
        if not done.done() and (args.pictures is None or viewer.picture_rounds >= args.pictures):
            done.set_result(True)

    viewer = DemoViewer(namespaces, out_dir=args.out, picture_period_s=args.picture_period,
                        display_period_s=args.print_period, reliable=not args.best_effort,
                        on_pictures=finish if args.pictures is not None else None)
    wake = viewer.create_guard_condition(lambda: None)

    def on_signal(signum: int, frame: object) -> None:
        if not done.done():
            done.set_result(signum)
        wake.trigger()

    previous = {signum: signal.signal(signum, on_signal)
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        if args.duration is not None:
            viewer.create_timer(args.duration, lambda: done.done() or done.set_result(True))
        rclpy.spin_until_future_complete(viewer, done)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        viewer.finish()
        viewer.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
