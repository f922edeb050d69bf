#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Soak the sensor bridge: the emulator, the sensor_bridge executable and a subscriber, for long.

Three processes: ``acres_sim_emulator`` playing at ``--rate`` times real time, the
``sensor_bridge`` node on its stream, and this script's subscriber node, which takes the
agent's topics (serialised, so that Python does not have to convert clouds and images). The
world starts paused and plays once the subscriber has discovered every publisher.
Every ``--sample-s`` it prints the resident memory of each process and the messages received;
at the end it stops the emulator, lets the last messages arrive, and prints the losses: frames
the emulator dropped (its STOP log line), sequence gaps and bad frames the bridge saw, frames
the bridge received but did not publish, and messages the bridge published but the subscriber
never got. Exit code 0 when nothing was lost, 1 otherwise. Not part of CI::

    .venv/bin/python tools/soak.py --duration-s 600 --rate 5        # the documented run
    .venv/bin/python tools/soak.py --duration-s 60 --rate 5         # a short one

DDS discovery stays on this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST) in the domain
``--domain-id`` (57 unless given).
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Topic -> (message type path, the bridge's frame type that feeds it).
TOPICS = {
    '/clock': ('rosgraph_msgs.msg.Clock', 'clock'),
    'lidar/points': ('sensor_msgs.msg.PointCloud2', 'lidar'),
    'camera/image_raw': ('sensor_msgs.msg.Image', 'camera'),
    'camera/camera_info': ('sensor_msgs.msg.CameraInfo', 'camera'),
    'ins/fix': ('sensor_msgs.msg.NavSatFix', 'ins'),
    'ins/imu': ('sensor_msgs.msg.Imu', 'ins'),
    'ins/odometry': ('nav_msgs.msg.Odometry', 'ins'),
    'ground_truth/odometry': ('nav_msgs.msg.Odometry', 'ins'),
}
DEFAULT_TOPICS = ('/clock', 'lidar/points', 'camera/image_raw', 'ins/imu')
FRAME_TYPES = ('clock', 'ins', 'lidar', 'camera')
_STOP_LINE = re.compile(r'ACRES_SENSOR_STREAM_STOP .*')
_COUNTER = re.compile(r'(\w+)=(\d+)/([\d.]+)MB/drop(\d+)')


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration-s', type=float, default=600.0,
                        help='how long the emulator plays, wall seconds (default 600)')
    parser.add_argument('--rate', type=float, default=5.0,
                        help='the real-time factor of the emulator (default 5)')
    parser.add_argument('--mode', choices=('game', 'core'), default='game',
                        help='game (camera and LiDAR) or core (no camera); default game')
    parser.add_argument('--render-every', type=int, default=10,
                        help="the emulator's --render-every (default 10)")
    parser.add_argument('--sample-s', type=float, default=30.0,
                        help='the interval of the memory lines (default 30)')
    parser.add_argument('--all-topics', action='store_true',
                        help='subscribe to all 8 topics of the agent; by default /clock, '
                             'lidar/points, camera/image_raw and ins/imu (a Python subscriber '
                             'is slower than the bridge: it must not be what loses messages)')
    parser.add_argument('--dds', choices=('stock', 'profile'), default='stock',
                        help='stock: nothing of Fast DDS in the environment, as a new user has '
                             'it (the bridge applies its own settings; default); profile: the '
                             "package's profile for the prefix's Fast DDS in every process")
    parser.add_argument('--domain-id', type=int, default=57, help='ROS_DOMAIN_ID (default 57)')
    return parser.parse_args(argv)


def _environment(domain_id: int, configuration: str) -> dict[str, str]:
    """Set this process's DDS environment (its subscriber's) and return the children's."""
    from acres_bridge.runtime import dds
    from acres_devkit import dds_environment
    fast_dds = dds.find_fast_dds()
    for name in dds_environment.USER_VARIABLES:
        os.environ.pop(name, None)
    dds_environment.keep_discovery_local(os.environ, fast_dds)
    os.environ['ROS_DOMAIN_ID'] = str(domain_id)
    if configuration == 'profile':
        os.environ.update(dds_environment.shipped_profile_environment(fast_dds))
    os.environ.setdefault('RCUTILS_LOGGING_SEVERITY_THRESHOLD', 'WARN')
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))


def _import(path: str) -> type:
    module, _, name = path.rpartition('.')
    return getattr(__import__(module, fromlist=[name]), name)


class Subscriber:
    """
    A node that counts the messages of its topics and keeps the last diagnostics.

    It takes messages in a plain wait-set loop (``spin``): the rclpy executors add tens of
    microseconds per message, which on a loaded machine makes the subscriber, not the bridge,
    the one that falls behind.
    """

    def __init__(self, context: object, topics: list[str]) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.node import Node
        from rclpy.qos import HistoryPolicy
        from rclpy.qos import QoSProfile
        from rclpy.qos import ReliabilityPolicy
        from rosgraph_msgs.msg import Clock

        self.node = Node('soak_subscriber', context=context)
        self.counts = dict.fromkeys(topics, 0)
        self.clock_backwards = 0
        self.last_clock_s: float | None = None
        self.diagnostics: dict[str, str] = {}
        self._context = context
        self._lock = threading.Lock()
        self._clock_type = Clock
        self._diagnostics_type = DiagnosticArray

        def qos(depth: int) -> QoSProfile:
            return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                              reliability=ReliabilityPolicy.RELIABLE)

        self._subscriptions = {}
        for topic in topics:
            type_path, kind = TOPICS[topic]
            depth = 50 if kind in ('lidar', 'camera') else 1000
            self._subscriptions[topic] = self.node.create_subscription(
                _import(type_path), topic, lambda data: None, qos(depth),
                raw=topic != '/clock')
        self._diagnostics_subscription = self.node.create_subscription(
            DiagnosticArray, '/diagnostics', lambda message: None, qos(10))

    def spin(self, stop: threading.Event) -> None:
        """Take every message until ``stop`` is set."""
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
        entries = [(topic, subscription.handle, subscription.msg_type, topic != '/clock')
                   for topic, subscription in self._subscriptions.items()]
        diagnostics = self._diagnostics_subscription.handle
        handles = [handle for _, handle, _, _ in entries] + [diagnostics]
        with self._context.handle:
            for handle in handles:
                handle.__enter__()
            try:
                wait_set = _rclpy.WaitSet(len(handles), 0, 0, 0, 0, 0, self._context.handle)
                while not stop.is_set():
                    wait_set.clear_entities()
                    for handle in handles:
                        wait_set.add_subscription(handle)
                    wait_set.wait(100_000_000)
                    ready = wait_set.get_ready_entities('subscription')
                    for topic, handle, msg_type, raw in entries:
                        if handle.pointer in ready:
                            self._take(topic, handle, msg_type, raw)
                    if diagnostics.pointer in ready:
                        taken = diagnostics.take_message(self._diagnostics_type, False)
                        if taken is not None:
                            self._on_diagnostics(taken[0])
            finally:
                for handle in handles:
                    handle.__exit__(None, None, None)

    def _take(self, topic: str, handle: object, msg_type: type, raw: bool) -> None:
        while (taken := handle.take_message(msg_type, raw)) is not None:
            with self._lock:
                self.counts[topic] += 1
                if not raw:
                    clock = taken[0].clock
                    stamp_s = clock.sec + clock.nanosec * 1e-9
                    if self.last_clock_s is not None and stamp_s < self.last_clock_s:
                        self.clock_backwards += 1
                    self.last_clock_s = stamp_s

    def _on_diagnostics(self, message: object) -> None:
        for status in message.status:
            if 'sensor stream' in status.name:
                values = {value.key: value.value for value in status.values}
                values['_message'] = status.message
                with self._lock:
                    self.diagnostics = values

    def snapshot(self) -> tuple[dict[str, int], dict[str, str], float | None]:
        with self._lock:
            return dict(self.counts), dict(self.diagnostics), self.last_clock_s


def _rss_mb(pid: int) -> float:
    import psutil
    try:
        return psutil.Process(pid).memory_info().rss / (1 << 20)
    except psutil.Error:
        return float('nan')


def _start(arguments: list[str], environment: dict[str, str], log_path: str
           ) -> subprocess.Popen:
    log = open(log_path, 'w')
    return subprocess.Popen([sys.executable, *arguments], stdout=subprocess.PIPE, stderr=log,
                            text=True, env=environment, start_new_session=True)


def _stop(process: subprocess.Popen, timeout_s: float = 20.0) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout_s)
    return process.returncode


def _emulator_drops(log_path: str) -> dict[str, tuple[int, int]]:
    """Return frame type -> (frames, drops) from the emulator's STOP line."""
    with open(log_path) as log:
        lines = _STOP_LINE.findall(log.read())
    if not lines:
        return {}
    return {name: (int(frames), int(drops))
            for name, frames, _, drops in _COUNTER.findall(lines[-1])}


def _set_state(control_port: int, state: int) -> None:
    from acres_bridge.protocol.control_client import ControlClient
    client = ControlClient('127.0.0.1', control_port, timeout_s=10.0)
    client.start()
    try:
        deadline = time.monotonic() + 10.0
        while not client.connected and time.monotonic() < deadline:
            time.sleep(0.05)
        reply = client.request('set_state', state=state)
        if not reply.get('ok'):
            print(f'soak: set_state {state} failed: {reply}', file=sys.stderr)
    finally:
        client.stop()


def _drained(subscriber: Subscriber, quiet_s: float = 3.0, limit_s: float = 60.0):
    """Wait until the subscriber's counts stand still for ``quiet_s``; return the snapshot."""
    last = subscriber.snapshot()
    still_since = time.monotonic()
    deadline = still_since + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = subscriber.snapshot()
        frames = [now[1].get(f'{kind}.frames') for kind in FRAME_TYPES]
        if now[0] != last[0] or frames != [last[1].get(f'{kind}.frames')
                                           for kind in FRAME_TYPES]:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= quiet_s:
            break
    return last


def main(argv: list[str] | None = None) -> int:
    """Run the soak and print memory over time and the losses; 0 when nothing was lost."""
    options = _arguments(argv)
    environment = _environment(options.domain_id, options.dds)
    import rclpy

    logs = os.path.join(ROOT, 'log', 'soak')
    os.makedirs(logs, exist_ok=True)
    emulator_log = os.path.join(logs, 'emulator.log')
    bridge_log = os.path.join(logs, 'sensor_bridge.log')
    # Paused until the subscriber has found every publisher: messages published before DDS
    # discovery matched them would count as lost.
    emulator = _start(['-m', 'acres_bridge.emulator', '--control-port', 'any', '--sensor-ports',
                       '0', '--lockstep', '--rate', str(options.rate), '--mode', options.mode,
                       '--render-every', str(options.render_every)], environment, emulator_log)
    ready = emulator.stdout.readline().split()
    if not ready or ready[0] != 'ACRES_SIM_EMULATOR_READY':
        print(f'soak: the emulator did not start (see {emulator_log})', file=sys.stderr)
        _stop(emulator)
        return 2
    ports = dict(item.split('=') for item in ready[1:])
    sensor_port, control_port = int(ports['sensors']), int(ports['control'])

    context = rclpy.Context()
    rclpy.init(context=context)
    subscriber = Subscriber(context, list(TOPICS) if options.all_topics else
                            list(DEFAULT_TOPICS))
    stop_spinning = threading.Event()
    spinner = threading.Thread(target=subscriber.spin, args=(stop_spinning,),
                               name='soak-subscriber', daemon=True)
    spinner.start()
    bridge = _start(['-m', 'acres_bridge.nodes.sensor_bridge', '--ros-args', '-p',
                     f'port:={sensor_port}', '-p', 'reconnect_s:=0.5'], environment, bridge_log)
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline and not all(
            subscriber.node.count_publishers(topic) for topic in subscriber.counts):
        time.sleep(0.1)
    _set_state(control_port, 1)
    print(f'soak: emulator pid {emulator.pid} (rate {options.rate:g}, {options.mode}, DDS '
          f'{options.dds}), '
          f'sensor_bridge pid {bridge.pid}, subscriber pid {os.getpid()}, '
          f'{options.duration_s:g} s; logs in {logs}', flush=True)
    print(f'{"wall_s":>7} {"sim_s":>8} {"bridge_MB":>9} {"emulator_MB":>11} '
          f'{"subscriber_MB":>13} {"clock":>8} {"ins/imu":>8} {"lidar":>6} {"camera":>6}',
          flush=True)
    started = time.monotonic()
    rss_bridge: list[float] = []
    try:
        next_sample = started
        while True:
            now = time.monotonic()
            if now >= next_sample or now - started >= options.duration_s:
                counts, _, clock_s = subscriber.snapshot()
                rss_bridge.append(_rss_mb(bridge.pid))
                print(f'{now - started:7.0f} {clock_s or 0.0:8.1f} {rss_bridge[-1]:9.1f} '
                      f'{_rss_mb(emulator.pid):11.1f} {_rss_mb(os.getpid()):13.1f} '
                      f'{counts["/clock"]:8d} {counts["ins/imu"]:8d} '
                      f'{counts["lidar/points"]:6d} {counts["camera/image_raw"]:6d}',
                      flush=True)
                next_sample += options.sample_s
            if now - started >= options.duration_s:
                break
            if bridge.poll() is not None or emulator.poll() is not None:
                print('soak: a process ended early', file=sys.stderr)
                break
            time.sleep(min(1.0, max(0.0, next_sample - time.monotonic())))
        # Pause the world, let the bridge and the subscriber drain, then stop the emulator:
        # what is still in flight at the end is not counted as lost.
        _set_state(control_port, 2)
        counts, diagnostics, clock_s = _drained(subscriber)
        emulator_code = _stop(emulator)
    finally:
        bridge_code = _stop(bridge)
        _stop(emulator)
        stop_spinning.set()
        spinner.join(5.0)
        subscriber.node.destroy_node()
        context.try_shutdown()

    return _report(options, counts, diagnostics, clock_s, rss_bridge, subscriber,
                   _emulator_drops(emulator_log), emulator_code, bridge_code,
                   time.monotonic() - started)


def _report(options: argparse.Namespace, counts: dict[str, int], diagnostics: dict[str, str],
            clock_s: float | None, rss_bridge: list[float], subscriber: Subscriber,
            drops: dict[str, tuple[int, int]], emulator_code: int, bridge_code: int,
            wall_s: float) -> int:
    lost = 0
    print(f'\nsoak: {wall_s:.0f} s wall, simulation reached {clock_s or 0.0:.1f} s '
          f'({(clock_s or 0.0) / options.duration_s:.2f}x real time; asked {options.rate:g}x)')
    if rss_bridge:
        settled = rss_bridge[min(2, len(rss_bridge) - 1)]
        print(f'bridge memory: first {rss_bridge[0]:.1f} MB, after warm-up {settled:.1f} MB, '
              f'last {rss_bridge[-1]:.1f} MB, max {max(rss_bridge):.1f} MB')
    print(f'{"type":8} {"emulator":>9} {"dropped":>8} {"received":>9} {"published":>10} '
          f'{"not_pub":>8} {"bad":>4}')
    for kind in FRAME_TYPES:
        sent, dropped = drops.get(kind, (-1, -1))
        received = int(diagnostics.get(f'{kind}.frames', '0'))
        published = int(diagnostics.get(f'{kind}.published', '0'))
        not_published = int(diagnostics.get(f'{kind}.dropped', '0'))
        bad = int(diagnostics.get(f'{kind}.bad', '0'))
        lost += max(dropped, 0) + not_published + bad + max(sent - received, 0)
        print(f'{kind:8} {sent:9d} {dropped:8d} {received:9d} {published:10d} '
              f'{not_published:8d} {bad:4d}')
    print(f'{"topic":22} {"published":>10} {"subscriber":>10} {"lost":>6}')
    for topic, count in counts.items():
        kind = TOPICS[topic][1]
        published = int(diagnostics.get(f'{kind}.published', '0'))
        missing = published - count
        lost += max(missing, 0)
        print(f'{topic:22} {published:10d} {count:10d} {missing:6d}')
    if diagnostics.get('last_bad_frame'):
        print(f'last bad frame: {diagnostics["last_bad_frame"]}')
    gaps = int(diagnostics.get('sequence_gaps', '0'))
    reconnects = int(diagnostics.get('reconnects', '0'))
    lost += gaps
    print(f'bridge: sequence gaps {gaps}, bad frames {diagnostics.get("bad_frames")}, '
          f'reconnects {reconnects}, callback errors {diagnostics.get("callback_errors")}, '
          f'clock going backwards {subscriber.clock_backwards}, exit codes emulator '
          f'{emulator_code} bridge {bridge_code}')
    print(f'soak: {"no losses" if lost == 0 else f"{lost} frames or messages lost"}')
    return 0 if lost == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
