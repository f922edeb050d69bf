#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the sensor bridge against the DDS floor: delivery, latency, CPU and memory.

For each DDS configuration (``stock``: nothing in the environment, as a new user runs it, so
the bridge applies its own settings and every other process has Fast DDS as it ships;
``profile``: the package's profile for the prefix's Fast DDS in every process), each drive
(``play`` at the factor; ``lockstep``: step requests paced at the factor, with step barriers)
and each real-time factor, two runs share one measuring subscriber:

``bridge``
    the emulator (Polaris, lockstep until the subscriber has matched, then playing or stepped
    at the factor) in its own process, the ``sensor_bridge`` executable in its own process, and
    the subscriber in a third.
``floor``
    a plain rclpy publisher process that publishes ready-made messages of the same sizes on the
    same topics at the same rates with the same QoS, measured by the same subscriber.

The subscriber takes every topic with ``raw=True`` (serialised messages, so its own
deserialisation does not count) and reads the header stamp out of the CDR bytes. The emulator
process records, for every frame it queues, the frame's stamp and publish time (the
CLOCK_MONOTONIC time that goes into the TSS1 header); the floor records the time just before
it publishes, or in lockstep the time it released the burst (all of a 12-step burst is ready
then, so the messages before one in the burst count in its latency, as in the bridge's).
Latency is receive time minus that publish time; delivery is the stamps received against the
frames sent (one message per frame and topic; CameraInfo with each image, four
messages per INS frame). Clock, INS and barrier are read by six subscriptions each:
reliable and best effort, keep-last 1, 10 and 1000.

    .venv/bin/python tools/benchmark.py --seconds 5 --rates 1 --configs stock   # a try
    .venv/bin/python tools/benchmark.py                    # the full run: 60 s, 1x and 10x
    .venv/bin/python tools/benchmark.py --distro jazzy     # every process from .venv-jazzy
    .venv/bin/python tools/benchmark.py --help

Results: docs/benchmarks.json, docs/benchmarks.md (a table), docs/benchmarks.png (latency and
loss against the real-time factor) unless ``--output-dir`` says otherwise.

``--hosts 2`` (root) runs the same bridge and floor across two hosts: two network namespaces
joined by a veth link (test/support/two_hosts.py), the emulator, the publisher (bridge or
floor) and a control-channel proxy on host A, the subscriber on host B, in play, for the
configurations of tools/bench_two_hosts.py (``own``, ``paced_bridge``, ``two_hosts_profile``).
Both hosts share one kernel, so the CLOCK_MONOTONIC times of the two sides compare directly.
Each repeat ends with the bridge and the floor on one host (stock, 1x), and prints the loss,
the cloud's p50 over the floor across the link and its ratio to the one-host bridge's; the
report goes to ``<output-dir>/benchmarks_two_hosts.json``. That comparison judges the cloud
by when the subscriber took it (``take_latency``; each run's line shows both), not by the
reception stamp: for a message sent in fragments (anything over 64 KB over UDP) Fast DDS
3.2 stamps the reception when the first fragment arrives and 2.14 when the last one does
(seen on the wire with a capture on host B), so only the take time means the same on both.
``--subscriber-distro`` runs host B's subscriber from another distribution's prefix (a Jazzy
bridge to a Kilted reader, say), so a delay can be placed on the writer's side or the reader's.

    sudo .venv/bin/python tools/benchmark.py --hosts 2 --repeat 3 --seconds 60 --rates 1 \
        --no-variants
"""

import argparse
from collections.abc import Mapping
from collections.abc import Sequence
import json
import math
import os
import platform
import queue
import shlex
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.dirname(os.path.abspath(__file__))
for _path in (ROOT, TOOLS):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import perf_split  # noqa: E402, I100  (tools/, beside this file)

from acres_bridge.runtime import dds  # noqa: E402  (no rclpy: the harness runs on any Python)

NAMESPACE = '/polaris'
PHYSICS_HZ = 120
DEFAULT_RATES = (1.0, 10.0)
# stock: nothing in the environment (the bridge applies its own settings, the floor and the
# subscriber have Fast DDS as it ships); profile: the package's profile for every process.
DEFAULT_CONFIGS = ('stock', 'profile')
# play: the emulator plays at the rate; lockstep: 12-step requests paced at the rate, each
# ending with a step barrier.
DEFAULT_DRIVES = ('play', 'lockstep')
LOCKSTEP_STEPS = 12
DISTRO_PREFIXES = {'kilted': '.venv', 'jazzy': '.venv-jazzy'}
WHEELS_BOOTSTRAPPED = '_ROS_WHEELS_BOOTSTRAP_COMPLETE'
DEFAULT_DOMAIN_ID = 42
START_TIMEOUT_S = 60.0
SUBSCRIBER_DEPTH = 1000
SUBSCRIBER_LARGE_DEPTH = 100
# The extra subscriptions of the small topics (reliability, depth); the plain topic name is
# the reliable depth-SUBSCRIBER_DEPTH one.
SUBSCRIBER_VARIANTS = (('reliable', 10), ('reliable', 1), ('best_effort', 1000),
                       ('best_effort', 10), ('best_effort', 1))
# Longer than Fast DDS's default heartbeat period (3 s): a sample that needs a repair at the
# end of a run still arrives (late: its latency shows) before the subscriber is stopped.
QUIET_S = 4.0
DRAIN_TIMEOUT_S = 30.0

# frame type (TSS1) -> the topics the bridge publishes for each frame of it
FRAME_TOPICS = {
    2: ('/clock',),
    3: ('ins/fix', 'ins/imu', 'ins/odometry', 'ground_truth/odometry'),
    4: ('lidar/points',),
    5: ('camera/image_raw', 'camera/camera_info'),
    6: ('step_barrier',),
}
TOPIC_FRAME = {topic: frame_type for frame_type, topics in FRAME_TOPICS.items()
               for topic in topics}
TOPICS = tuple(TOPIC_FRAME)
FRAME_KINDS = {2: 'clock', 3: 'ins', 4: 'lidar', 5: 'camera', 6: 'barrier'}
LARGE_TOPICS = frozenset(('lidar/points', 'camera/image_raw'))
# The topics of the issue-11 latency target, measured for every subscriber variant.
SMALL_TOPICS = ('/clock', 'ins/fix', 'ins/imu', 'ins/odometry', 'ground_truth/odometry',
                'step_barrier')
# the groups of the latency targets (added latency p50 in ms over the floor at 1x)
TARGET_ADDED_P50_MS = {'lidar/points': 1.0, 'camera/image_raw': 1.0, '/clock': 0.3,
                       'ins/imu': 0.3}
# The floor beside the bridge (--floor-beside): a plain publisher of clock, INS and barrier
# in the bridge's own run, under a namespace of its own, read by the same subscriber, so the
# two share the run's load (the emulator's CPU above all). Its records are labelled
# ``floor:<label>``.
BESIDE_NAMESPACE = '/floor'
BESIDE_LABEL = 'floor:'
BESIDE_FRAMES = (2, 3, 6)
# The payload bytes of one Polaris cloud and image (1800 x 32 points of 16 bytes, 896 x 512
# BGR pixels): what "per MB" counts, the same for the bridge (received) and the floor (sent).
PAYLOAD_BYTES = {'lidar/points': 1800 * 32 * 16, 'camera/image_raw': 896 * 512 * 3}
TARGET_CPU_FRACTION_1X = 0.10
TARGET_RSS_MB = 250.0
NOTES_MARKER = '<!-- notes: kept by tools/benchmark.py -->'
_STAMP = struct.Struct('<iI')   # builtin_interfaces/Time after the 4-byte CDR encapsulation


def stamp_key(stamp_s: float) -> int:
    """Return the key of a stamp: microseconds, robust to the float-to-nanosecond rounding."""
    return round(stamp_s * 1e6)


def cdr_stamp_key(data: bytes) -> int:
    """Return the key of the first Time in a serialised message (Header.stamp, Clock.clock)."""
    sec, nanosec = _STAMP.unpack_from(data, 4)
    return sec * 1_000_000 + round(nanosec / 1000)


def sent_key(key: int, sent: Mapping[int, Any]) -> int | None:
    """
    Return the key of ``sent`` that a received stamp key stands for, None for none.

    The same key, or one off: a stamp near a half microsecond may round either way on the
    sending and the receiving side.
    """
    return next((candidate for candidate in (key, key - 1, key + 1) if candidate in sent), None)


def full_topic(topic: str) -> str:
    return topic if topic.startswith('/') else f'{NAMESPACE}/{topic}'


def variant_label(topic: str, reliability: str, depth: int) -> str:
    """Return the name of one subscription in the records: ``/clock@be10`` and so on."""
    return f"{topic}@{'r' if reliability == 'reliable' else 'be'}{depth}"


def label_topic(label: str) -> str:
    """Return the topic of a record label (the label itself for the default subscription)."""
    return label.split('@')[0]


def beside_topic(topic: str) -> str:
    """Return where the floor beside the bridge publishes a topic (``/floor/clock``)."""
    return f"{BESIDE_NAMESPACE}/{topic.lstrip('/')}"


def subscriptions(variants: bool, beside: bool = False) -> dict[str, tuple[str, str, int]]:
    """Return label -> (topic, reliability, depth) of the measuring subscriber."""
    out = {topic: (topic, 'reliable',
                   SUBSCRIBER_LARGE_DEPTH if topic in LARGE_TOPICS else SUBSCRIBER_DEPTH)
           for topic in TOPICS}
    if variants:
        for topic in SMALL_TOPICS:
            for reliability, depth in SUBSCRIBER_VARIANTS:
                out[variant_label(topic, reliability, depth)] = (topic, reliability, depth)
    if beside:
        out.update({BESIDE_LABEL + label: spec for label, spec in list(out.items())
                    if spec[0] in SMALL_TOPICS})
    return out


def subscribed_topic(label: str, topic: str) -> str:
    """Return the full topic name a subscriber label reads."""
    return beside_topic(topic) if label.startswith(BESIDE_LABEL) else full_topic(topic)


def split_beside(received: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a subscriber's records into the bridge's and the floor beside's (unlabelled)."""
    own = {label: log for label, log in received.items() if not label.startswith(BESIDE_LABEL)}
    beside = {label[len(BESIDE_LABEL):]: log for label, log in received.items()
              if label.startswith(BESIDE_LABEL)}
    return own, beside


def qos_profile(depth: int, reliability: str = 'reliable') -> Any:
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE if reliability == 'reliable'
                      else ReliabilityPolicy.BEST_EFFORT)


def message_types() -> dict[str, type]:
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import CameraInfo
    from sensor_msgs.msg import Image
    from sensor_msgs.msg import Imu
    from sensor_msgs.msg import NavSatFix
    from sensor_msgs.msg import PointCloud2
    from acres_interfaces.msg import StepBarrier
    return {'/clock': Clock, 'ins/fix': NavSatFix, 'ins/imu': Imu, 'ins/odometry': Odometry,
            'ground_truth/odometry': Odometry, 'lidar/points': PointCloud2,
            'camera/image_raw': Image, 'camera/camera_info': CameraInfo,
            'step_barrier': StepBarrier}


class Commands:
    """Read command lines from stdin on a thread (the harness drives its children this way)."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, name='stdin', daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            self.lines.put(line.strip())
        self.lines.put('stop')

    def get(self, timeout_s: float | None = None) -> str | None:
        try:
            return self.lines.get(timeout=timeout_s)
        except queue.Empty:
            return None


def say(text: str) -> None:
    print(text, flush=True)


# --- child: the emulator --------------------------------------------------------------------


def role_emulator(args: argparse.Namespace) -> int:
    """Run the emulator in lockstep; record (type, stamp key, publish time) per queued frame."""
    from acres_bridge.emulator import stream_server
    from acres_bridge.emulator.server import Emulator
    records: list[tuple[int, int, float]] = []
    original = stream_server.encode_header

    def recording_encode_header(frame_type: int, **fields: Any) -> bytes:
        # Every queued frame's header is made here, with the publish time that goes on the wire.
        records.append((int(frame_type), stamp_key(fields['stamp_s']), fields['publish_s']))
        return original(frame_type, **fields)

    stream_server.encode_header = recording_encode_header
    if args.nice:
        # Below the bridge and the subscriber: when they wake on a busy machine they get the
        # CPU first, as they would beside a simulator on cores of its own.
        os.nice(args.nice)
    emulator = Emulator(('polaris',), lockstep=True, rate=args.rate,
                        render_every=args.render_every).start()
    commands = Commands()
    say(f'READY control={emulator.control_port} sensor={emulator.sensor_ports[0]}')
    drops_at_reset = _queue_drops(emulator)
    while (command := commands.get()) != 'stop':
        if command == 'drain':
            drained = all(stream.wait_drained(DRAIN_TIMEOUT_S) for stream in emulator.streams)
            say(f'DRAINED {drained}')
        elif command == 'reset':
            records.clear()
            drops_at_reset = _queue_drops(emulator)
            say('RESET')
    drops = {frame_type: count - drops_at_reset.get(frame_type, 0)
             for frame_type, count in _queue_drops(emulator).items()}
    emulator.stop()
    with open(args.record, 'w', encoding='utf-8') as stream:
        json.dump(records, stream)
    with open(queue_drops_path(args.record), 'w', encoding='utf-8') as stream:
        json.dump(drops, stream)
    say(f'DONE frames={len(records)}')
    return 0


def _queue_drops(emulator: Any) -> dict[int, int]:
    """Return the frames each type lost at the simulator's queue (over 96 MiB), all streams."""
    drops: dict[int, int] = {}
    for stream in emulator.streams:
        for frame_type, counters in stream.counters.items():
            drops[int(frame_type)] = drops.get(int(frame_type), 0) + counters.drops
    return drops


def queue_drops_path(record: str) -> str:
    """Return where the emulator role writes the frames its queue dropped beside ``record``."""
    return record + '.queue-drops.json'


# --- child: the floor publisher -------------------------------------------------------------


def _floor_messages(columns: int, rings: int, width: int, height: int) -> dict[str, Any]:
    """Build one ready-made message per topic, with payloads of the Polaris's sizes."""
    from array import array
    from sensor_msgs.msg import PointField
    types = message_types()
    messages = {topic: cls() for topic, cls in types.items()}
    cloud = messages['lidar/points']
    cloud.header.frame_id = 'lidar'
    cloud.height, cloud.width = columns, rings
    cloud.fields = [PointField(name=name, offset=4 * index, datatype=PointField.FLOAT32, count=1)
                    for index, name in enumerate(('x', 'y', 'z', 'intensity'))]
    cloud.point_step, cloud.row_step = 16, 16 * rings
    cloud.is_dense = False
    points = array('B')
    points.frombytes(bytes(16 * columns * rings))
    cloud.data = points
    image = messages['camera/image_raw']
    image.header.frame_id = 'camera_optical'
    image.width, image.height, image.encoding, image.step = width, height, 'bgr8', 3 * width
    pixels = array('B')
    pixels.frombytes(bytes(3 * width * height))
    image.data = pixels
    info = messages['camera/camera_info']
    info.header.frame_id = 'camera_optical'
    info.width, info.height, info.distortion_model = width, height, 'plumb_bob'
    info.d = [0.0] * 5
    return messages


def _set_stamp(message: Any, topic: str, sec: int, nanosec: int) -> None:
    stamp = message.clock if topic == '/clock' else message.header.stamp
    stamp.sec = sec
    stamp.nanosec = nanosec


def _due(step: int, hz: int) -> bool:
    """Whether a sensor at ``hz`` samples at physics step ``step`` (first step at/after n/hz)."""
    return (step * hz) // PHYSICS_HZ > ((step - 1) * hz) // PHYSICS_HZ


def role_floor(args: argparse.Namespace) -> int:
    """
    Publish ready-made messages on the bridge's topics at the emulator's schedule.

    ``--drive play`` publishes each physics step at its time; ``lockstep`` publishes
    LOCKSTEP_STEPS steps at once every LOCKSTEP_STEPS steps' time, then a step barrier, as the
    bridge does for a step request; with ``--release command`` at each ``burst`` line instead,
    until ``end``. ``--beside``: clock, INS and barrier only, under BESIDE_NAMESPACE.
    """
    import rclpy
    from rclpy._rclpy_pybind11 import RCLError
    rclpy.init()
    # Beside the bridge: its own namespace, /clock as /floor/clock, no clouds or images.
    beside = args.beside
    node = rclpy.create_node('floor_publisher', namespace=BESIDE_NAMESPACE if beside
                             else NAMESPACE)
    types = message_types()
    topics = [topic for topic in TOPICS
              if not beside or TOPIC_FRAME[topic] in BESIDE_FRAMES]
    publishers = {topic: node.create_publisher(
        types[topic], topic.lstrip('/') if beside else topic,
        qos_profile(args.large_depth if topic in LARGE_TOPICS else args.depth))
        for topic in topics}
    messages = _floor_messages(1800, 32, 896, 512)
    commands = Commands()
    say('READY')
    records: list[tuple[int, int, float]] = []
    publish_errors = 0
    command = commands.get()
    while command == 'warmup':
        # One message per topic, stamped before the run's first step; the subscriber forgets it.
        for topic in topics:
            _set_stamp(messages[topic], topic, 0, 0)
            publishers[topic].publish(messages[topic])
        say('WARM')
        command = commands.get()
    if command == 'play':
        steps_per_s = PHYSICS_HZ * args.rate
        batch = LOCKSTEP_STEPS if args.drive == 'lockstep' else 1
        start = time.monotonic()
        end = start + args.seconds
        step = 0

        released_s = start

        def publish(frame_type: int, sec: int, nanosec: int, key: int) -> None:
            nonlocal publish_errors
            # A lockstep burst is all there at its release, as the emulator's frames are when
            # queued: a message's latency counts from then, the publishing of the messages
            # before it included. Playing, each step's messages count from their own publish.
            publish_s = released_s if batch > 1 else time.monotonic()
            for topic in FRAME_TOPICS[frame_type]:
                if topic not in publishers:
                    continue
                message = messages[topic]
                _set_stamp(message, topic, sec, nanosec)
                try:
                    publishers[topic].publish(message)
                except RCLError:
                    # Fast DDS refuses a write it cannot place in time: a lost message.
                    publish_errors += 1
            records.append((frame_type, key, publish_s))

        def publish_steps() -> None:
            nonlocal step
            for _ in range(batch):
                step += 1
                stamp_ns = step * 1_000_000_000 // PHYSICS_HZ
                sec, nanosec = divmod(stamp_ns, 1_000_000_000)
                key = stamp_key(stamp_ns / 1e9)
                frames = [2]
                if _due(step, 100):
                    frames.append(3)
                if _due(step, 10):
                    frames.extend((5, 4))
                for frame_type in frames:
                    publish(frame_type, sec, nanosec, key)
            if batch > 1:
                messages['step_barrier'].step = step
                publish(6, sec, nanosec, key)

        if args.release == 'command':
            # Lockstep beside the bridge: a burst each time the harness sends a step request.
            while commands.get() == 'burst':
                released_s = time.monotonic()
                publish_steps()
        else:
            while True:
                now = time.monotonic()
                if now >= end:
                    break
                due = start + (step + batch) / steps_per_s
                if now < due:
                    time.sleep(due - now)
                released_s = time.monotonic()
                publish_steps()
        say(f'PLAYED steps={step} publish_errors={publish_errors}')
        while commands.get() != 'stop':
            pass
    with open(args.record, 'w', encoding='utf-8') as stream:
        json.dump(records, stream)
    node.destroy_node()
    rclpy.try_shutdown()
    say(f'DONE frames={len(records)}')
    return 0


# --- child: the measuring subscriber --------------------------------------------------------


def role_subscriber(args: argparse.Namespace) -> int:
    """
    Subscribe raw to every topic; record (stamp key, DDS reception time, take time) per message.

    A plain wait-set loop that takes every waiting message of a ready subscription: the rclpy
    executors add tens of microseconds per message, which on a loaded machine made this
    process the bottleneck (and the EventsExecutor of rclpy 9.1 delivered nothing to raw
    subscriptions here). The reception time is the middleware's ``received_timestamp``
    (system clock, mapped to CLOCK_MONOTONIC), so a busy subscriber does not add latency.
    """
    import rclpy
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
    rclpy.init()
    context = rclpy.get_default_context()
    node = rclpy.create_node('benchmark_subscriber')
    types = message_types()
    wanted = subscriptions(args.variants, args.beside)
    received: dict[str, list[tuple[int, float, float]]] = {label: [] for label in wanted}
    subs = {}
    for label, (topic, reliability, depth) in wanted.items():
        subs[label] = node.create_subscription(
            types[topic], subscribed_topic(label, topic), lambda data: None,
            qos_profile(depth, reliability), raw=True)
    expected = sorted({subscribed_topic(label, topic) for label, (topic, _, _) in wanted.items()})
    from diagnostic_msgs.msg import DiagnosticArray
    diagnostics: list[dict[str, str]] = []
    diagnostics_sub = node.create_subscription(DiagnosticArray, '/diagnostics', lambda m: None,
                                               qos_profile(10))
    commands = Commands()
    stop = threading.Event()

    def serve() -> None:
        while True:
            command = commands.get()
            if command == 'matched':
                missing = [topic for topic in expected if node.count_publishers(topic) == 0]
                say('MATCHED' if not missing else f'MISSING {" ".join(missing)}')
            elif command == 'count':
                say(f'COUNT {sum(len(log) for log in received.values())}')
            elif command == 'topics':
                say('TOPICS ' + ' '.join(str(len(log)) for log in received.values()))
            elif command == 'reset':
                for log in received.values():
                    log.clear()
                diagnostics.clear()
                say('RESET')
            elif command == 'stop':
                break
        stop.set()

    say('READY executor=wait-set')
    threading.Thread(target=serve, name='commands', daemon=True).start()
    entries = [(sub.handle, sub.msg_type, received[label]) for label, sub in subs.items()]
    monotonic_ns, time_ns = time.monotonic_ns, time.time_ns
    offset_ns = time_ns() - monotonic_ns()
    with context.handle:
        for handle, _, _ in entries:
            handle.__enter__()
        diagnostics_handle = diagnostics_sub.handle
        diagnostics_handle.__enter__()
        wait_set = _rclpy.WaitSet(len(entries) + 1, 0, 0, 0, 0, 0, context.handle)
        while not stop.is_set():
            wait_set.clear_entities()
            for handle, _, _ in entries:
                wait_set.add_subscription(handle)
            wait_set.add_subscription(diagnostics_handle)
            wait_set.wait(100_000_000)
            ready = wait_set.get_ready_entities('subscription')
            if not ready:
                offset_ns = time_ns() - monotonic_ns()
                continue
            if diagnostics_handle.pointer in ready:
                taken = diagnostics_handle.take_message(DiagnosticArray, False)
                if taken is not None:
                    diagnostics.extend(
                        {value.key: value.value for value in status.values}
                        for status in taken[0].status if 'sensor stream' in status.name)
            for handle, msg_type, log in entries:
                if handle.pointer not in ready:
                    continue
                while True:
                    taken = handle.take_message(msg_type, True)
                    if taken is None:
                        break
                    data, info = taken
                    take_s = monotonic_ns() / 1e9
                    received_ns = info.get('received_timestamp', 0)
                    dds_s = (received_ns - offset_ns) / 1e9 if received_ns else take_s
                    log.append((cdr_stamp_key(data), dds_s, take_s))
    with open(args.record, 'w', encoding='utf-8') as stream:
        json.dump({'executor': 'wait-set', 'received': received, 'diagnostics': diagnostics,
                   'fast_dds': str(dds.loaded_fast_dds())}, stream)
    say('DONE')
    os._exit(0)


# --- child: the control channel on another host ------------------------------------------


def role_control(args: argparse.Namespace) -> int:
    """
    Serve the emulator's control channel to the harness from the emulator's host.

    Across two hosts the emulator's loopback is host A's, out of the harness's reach: each
    stdin line ``op {json fields}`` becomes one request, answered ``REPLY {json}``.
    """
    from acres_bridge.protocol.control_client import ControlClient
    control = ControlClient(port=args.port, name='benchmark')
    control.start()
    commands = Commands()
    say('READY')
    while (command := commands.get()) != 'stop':
        op, _, fields = command.partition(' ')
        try:
            reply = dict(control.request(op, **json.loads(fields or '{}')))
        except Exception as exc:   # noqa: B902  (the harness sees every failure as a reply)
            reply = {'ok': False, 'error': f'{type(exc).__name__}: {exc}'}
        say('REPLY ' + json.dumps(reply, default=str))
    control.stop()
    return 0


class RemoteControl:
    """The harness's end of :func:`role_control`: ``request`` as ControlClient has it."""

    def __init__(self, child: 'Child') -> None:
        self.child = child

    def request(self, op: str, *, timeout_s: float = 30.0, **fields: Any) -> dict[str, Any]:
        answer = self.child.ask(f'{op} {json.dumps(fields)}', ('REPLY',), timeout_s + 5.0)
        return json.loads(answer.partition(' ')[2])

    def stop(self) -> None:
        pass   # the child ends with the run's other children


# --- child: the bridge under cProfile -----------------------------------------------------


def role_bridge_profiled(args: argparse.Namespace) -> int:
    """
    Run sensor_bridge's main() with every thread under cProfile; write the merged stats.

    cProfile sees one thread only, and the sensor path runs on the ``sensor-rx`` reader thread:
    each new thread enables a profiler of its own on its first profiling event. The timer is
    the thread's CPU time, so waiting on the socket and being preempted on a busy machine do
    not count.
    """
    import cProfile
    import pstats
    from acres_bridge.nodes import sensor_bridge
    profiles: dict[str, cProfile.Profile] = {}

    def start_profiler(frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        profiler = cProfile.Profile(time.thread_time)
        profiles[threading.current_thread().name] = profiler
        profiler.enable()

    threading.setprofile(start_profiler)
    main_profiler = cProfile.Profile(time.thread_time)
    profiles['main'] = main_profiler
    main_profiler.enable()
    try:
        code = sensor_bridge.main(['sensor_bridge', '--ros-args', '-r', f'__ns:={NAMESPACE}',
                                   '-p', f'port:={args.port}', '-p', 'host:=127.0.0.1'])
    finally:
        main_profiler.disable()
        for profiler in profiles.values():
            profiler.disable()
        stats = None
        for name, profiler in profiles.items():
            try:
                stats = pstats.Stats(profiler) if stats is None else stats.add(profiler)
            except TypeError:
                continue   # a thread that never ran Python code
            single = pstats.Stats(profiler, stream=sys.stderr)
            print(f'=== thread {name}', file=sys.stderr)
            single.sort_stats('tottime').print_stats(25)
        if stats is not None:
            stats.dump_stats(args.record)
    return code or 0


# --- the harness ----------------------------------------------------------------------------


class Child:
    """A child process of the harness, driven by stdin lines and answering on stdout lines."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str],
                 log_dir: str, *, interrupt: bool = False,
                 wrapper: Sequence[str] = ()) -> None:
        self.name = name
        self.interrupt = interrupt
        self.lines: queue.Queue[str] = queue.Queue()
        self._stderr = open(os.path.join(log_dir, f'{name}.log'), 'w', encoding='utf-8')
        # ``ip netns exec`` executes the command in place: the pid stays the command's.
        self.process = subprocess.Popen(
            [*wrapper, *argv], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, text=True, bufsize=1)
        threading.Thread(target=self._read, name=f'{name}-out', daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.strip())

    def send(self, line: str) -> None:
        try:
            self.process.stdin.write(line + '\n')
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def expect(self, prefix: str, timeout_s: float) -> str:
        """Return the next line that starts with ``prefix``; RuntimeError after the time-out."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.process.poll() is not None and self.lines.empty():
                raise RuntimeError(f'{self.name}: no {prefix!r} within {timeout_s} s '
                                   f'(exit code {self.process.poll()}, see {self._stderr.name})')
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line.startswith(prefix):
                return line

    def ask(self, command: str, prefixes: tuple[str, ...], timeout_s: float = 20.0) -> str:
        self.send(command)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line.startswith(prefixes):
                return line
        raise RuntimeError(f'{self.name}: no answer to {command!r}')

    def finish(self, timeout_s: float = 20.0) -> None:
        """Ask the child to stop (a line, or SIGINT for a ROS node), and end it if it does not."""
        if self.interrupt:
            self.process.send_signal(signal.SIGINT)
        else:
            self.send('stop')
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()


def prefix_python(prefix: str) -> str:
    """Return the Python of a prefix (a venv made by tools/bootstrap.py)."""
    return os.path.join(prefix, 'bin', 'python')


def _bridge_argv(port: int, command: str | None = None, prefix: str = sys.prefix) -> list[str]:
    executable = os.path.join(prefix, 'bin', 'sensor_bridge')
    if command:
        argv = shlex.split(command)
    elif os.path.exists(executable):
        argv = [executable]
    else:
        argv = [prefix_python(prefix), '-c',
                'import sys; from acres_bridge.nodes.sensor_bridge import main; sys.exit(main())']
    return argv + ['--ros-args', '-r', f'__ns:={NAMESPACE}', '-p', f'port:={port}',
                   '-p', 'host:=127.0.0.1']


def dds_env(config: str, domain_id: int, fast_dds: dds.FastDds | None,
            prefix: str = sys.prefix, profile_file: str | None = None) -> dict[str, str]:
    """
    Return the environment of every process of one run: a local-only graph of its own.

    ``stock``: no Fast DDS variable at all, as a new user has it. ``profile``: the package's
    profile spelled for ``fast_dds``, the Fast DDS of the prefix, or ``profile_file`` (a
    user's own, the other version's), each with ``RMW_FASTRTPS_USE_QOS_FROM_XML=1``.
    """
    env = {name: value for name, value in os.environ.items()
           if name not in dds.USER_VARIABLES}
    if prefix != sys.prefix and env.pop(WHEELS_BOOTSTRAPPED, None):
        # The PyPI wheels' Python sets LD_LIBRARY_PATH to its own prefix and re-executes
        # itself once; a child of another prefix must do that again for its own.
        env.pop('LD_LIBRARY_PATH', None)
    dds.keep_discovery_local(env, fast_dds)
    env.update(ROS_DOMAIN_ID=str(domain_id), RCUTILS_LOGGING_SEVERITY_THRESHOLD='WARN',
               PYTHONUNBUFFERED='1')
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    if config == 'profile':
        if fast_dds is None:
            raise ValueError('the profile configuration needs the Fast DDS of the prefix')
        env.update(dds.shipped_profile_environment(fast_dds))
        if profile_file is not None:
            env[dds.profile_variable(fast_dds)] = os.path.abspath(profile_file)
    elif config != 'stock':
        raise ValueError(f'unknown DDS configuration {config!r}')
    return env


def _bench_two_hosts() -> Any:
    """Import tools/bench_two_hosts.py (and with it test/support/two_hosts.py)."""
    tools = os.path.dirname(os.path.abspath(__file__))
    if tools not in sys.path:
        sys.path.insert(0, tools)
    import bench_two_hosts
    return bench_two_hosts


def two_host_envs(config: str, domain_id: int, fast_dds: dds.FastDds | None,
                  prefix: str, work_dir: str,
                  prefix_b: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """
    Return the environments of host A's and host B's processes for a two-host configuration.

    As :func:`dds_env`, but discovery on the link's subnet (allowed only inside the
    namespaces of test/support/two_hosts.py) and the variables that tools/bench_two_hosts.py
    gives every process of both hosts; :func:`two_host_bridge_env` adds the publisher's own.
    ``prefix_b``: host B's processes run from that prefix (another distribution's) instead.
    Host B's also get the configuration's variables for its readers alone
    (``reader_env`` of tools/bench_two_hosts.py).
    """
    _, both = _bench_two_hosts().config_env(config, work_dir)
    prefix_b = prefix_b or prefix
    fast_dds_b = (fast_dds if prefix_b == prefix
                  else dds.find_fast_dds([os.path.join(prefix_b, 'lib')]))
    hosts = []
    for host_prefix, host_fast_dds in ((prefix, fast_dds), (prefix_b, fast_dds_b)):
        env = dds_env('stock', domain_id, host_fast_dds, host_prefix)
        env.pop('ROS_LOCALHOST_ONLY', None)
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'SUBNET'
        env.update(both)
        hosts.append(env)
    hosts[1].update(_bench_two_hosts().reader_env(config, fast_dds_b))
    return hosts[0], hosts[1]


def two_host_bridge_env(config: str, work_dir: str) -> dict[str, str]:
    """Return the variables of host A's publisher (the bridge or the floor) for ``config``."""
    return _bench_two_hosts().config_env(config, work_dir)[0]


class _Sampler:
    """Sample a process's resident memory and CPU time on a thread."""

    def __init__(self, pid: int, period_s: float = 0.5) -> None:
        import psutil
        self.process = psutil.Process(pid)
        self.period_s = period_s
        self.samples: list[tuple[float, float, float]] = []   # (t, rss MB, cpu s)
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, name='sampler', daemon=True)
        self._thread.start()

    def cpu_s(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def _run(self) -> None:
        import psutil
        while not self._stop.wait(self.period_s):
            try:
                rss = self.process.memory_info().rss / 1e6
                self.samples.append((time.monotonic() - self._start, rss, self.cpu_s()))
            except psutil.Error:
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _warm_up(subscriber: Child, publish_some: Any) -> None:
    """
    Publish until the subscriber has a message on every topic.

    The subscriber seeing a writer does not mean the writer has matched the subscriber yet
    (discovery is two-sided and slow on a loaded machine); a sample published before that is
    never delivered. After a message has come through on every topic, every pair is matched.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        publish_some()
        counts = subscriber.ask('topics', ('TOPICS',)).split()[1:]
        if all(int(count) > 0 for count in counts):
            return
        time.sleep(0.2)
    raise RuntimeError(f'warm-up: no message on some topics: {dict(zip(TOPICS, counts))}')


def _wait_quiet(subscriber: Child, timeout_s: float, quiet_s: float = QUIET_S) -> int:
    """Wait until the subscriber's message count stops growing; return it."""
    deadline = time.monotonic() + timeout_s
    last = -1
    stable_since = time.monotonic()
    while True:
        count = int(subscriber.ask('count', ('COUNT',)).split()[1])
        now = time.monotonic()
        if count != last:
            last, stable_since = count, now
        elif now - stable_since >= quiet_s or now >= deadline:
            return count
        time.sleep(0.25)


def _wait_matched(subscriber: Child, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    answer = ''
    while time.monotonic() < deadline:
        answer = subscriber.ask('matched', ('MATCHED', 'MISSING'))
        if answer == 'MATCHED':
            # The subscriber has seen every writer; give the writers the time to see it too.
            time.sleep(1.0)
            return
        time.sleep(0.2)
    raise RuntimeError(f'the subscriber did not match every topic: {answer}')


def run_tag(mode: str, config: str, drive: str, rate: float) -> str:
    return f'{mode}-{config}-{drive}-{rate:g}x'


def _drive_steps(control: Any, rate: float, seconds: float,
                 beside: 'Child | None' = None) -> None:
    """
    Send LOCKSTEP_STEPS-step requests, each as its steps' time at ``rate`` comes.

    ``beside``: the floor beside the bridge, told to release a burst with each request.
    """
    period_s = LOCKSTEP_STEPS / (PHYSICS_HZ * rate)
    due = time.monotonic()
    end = due + seconds
    while time.monotonic() < end:
        if beside is not None:
            beside.send('burst')
        reply = control.request('step', steps=LOCKSTEP_STEPS, timeout_s=30.0)
        if not reply.get('ok'):
            raise RuntimeError(f'step failed: {reply}')
        # Behind schedule the next request goes at once, without catching up in a burst.
        due = max(due + period_s, time.monotonic() - period_s)
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def run_once(mode: str, config: str, rate: float, *, seconds: float, domain_id: int,
             work_dir: str, depth: int, large_depth: int, render_every: int,
             emulator_nice: int = 0, profile: bool = False,
             bridge_command: str | None = None, drive: str = 'play', variants: bool = True,
             floor_beside: bool = False, prefix: str = sys.prefix,
             profile_file: str | None = None, hosts: Any = None,
             perf: bool = False, subscriber_prefix: str | None = None) -> dict[str, Any]:
    """
    Run one measurement (``bridge`` or ``floor``, ``play`` or ``lockstep``); its figures.

    ``perf``: Linux perf samples the measured process (the bridge or the floor) over the
    measured window; the split by layer goes under ``perf`` (tools/perf_split.py).

    ``floor_beside``: a bridge run also runs the floor's clock, INS and barrier in the same
    run (figures under ``floor_beside``). ``hosts``: a ``support.two_hosts.TwoHosts``; the
    emulator and the publisher (bridge or floor) then run on its host A, the subscriber on B,
    with ``config`` one of tools/bench_two_hosts.py's (play only), and the subscriber from
    ``subscriber_prefix`` if given (a reader of another distribution's Fast DDS).
    """
    from acres_bridge.protocol.control_client import ControlClient
    tag = run_tag(mode, config, drive, rate)
    fast_dds = dds.find_fast_dds([os.path.join(prefix, 'lib')])
    wrapper_a: tuple[str, ...] = ()
    wrapper_b: tuple[str, ...] = ()
    if hosts is None:
        env = env_b = dds_env(config, domain_id, fast_dds, prefix, profile_file)
    else:
        if drive != 'play' or floor_beside or profile:
            raise ValueError('across two hosts the benchmark plays, without --floor-beside '
                             'or --profile')
        env, env_b = two_host_envs(config, domain_id, fast_dds, prefix, work_dir,
                                   subscriber_prefix)
        wrapper_a = ('ip', 'netns', 'exec', hosts.a.name)
        wrapper_b = ('ip', 'netns', 'exec', hosts.b.name)
    me = [prefix_python(prefix), os.path.abspath(__file__)]
    sub_record = os.path.join(work_dir, f'{tag}-subscriber.json')
    pub_record = os.path.join(work_dir, f'{tag}-sent.json')
    beside_record = os.path.join(work_dir, f'{tag}-beside-sent.json')
    beside = floor_beside and mode == 'bridge'
    floor: Child | None = None
    children: list[Child] = []
    load_before = os.getloadavg()
    publish_errors = None
    try:
        sub_me = me if subscriber_prefix is None else [prefix_python(subscriber_prefix), me[1]]
        subscriber = Child(f'{tag}-subscriber', sub_me + [
            '_subscriber', '--record', sub_record] + (['--variants'] if variants else [])
            + (['--beside'] if beside else []), env_b, work_dir, wrapper=wrapper_b)
        children.append(subscriber)
        subscriber.expect('READY', START_TIMEOUT_S)
        control = None
        if mode == 'bridge':
            emulator = Child(f'{tag}-emulator', me + [
                '_emulator', '--rate', str(rate), '--record', pub_record,
                '--render-every', str(render_every), '--nice', str(emulator_nice)],
                env, work_dir, wrapper=wrapper_a)
            children.append(emulator)
            ready = emulator.expect('READY', START_TIMEOUT_S).split()
            ports = dict(item.split('=') for item in ready[1:])
            argv = _bridge_argv(int(ports['sensor']), bridge_command, prefix) if not profile else (
                me + ['_bridge_profiled', '--port', ports['sensor'],
                      '--record', os.path.join(work_dir, f'{tag}-bridge.prof')])
            # INFO for the bridge: its log says which DDS configuration is in force.
            bridge_env = dict(env, RCUTILS_LOGGING_SEVERITY_THRESHOLD='INFO')
            if hosts is not None:
                bridge_env.update(two_host_bridge_env(config, work_dir))
            source = Child(f'{tag}-bridge', argv, bridge_env, work_dir, interrupt=True,
                           wrapper=wrapper_a)
            children.insert(0, source)
            if hosts is None:
                control = ControlClient(port=int(ports['control']), name='benchmark')
                control.start()
            else:
                proxy = Child(f'{tag}-control', me + [
                    '_control', '--record', os.devnull, '--port', ports['control']], env,
                    work_dir, wrapper=wrapper_a)
                children.append(proxy)
                proxy.expect('READY', START_TIMEOUT_S)
                control = RemoteControl(proxy)
            if beside:
                floor = Child(f'{tag}-beside', me + [
                    '_floor', '--beside', '--rate', str(rate), '--seconds', str(seconds),
                    '--record', beside_record, '--depth', str(depth), '--drive', drive,
                    '--release', 'command' if drive == 'lockstep' else 'schedule'],
                    env, work_dir)
                children.append(floor)
                floor.expect('READY', START_TIMEOUT_S)
        else:
            floor_env = env if hosts is None else dict(env, **two_host_bridge_env(config,
                                                                                  work_dir))
            source = Child(f'{tag}-floor', me + [
                '_floor', '--rate', str(rate), '--seconds', str(seconds), '--record', pub_record,
                '--depth', str(depth), '--large-depth', str(large_depth), '--drive', drive],
                floor_env, work_dir, wrapper=wrapper_a)
            children.append(source)
            source.expect('READY', START_TIMEOUT_S)
        _wait_matched(subscriber, START_TIMEOUT_S)
        if control is not None:
            def step_some() -> None:
                control.request('step', steps=12, timeout_s=30.0)
                if floor is not None:
                    floor.ask('warmup', ('WARM',))
            _warm_up(subscriber, step_some)
            emulator.ask('drain', ('DRAINED',), DRAIN_TIMEOUT_S + 5.0)
            _wait_quiet(subscriber, DRAIN_TIMEOUT_S, quiet_s=0.5)
            emulator.ask('reset', ('RESET',))
        else:
            _warm_up(subscriber, lambda: source.ask('warmup', ('WARM',)))
            _wait_quiet(subscriber, DRAIN_TIMEOUT_S, quiet_s=0.5)
        subscriber.ask('reset', ('RESET',))
        sampler = _Sampler(source.process.pid)
        recorder = (perf_split.PerfRecorder(source.process.pid,
                                            os.path.join(work_dir, f'{tag}.perf.data'),
                                            os.path.join(work_dir, f'{tag}-perf.log'))
                    if perf else None)
        cpu_start = sampler.cpu_s()
        subscriber_cpu = _Sampler(subscriber.process.pid, period_s=5.0)
        subscriber_cpu_start = subscriber_cpu.cpu_s()
        receive_drops = hosts.b.receive_drops() if hosts is not None else None
        wall_start = time.monotonic()
        if control is not None and drive == 'lockstep':
            if floor is not None:
                floor.send('play')
            _drive_steps(control, rate, seconds, floor)
            wall_s = time.monotonic() - wall_start
            emulator.ask('drain', ('DRAINED',), DRAIN_TIMEOUT_S + 5.0)
            if floor is not None:
                floor.send('end')
                floor.expect('PLAYED', START_TIMEOUT_S)
        elif control is not None:
            reply = control.request('set_state', state=1)
            if not reply.get('ok'):
                raise RuntimeError(f'set_state 1 failed: {reply}')
            if floor is not None:
                floor.send('play')
            time.sleep(seconds)
            control.request('set_state', state=2)
            wall_s = time.monotonic() - wall_start
            # Frames still in the emulator's queue count as sent: let them go out first.
            emulator.ask('drain', ('DRAINED',), DRAIN_TIMEOUT_S + 5.0)
            if floor is not None:
                floor.expect('PLAYED', seconds + START_TIMEOUT_S)
        else:
            source.send('play')
            played = source.expect('PLAYED', seconds + START_TIMEOUT_S)
            wall_s = time.monotonic() - wall_start
            publish_errors = int(played.rsplit('=', 1)[1])
        _wait_quiet(subscriber, DRAIN_TIMEOUT_S)
        cpu_s = sampler.cpu_s() - cpu_start
        sampler.stop()
        subscriber_cpu_s = subscriber_cpu.cpu_s() - subscriber_cpu_start
        subscriber_cpu.stop()
        if receive_drops is not None:
            # What host B's kernel dropped on receipt over the run (a full socket buffer).
            receive_drops = {name: count - receive_drops[name] for name, count in
                             hosts.b.receive_drops().items()}
        perf_figures = recorder.stop() if recorder is not None else None
        if control is not None:
            control.stop()
    finally:
        for child in reversed(children):
            child.finish()
    with open(pub_record, encoding='utf-8') as stream:
        sent = json.load(stream)
    with open(sub_record, encoding='utf-8') as stream:
        sub = json.load(stream)
    received, beside_received = split_beside(sub['received'])
    result = _figures(sent, received)
    if os.path.exists(queue_drops_path(pub_record)):
        with open(queue_drops_path(pub_record), encoding='utf-8') as stream:
            _add_queue_drops(result['topics'], json.load(stream))
    if beside:
        with open(beside_record, encoding='utf-8') as stream:
            beside_sent = json.load(stream)
        result['floor_beside'] = _figures(beside_sent, beside_received, SMALL_TOPICS)
    result['bridge_diagnostics'] = _diagnostic_figures(sub.get('diagnostics', []))
    clock_frames = sum(1 for frame_type, _, _ in sent if frame_type == 2)
    sim_s = clock_frames / PHYSICS_HZ
    result.update(cpu_per_message(result['topics'], cpu_s))
    rss = [sample[1] for sample in sampler.samples]
    result.update(
        mode=mode, config=config, drive=drive, rate=rate, dds_line=_dds_line(work_dir, tag),
        fast_dds=str(fast_dds), wall_s=round(wall_s, 3), sim_s=round(sim_s, 3),
        achieved_rate=round(sim_s / wall_s, 3) if wall_s else None,
        cpu_s=round(cpu_s, 3), cpu_s_per_sim_s=round(cpu_s / sim_s, 4) if sim_s else None,
        cpu_core_fraction=round(cpu_s / wall_s, 4) if wall_s else None,
        subscriber_cpu_core_fraction=round(subscriber_cpu_s / wall_s, 4) if wall_s else None,
        hosts=1 if hosts is None else 2, mtu=None if hosts is None else hosts.mtu(),
        rss_mb_start=round(rss[0], 1) if rss else None,
        rss_mb_end=round(rss[-1], 1) if rss else None,
        rss_mb_max=round(max(rss), 1) if rss else None,
        rss_mb_series=[[round(t, 2), round(m, 1)] for t, m, _ in sampler.samples],
        floor_publish_errors=publish_errors, subscriber_executor=sub['executor'],
        subscriber_fast_dds=sub.get('fast_dds'), subscriber_receive_drops=receive_drops,
        perf=perf_figures,
        loadavg_before=[round(x, 2) for x in load_before],
        loadavg_after=[round(x, 2) for x in os.getloadavg()])
    return result


def cpu_per_message(topics: dict[str, Any], cpu_s: float) -> dict[str, Any]:
    """
    Return the process's CPU per message published and per MB of cloud and image payload.

    Messages are those sent on the default subscription's topics (one per topic and frame).
    """
    plain = {topic: figures for topic, figures in topics.items() if '@' not in topic}
    messages = sum(figures['sent'] for figures in plain.values())
    large = sum(figures['sent'] for topic, figures in plain.items() if topic in LARGE_TOPICS)
    payload_mb = sum(figures['sent'] * PAYLOAD_BYTES.get(topic, 0)
                     for topic, figures in plain.items()) / 1e6
    return {'messages': messages, 'large_messages': large, 'payload_mb': round(payload_mb, 1),
            'cpu_us_per_message': round(1e6 * cpu_s / messages, 1) if messages else None,
            'cpu_ms_per_mb': round(1e3 * cpu_s / payload_mb, 3) if payload_mb else None}


def _dds_line(work_dir: str, tag: str) -> str | None:
    """Return the bridge's line saying which DDS configuration was in force (None: no bridge)."""
    try:
        with open(os.path.join(work_dir, f'{tag}-bridge.log'), encoding='utf-8') as stream:
            for line in stream:
                if 'DDS: ' in line:
                    return line[line.index('DDS: '):].strip()
    except OSError:
        pass
    return None


def _percentile(sorted_values: list[float], fraction: float) -> float | None:
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, math.ceil(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def _figures(sent: list[list[Any]], received: dict[str, list[list[Any]]],
             topics_sent: Sequence[str] = TOPICS) -> dict[str, Any]:
    """Match received stamps to sent frames per topic: delivery and latency."""
    published: dict[int, dict[int, float]] = {frame_type: {} for frame_type in FRAME_TOPICS}
    for frame_type, key, publish_s in sent:
        if frame_type in published:
            published[frame_type][key] = publish_s
    topics = {}
    for topic in sorted(set(topics_sent) | set(received), key=_label_order):
        frames = published[TOPIC_FRAME[label_topic(topic)]]
        latencies = []
        seen = set()
        unmatched = 0
        take_latencies = []
        for key, receive_s, take_s in received.get(topic, []):
            match = sent_key(key, frames)
            if match is None:
                unmatched += 1
                continue
            publish_s = frames[match]
            if match not in seen:
                seen.add(match)
                latencies.append((receive_s - publish_s) * 1000.0)
                take_latencies.append((take_s - publish_s) * 1000.0)
        latencies.sort()
        take_latencies.sort()
        # The reception stamp of a fragmented message is its first fragment's on Fast DDS 3.x
        # and its last one's on 2.x; the take time is when the message was whole on both.
        topics[topic] = {
            'sent': len(frames), 'delivered': len(seen), 'lost': len(frames) - len(seen),
            'loss_pct': round(100.0 * (len(frames) - len(seen)) / len(frames), 3)
            if frames else 0.0,
            'unmatched': unmatched,
            'latency_p50_ms': _round(_percentile(latencies, 0.5)),
            'latency_p99_ms': _round(_percentile(latencies, 0.99)),
            'latency_max_ms': _round(latencies[-1] if latencies else None),
            'take_latency_p50_ms': _round(_percentile(take_latencies, 0.5)),
            'take_latency_p99_ms': _round(_percentile(take_latencies, 0.99))}
    return {'topics': topics}


def _add_queue_drops(topics: dict[str, Any], drops: dict[str, int]) -> None:
    """
    Count the frames the simulator's queue dropped as lost on their topics.

    A frame that would take the simulator's queue over 96 MiB is never sent (the bridge did
    not read fast enough): no publish time is recorded for it, so it is in neither ``sent`` nor
    ``delivered`` until added here. ``dropped_at_source`` says how many of ``lost`` it was.
    """
    counts = {int(frame_type): count for frame_type, count in drops.items() if count}
    for label, figures in topics.items():
        count = counts.get(TOPIC_FRAME[label_topic(label)], 0)
        if count:
            figures['dropped_at_source'] = count
            figures['sent'] += count
            figures['lost'] += count
            figures['loss_pct'] = round(100.0 * figures['lost'] / figures['sent'], 3)


def _label_order(label: str) -> tuple[int, int]:
    """Sort record labels: topics in TOPICS order, each topic's default subscription first."""
    topic, _, variant = label.partition('@')
    variants = [variant_label(topic, *item).partition('@')[2] for item in SUBSCRIBER_VARIANTS]
    return TOPICS.index(topic), variants.index(variant) + 1 if variant else 0


def _diagnostic_figures(samples: list[dict[str, str]]) -> dict[str, Any]:
    """
    Summarise the bridge's /diagnostics during a run.

    ``<type>.latency_p50_ms`` is the bridge's transport latency (its receive time minus the
    frame's publish time): the emulator's queue and the TCP hop. Its median over the run splits
    the end-to-end latency into transport and bridge + DDS.
    """
    out: dict[str, Any] = {}
    for kind in ('clock', 'ins', 'lidar', 'camera', 'barrier'):
        values = []
        for sample in samples:
            try:
                values.append(float(sample.get(f'{kind}.latency_p50_ms', '')))
            except ValueError:
                continue
        values.sort()
        dropped = [sample.get(f'{kind}.dropped') for sample in samples]
        out[kind] = {'transport_p50_ms': _round(_percentile(values, 0.5)),
                     'dropped': dropped[-1] if dropped else None}
    out['samples'] = len(samples)
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _ratios(bridge: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """Return the bridge's figures relative to the floor's."""
    out: dict[str, Any] = {}
    for topic in bridge['topics']:
        if topic not in floor['topics']:
            continue
        b, f = bridge['topics'][topic], floor['topics'][topic]
        entry = {}
        for name in ('latency_p50_ms', 'latency_p99_ms', 'take_latency_p50_ms'):
            if b.get(name) is not None and f.get(name) is not None:
                entry[name.replace('latency_', 'added_')] = round(b[name] - f[name], 3)
                entry[name.replace('_ms', '_ratio')] = (
                    round(b[name] / f[name], 2) if f[name] > 0 else None)
        transport = bridge.get('bridge_diagnostics', {}).get(
            FRAME_KINDS[TOPIC_FRAME[label_topic(topic)]], {}).get('transport_p50_ms')
        if 'added_p50_ms' in entry and transport is not None:
            # What the bridge itself adds: decoding, conversion and publishing.
            entry['own_p50_ms'] = round(entry['added_p50_ms'] - transport, 3)
        entry['delivered_ratio'] = round(
            (b['delivered'] / b['sent']) / (f['delivered'] / f['sent']), 4) if (
            b['sent'] and f['sent'] and f['delivered']) else None
        out[topic] = entry
    if floor.get('cpu_s_per_sim_s'):
        out['cpu_ratio'] = round(bridge['cpu_s_per_sim_s'] / floor['cpu_s_per_sim_s'], 2)
    if floor.get('cpu_us_per_message') and bridge.get('cpu_us_per_message'):
        out['cpu_per_message_ratio'] = round(
            bridge['cpu_us_per_message'] / floor['cpu_us_per_message'], 2)
    return out


def reanalyse(report: dict[str, Any], work_dir: str) -> dict[str, Any]:
    """Recompute delivery and latency of every run of a report from its raw records."""
    pairs: dict[tuple[str, str, float], dict[str, Any]] = {}
    for run in report['runs']:
        drive = run.get('drive', 'play')
        tag = run_tag(run['mode'], run['config'], drive, run['rate'])
        if not os.path.exists(os.path.join(work_dir, f'{tag}-sent.json')):
            tag = f"{run['mode']}-{run['config']}-{run['rate']:g}x"   # a report before drives
        with open(os.path.join(work_dir, f'{tag}-sent.json'), encoding='utf-8') as stream:
            sent = json.load(stream)
        with open(os.path.join(work_dir, f'{tag}-subscriber.json'), encoding='utf-8') as stream:
            received, beside_received = split_beside(json.load(stream)['received'])
        run['topics'] = _figures(sent, received)['topics']
        if run.get('floor_beside'):
            with open(os.path.join(work_dir, f'{tag}-beside-sent.json'),
                      encoding='utf-8') as stream:
                run['floor_beside'] = _figures(json.load(stream), beside_received, SMALL_TOPICS)
            run['vs_floor_beside'] = _ratios(run, run['floor_beside'])
        pairs.setdefault((run['config'], drive, run['rate']), {})[run['mode']] = run
    for pair in pairs.values():
        if 'bridge' in pair and 'floor' in pair:
            pair['bridge']['vs_floor'] = _ratios(pair['bridge'], pair['floor'])
    return report


def run_benchmark(*, rates: Sequence[float] = DEFAULT_RATES,
                  configs: Sequence[str] = DEFAULT_CONFIGS, seconds: float = 60.0,
                  domain_id: int = DEFAULT_DOMAIN_ID, work_dir: str, depth: int = 200,
                  large_depth: int = 10, render_every: int = 10, emulator_nice: int = 0,
                  modes: Sequence[str] = ('bridge', 'floor'), profile: bool = False,
                  rate_seconds: dict[float, float] | None = None,
                  bridge_command: str | None = None,
                  drives: Sequence[str] = DEFAULT_DRIVES, variants: bool = True,
                  floor_beside: bool = False, prefix: str = sys.prefix,
                  profile_file: str | None = None, perf: bool = False,
                  log: Any = print) -> dict[str, Any]:
    """
    Run every (drive, rate, config, mode); return the report (also the JSON document).

    The configurations of one rate run one after the other, so that the load of the machine
    weighs on stock and profile alike.
    """
    os.makedirs(work_dir, exist_ok=True)
    fast_dds = dds.find_fast_dds([os.path.join(prefix, 'lib')])
    runs = []
    for drive in drives:
        for rate in rates:
            for config in configs:
                pair = {}
                for mode in modes:
                    run_s = (rate_seconds or {}).get(rate, seconds)
                    log(f'--- {mode} {config} {drive} {rate:g}x for {run_s:g} s')
                    result = run_once(mode, config, rate, seconds=run_s, domain_id=domain_id,
                                      work_dir=work_dir, depth=depth, large_depth=large_depth,
                                      render_every=render_every,
                                      emulator_nice=emulator_nice, profile=profile,
                                      bridge_command=bridge_command, drive=drive,
                                      variants=variants, floor_beside=floor_beside,
                                      prefix=prefix, profile_file=profile_file, perf=perf)
                    if result.get('floor_beside'):
                        result['vs_floor_beside'] = _ratios(result, result['floor_beside'])
                    log(_summary_line(result))
                    pair[mode] = result
                    runs.append(result)
                if 'bridge' in pair and 'floor' in pair:
                    pair['bridge']['vs_floor'] = _ratios(pair['bridge'], pair['floor'])
    profile_path = profile_file or (
        dds.shipped_profile(fast_dds) if fast_dds is not None else None)
    return {
        'machine': {'cores': os.cpu_count(), 'platform': platform.platform(),
                    'python': platform.python_version(), 'processor': platform.processor(),
                    'affinity': len(os.sched_getaffinity(0))},
        'settings': {'seconds': seconds, 'rate_seconds': rate_seconds or {},
                     'rates': list(rates), 'configs': list(configs), 'drives': list(drives),
                     'prefix': prefix, 'fast_dds': str(fast_dds),
                     'qos': f'reliable keep-last; floor depth {depth} (clouds and images '
                            f'{large_depth}); subscriber reliable depth {SUBSCRIBER_DEPTH} '
                            f'({SUBSCRIBER_LARGE_DEPTH})'
                            + (', and for clock, INS and barrier also reliable 10 and 1, best '
                               'effort 1000, 10 and 1' if variants else ''),
                     'emulator_render_every': render_every,
                     'emulator_nice': emulator_nice, 'floor_beside': floor_beside,
                     'profile': profile_path,
                     'bridge_command': bridge_command},
        'targets': {'loss': 0, 'added_p50_ms': TARGET_ADDED_P50_MS,
                    'cpu_core_fraction_1x': TARGET_CPU_FRACTION_1X, 'rss_mb': TARGET_RSS_MB},
        'runs': runs,
        'date': time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())}


TWO_HOST_CONFIGS = ('own', 'paced_bridge', 'two_hosts_profile')
# Not run unless named: config/fastdds_two_hosts.xml in host B's subscriber only.
TWO_HOST_EXTRA_CONFIGS = ('two_hosts_profile_b',)
TWO_HOST_TOPICS = ('lidar/points', 'camera/image_raw', '/clock', 'ins/imu')


def run_two_hosts(*, rates: Sequence[float], configs: Sequence[str], seconds: float,
                  rate_seconds: dict[float, float] | None = None, repeat: int = 1,
                  mtu: int | None = None, domain_id: int, work_dir: str,
                  modes: Sequence[str] = ('bridge', 'floor'), log: Any = print,
                  subscriber_prefix: str | None = None, **options: Any) -> dict[str, Any]:
    """
    Run the bridge and the floor across two hosts per (rate, config), and on one host beside.

    Each repeat runs, for every rate and two-host configuration, the bridge and then the floor
    publisher on host A with the subscriber on host B (a fresh pair of namespaces each), then
    the same bridge and floor on one host (``stock``) at 1x, so that "cloud p50 across the
    link against one host" is a ratio of one run's figures. ``subscriber_prefix``: host B's
    subscriber runs from that prefix (the one-host runs keep the publisher's). ``options`` go
    to :func:`run_once`.
    """
    two_hosts = _bench_two_hosts().two_hosts
    reason = two_hosts.unavailable()
    if reason:
        raise RuntimeError(f'two hosts: {reason}')
    two_hosts.remove_stale()
    os.makedirs(work_dir, exist_ok=True)
    runs = []
    for index in range(repeat):
        log(f'=== repeat {index + 1} of {repeat}; load {_load()}')
        round_runs = []
        for rate in rates:
            run_s = (rate_seconds or {}).get(rate, seconds)
            for config in configs:
                pair = {}
                for mode in modes:
                    log(f'--- two hosts: {mode} {config} {rate:g}x for {run_s:g} s; load '
                        f'{_load()}')
                    hosts = two_hosts.TwoHosts(mtu=mtu)
                    try:
                        result = run_once(mode, config, rate, seconds=run_s,
                                          domain_id=domain_id, work_dir=work_dir,
                                          hosts=hosts, subscriber_prefix=subscriber_prefix,
                                          **options)
                    finally:
                        hosts.remove()
                    result['repeat'] = index
                    pair[mode] = result
                    log(_two_host_line(result))
                if 'bridge' in pair and 'floor' in pair:
                    pair['bridge']['vs_floor'] = _ratios(pair['bridge'], pair['floor'])
                round_runs += list(pair.values())
        for mode in modes:
            log(f'--- one host: {mode} stock 1x for {seconds:g} s; load {_load()}')
            result = run_once(mode, 'stock', 1.0, seconds=seconds, domain_id=domain_id,
                              work_dir=work_dir, **options)
            result['repeat'] = index
            log(_two_host_line(result))
            round_runs.append(result)
        single = {run['mode']: run for run in round_runs if run['hosts'] == 1}
        for run in round_runs:
            if run['hosts'] == 2 and run['mode'] in single:
                run['vs_one_host'] = _ratios(run, single[run['mode']])
        runs += round_runs
        for line in two_host_comparison(round_runs):
            log(line)
    return {'machine': {'cores': os.cpu_count(), 'platform': platform.platform(),
                        'python': platform.python_version()},
            'settings': {'seconds': seconds, 'rate_seconds': rate_seconds or {},
                         'rates': list(rates), 'configs': list(configs), 'repeat': repeat,
                         'mtu': mtu, 'subscriber_prefix': subscriber_prefix},
            'runs': runs, 'date': time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())}


def _load() -> str:
    return ' '.join(f'{value:.2f}' for value in os.getloadavg())


def _two_host_line(result: dict[str, Any]) -> str:
    """One line: where, what; delivery and p50 of clouds, images, clock and IMU; CPU A and B."""
    parts = [f"{result['hosts']} host{'s' if result['hosts'] > 1 else ''} {result['mode']:6} "
             f"{result['config']:17} {result['rate']:g}x, {result['fast_dds']} -> "
             f"{result.get('subscriber_fast_dds')}"]
    for topic in TWO_HOST_TOPICS:
        item = result['topics'][topic]
        parts.append(f"{topic.split('/')[-1]} {item['delivered']}/{item['sent']} p50 "
                     f"{item['latency_p50_ms']} p99 {item['latency_p99_ms']} ms (taken p50 "
                     f"{item.get('take_latency_p50_ms')})")
    parts.append(f"cpu publisher {result['cpu_core_fraction']} subscriber "
                 f"{result['subscriber_cpu_core_fraction']} core")
    drops = result.get('subscriber_receive_drops')
    if drops:
        parts.append(f"host B dropped {drops['udp_receive_buffer_errors']} UDP datagrams "
                     '(socket buffer full)')
    return ' | '.join(parts)


def two_host_comparison(runs: Sequence[dict[str, Any]]) -> list[str]:
    """
    Lines per two-host bridge run: loss, cloud p50 over the floor and over one host.

    The cloud's p50 is its take latency, when the subscriber had the whole message: the
    reception stamp of a fragmented message means its first fragment on Fast DDS 3.x and its
    last on 2.x (it is shown too, as "stamped").
    """
    lines = []
    for run in runs:
        if run['hosts'] != 2 or run['mode'] != 'bridge':
            continue
        lost = {topic: item['lost'] for topic, item in run['topics'].items()
                if '@' not in topic and item['lost']}
        floor = run.get('vs_floor', {}).get('lidar/points', {})
        one = run.get('vs_one_host', {}).get('lidar/points', {})
        cloud = run['topics']['lidar/points']
        over_floor = (f", +{floor['take_added_p50_ms']} over the floor across the link"
                      if 'take_added_p50_ms' in floor else '')
        lines.append(
            f"{run['config']:17} {run['rate']:g}x: lost {lost or 'none'}; cloud p50 taken "
            f"{cloud.get('take_latency_p50_ms')} ms{over_floor}, "
            f"x{one.get('take_latency_p50_ratio')} the one-host bridge's (stamped "
            f"{cloud['latency_p50_ms']} ms, x{one.get('latency_p50_ratio')})")
    return lines


def _summary_line(result: dict[str, Any]) -> str:
    parts = [f"{result['mode']:6} {result['config']:7} {result.get('drive', 'play'):8} "
             f"{result['rate']:g}x sim {result['sim_s']:.1f} s (x{result['achieved_rate']})"]
    shown = ['/clock', 'ins/imu', 'lidar/points', 'camera/image_raw']
    if result.get('drive') == 'lockstep':
        shown.append('step_barrier')
    for topic in shown:
        t = result['topics'][topic]
        at_source = (f" ({t['dropped_at_source']} dropped by the simulator's queue)"
                     if t.get('dropped_at_source') else '')
        parts.append(f"{topic.split('/')[-1]} {t['delivered']}/{t['sent']}{at_source} "
                     f"p50 {t['latency_p50_ms']} ms")
    parts.append(f"cpu {result['cpu_core_fraction']} core, "
                 f"{result.get('cpu_us_per_message')} us/message, "
                 f"{result.get('cpu_ms_per_mb')} ms/MB, rss max {result['rss_mb_max']} MB")
    if result.get('perf'):
        counts = result['perf'].get('counts', {})
        messages = result.get('messages') or 0
        per_message = ', '.join(f'{name} {count / messages:.2f}'
                                for name, count in counts.items()) if messages else ''
        parts.append('perf: ' + perf_split.format_split(result['perf'])
                     + (f'; per message: {per_message}' if per_message else ''))
    beside = result.get('floor_beside')
    if beside:
        shown = ['/clock', 'ins/imu'] + (['step_barrier'] if result.get('drive') == 'lockstep'
                                         else [])
        parts.append('floor beside: ' + ', '.join(
            f"{topic.split('/')[-1]} {beside['topics'][topic]['delivered']}/"
            f"{beside['topics'][topic]['sent']} p50 {beside['topics'][topic]['latency_p50_ms']} ms"
            for topic in shown))
    return ' | '.join(parts)


def _subscriber_name(label: str) -> str:
    topic, _, variant = label.partition('@')
    if topic in LARGE_TOPICS and not variant:
        return f'reliable {SUBSCRIBER_LARGE_DEPTH}'
    if not variant:
        return f'reliable {SUBSCRIBER_DEPTH}'
    kind = 'best effort' if variant.startswith('be') else 'reliable'
    return f"{kind} {variant.lstrip('bre')}"


def comparison_lines(report: dict[str, Any]) -> list[str]:
    """
    Return the stock-against-profile table: per drive, rate, topic and subscriber.

    Each configuration shows the bridge's p50, the floor's p50 (of the floor beside the
    bridge in the same run where there is one, else of the floor's own run), the difference,
    and the bridge's losses; ``<= 0.3`` says whether stock met the issue-11 target (clock, INS
    and barrier within 0.3 ms of the floor).
    """
    runs: dict[tuple[str, float, str, str], dict[str, Any]] = {}
    for run in report['runs']:
        runs[(run.get('drive', 'play'), run['rate'], run['config'], run['mode'])] = run
    configs = [config for config in DEFAULT_CONFIGS
               if any(key[2] == config for key in runs)]
    header = ['drive', 'rate', 'topic', 'subscriber']
    for config in configs:
        header += [f'{config} bridge p50', f'{config} floor p50', f'{config} added',
                   f'{config} lost (floor) of sent']
    header.append('stock <= 0.3')
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    for drive, rate in sorted({(key[0], key[1]) for key in runs}):
        labels = []
        for config in configs:
            for run in (runs.get((drive, rate, config, 'bridge')),
                        runs.get((drive, rate, config, 'floor'))):
                if run is not None:
                    labels += [label for label in run['topics'] if label not in labels]
        for label in sorted(labels, key=_label_order):
            topic = label_topic(label)
            if drive == 'play' and topic == 'step_barrier':
                continue
            cells = [drive, f'{rate:g}', topic, _subscriber_name(label)]
            met = ''
            for config in configs:
                bridge_run = runs.get((drive, rate, config, 'bridge'), {})
                bridge = bridge_run.get('topics', {}).get(label)
                floor = (bridge_run.get('floor_beside', {}).get('topics', {}).get(label)
                         or runs.get((drive, rate, config, 'floor'), {}).get('topics', {}).get(
                             label))
                b50 = bridge['latency_p50_ms'] if bridge else None
                f50 = floor['latency_p50_ms'] if floor else None
                added = round(b50 - f50, 3) if b50 is not None and f50 is not None else None
                floor_lost = floor['lost'] if floor else '-'
                lost = f"{bridge['lost']} ({floor_lost}) of {bridge['sent']}" if bridge else ''
                cells += [_cell(b50), _cell(f50), _cell(added), lost]
                if config == 'stock' and topic in SMALL_TOPICS and added is not None:
                    met = 'yes' if added <= TARGET_ADDED_P50_MS['/clock'] else 'no'
            cells.append(met)
            lines.append('| ' + ' | '.join(cells) + ' |')
    return lines


def headline_lines(report: dict[str, Any]) -> list[str]:
    """
    Return the headline: the bridge against the floor, as ratios and differences, per run pair.

    CPU per message of the bridge over the floor's; p50 and p99 over the floor's (worst topic
    of the plain subscriptions); messages lost by each.
    """
    pairs: dict[tuple[str, str, float], dict[str, dict[str, Any]]] = {}
    for run in report['runs']:
        pairs.setdefault((run['config'], run.get('drive', 'play'), run['rate']), {})[
            run['mode']] = run
    lines = ['## The bridge against the floor', '',
             '| DDS | drive | rate | sim x bridge (floor) | CPU us/message bridge (floor) | '
             'ratio | ms/MB bridge (floor) | p50 over floor, ms, worst topic | '
             'p99 over floor, ms, worst topic | lost bridge (floor) |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for (config, drive, rate), pair in sorted(pairs.items()):
        bridge, floor = pair.get('bridge'), pair.get('floor')
        if bridge is None or floor is None:
            continue
        plain = [topic for topic in TOPICS if topic != 'step_barrier' or drive == 'lockstep']
        ratios = bridge.get('vs_floor', {})

        def worst(name: str) -> str:
            values = [(ratios[topic][name], topic) for topic in plain
                      if ratios.get(topic, {}).get(name) is not None]
            if not values:
                return ''
            value, topic = max(values)
            return f'{value:g} ({topic})'

        lost = sum(bridge['topics'][topic]['lost'] for topic in plain)
        floor_lost = sum(floor['topics'][topic]['lost'] for topic in plain)
        lines.append(
            f"| {config} | {drive} | {rate:g} | {bridge['achieved_rate']} "
            f"({floor['achieved_rate']}) | {_cell(bridge.get('cpu_us_per_message'))} "
            f"({_cell(floor.get('cpu_us_per_message'))}) | "
            f"{_cell(ratios.get('cpu_per_message_ratio'))} | "
            f"{_cell(bridge.get('cpu_ms_per_mb'))} ({_cell(floor.get('cpu_ms_per_mb'))}) | "
            f"{worst('added_p50_ms')} | {worst('added_p99_ms')} | {lost} ({floor_lost}) |")
    return lines + ['']


def write_markdown(report: dict[str, Any], path: str, png_name: str | None) -> None:
    """Write the report as markdown tables."""
    machine = report['machine']
    settings = report['settings']
    lines = [
        '# Sensor bridge benchmark', '',
        f"Measured {report['date']} UTC with `tools/benchmark.py` on {machine['cores']} cores "
        f"({machine['platform']}, Python {machine['python']}, "
        f"{settings.get('fast_dds', 'Fast DDS')} from {settings.get('prefix', 'the prefix')}); "
        f"{settings['seconds']:g} wall seconds per run (other rates: "
        f"{settings.get('rate_seconds') or 'none'}); the emulator renders every "
        f"{settings['emulator_render_every']}th LiDAR and camera frame afresh"
        + (f" and runs at nice {settings['emulator_nice']}" if settings.get('emulator_nice')
           else '') + '.', '',
        'Two configurations. `stock`: no Fast DDS variable in any process, as a new user has '
        'it; the bridge applies its own writer settings (acres_bridge/runtime/dds.py), the floor '
        'and the subscriber run Fast DDS as it ships. `profile`: every process loads the '
        f"package's profile ({os.path.basename(settings.get('profile') or '')}, with "
        '`RMW_FASTRTPS_USE_QOS_FROM_XML=1`). Two drives. `play`: the emulator plays at the '
        f'rate. `lockstep`: {LOCKSTEP_STEPS}-step requests paced at the rate, each ending with '
        'a step barrier; the floor publishes the same bursts and barriers.', '',
        'Latency is receive time in the subscriber (the middleware\'s reception time) minus '
        'the publish time of the frame (CLOCK_MONOTONIC; for the bridge the time the emulator '
        'queued the frame, so it includes the TCP hop, decoding, conversion and DDS). `floor` '
        'is a plain rclpy publisher of ready-made messages with the bridge\'s QoS (in lockstep '
        'its publish time is the release of the burst: a message waits for those before it, '
        'as in the bridge); `added` is '
        "bridge minus floor; `own` is added minus the bridge's transport latency (its "
        "/diagnostics: its receive time minus the frame's publish time, i.e. the emulator's "
        'queue and the TCP hop). `sim x` is the real-time factor the emulator reached. Lost = '
        'sent by the emulator (or the floor) and never received by that subscription; a '
        'keep-last 1 or 10 reader drops what it has not taken before newer samples arrive, '
        'by design.', '',
        f"Subscriptions: {settings['qos']}.", '']
    if settings.get('floor_beside'):
        lines += [
            'Floor beside the bridge (`--floor-beside`): in each bridge run a plain rclpy '
            'publisher also published clock, INS and barrier on `/floor/...` topics, read by '
            'the same subscriber, playing at the rate or releasing one burst with each step '
            'request; for those topics the comparison takes it as the floor (same run, same '
            'load), and `lost (floor)` is its loss.', '']
    lines += headline_lines(report)
    lines += ['## Stock against profile', '']
    lines += comparison_lines(report)
    lines.append('')
    if png_name:
        lines += [f'![latency and loss against the real-time factor]({png_name})', '']
    lines += ['## Every run (reliable subscriber, depth %d; clouds and images %d)'
              % (SUBSCRIBER_DEPTH, SUBSCRIBER_LARGE_DEPTH), '',
              '| DDS | drive | rate | run | sim x | topic | delivered/sent | p50 ms | p99 ms '
              '| max ms | added p50 ms | own p50 ms | CPU core | CPU s / sim s | RSS max MB |',
              '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for run in report['runs']:
        ratios = run.get('vs_floor', {})
        shown = [topic for topic in TOPICS
                 if topic != 'step_barrier' or run.get('drive') == 'lockstep']
        for index, topic in enumerate(shown):
            t = run['topics'][topic]
            added = ratios.get(topic, {}).get('added_p50_ms')
            own = ratios.get(topic, {}).get('own_p50_ms')
            cells = [run['config'], run.get('drive', 'play'), f"{run['rate']:g}", run['mode'],
                     f"{run['achieved_rate']}"]
            tail = [_cell(run['cpu_core_fraction']), _cell(run['cpu_s_per_sim_s']),
                    _cell(run['rss_mb_max'])]
            if index:
                cells, tail = [''] * len(cells), [''] * len(tail)
            cells += [topic, f"{t['delivered']}/{t['sent']}", _cell(t['latency_p50_ms']),
                      _cell(t['latency_p99_ms']), _cell(t['latency_max_ms']), _cell(added),
                      _cell(own)]
            lines.append('| ' + ' | '.join(cells + tail) + ' |')
    lines.append('')
    lines += ['The bridge said, in each configuration:', '']
    for line in sorted({run['dds_line'] for run in report['runs'] if run.get('dds_line')}):
        lines.append(f'- `{line}`')
    lines.append('')
    text = '\n'.join(lines)
    # Hand-written findings below the marker survive a new run.
    if os.path.exists(path):
        with open(path, encoding='utf-8') as stream:
            previous = stream.read()
        if NOTES_MARKER in previous:
            text += '\n' + previous[previous.index(NOTES_MARKER):]
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(text)


def _cell(value: Any) -> str:
    return '' if value is None else f'{value}'


def write_plot(report: dict[str, Any], path: str) -> None:
    """Plot p50/p99 latency and loss against the real-time factor, per topic and run."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shown = ('/clock', 'ins/imu', 'lidar/points', 'camera/image_raw')
    figure, axes = plt.subplots(1, 3, figsize=(16, 5))
    styles = {('bridge', 'stock'): '-', ('bridge', 'profile'): '-.',
              ('floor', 'stock'): ':', ('floor', 'profile'): '--'}
    colours = dict(zip(shown, ('tab:blue', 'tab:orange', 'tab:green', 'tab:red')))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in report['runs']:
        if run.get('drive', 'play') == 'play':
            groups.setdefault((run['mode'], run['config']), []).append(run)
    for (mode, config), runs in groups.items():
        runs = sorted(runs, key=lambda run: run['rate'])
        rates = [run['rate'] for run in runs]
        for topic in shown:
            label = f'{topic} {mode} {config}'
            style = styles.get((mode, config), '-')
            p50 = [run['topics'][topic]['latency_p50_ms'] for run in runs]
            p99 = [run['topics'][topic]['latency_p99_ms'] for run in runs]
            loss = [run['topics'][topic]['loss_pct'] for run in runs]
            axes[0].plot(rates, p50, style, marker='o', color=colours[topic], label=label)
            axes[1].plot(rates, p99, style, marker='o', color=colours[topic], label=label)
            axes[2].plot(rates, loss, style, marker='o', color=colours[topic], label=label)
    for axis, title in zip(axes, ('latency p50 (ms)', 'latency p99 (ms)', 'lost (%)')):
        axis.set_xlabel('real-time factor')
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
    axes[0].set_yscale('log')
    axes[1].set_yscale('log')
    axes[2].legend(fontsize=6, loc='upper left')
    figure.suptitle(f"acres_bridge sensor_bridge vs rclpy floor, {report['machine']['cores']} "
                    'cores')
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='tools/benchmark.py',
        description='Measure the sensor bridge against a plain rclpy publisher (the DDS '
                    'floor): delivery, end-to-end latency, CPU and memory, at several '
                    'real-time factors, with stock Fast DDS and with the package\'s profile.')
    parser.add_argument('--rates', type=float, nargs='+', default=list(DEFAULT_RATES),
                        help='real-time factors (default 1 10)')
    parser.add_argument('--configs', nargs='+',
                        choices=DEFAULT_CONFIGS + TWO_HOST_CONFIGS + TWO_HOST_EXTRA_CONFIGS,
                        default=None,
                        help='DDS configurations: stock (nothing in the environment), profile '
                             '(the shipped profile for the prefix\'s Fast DDS); default both')
    parser.add_argument('--profile-file', default=None, metavar='XML',
                        help='the profile configuration loads this file instead of the shipped '
                             'profile (a user\'s own, or the other Fast DDS version\'s)')
    parser.add_argument('--drives', nargs='+', choices=DEFAULT_DRIVES,
                        default=list(DEFAULT_DRIVES),
                        help='play (the emulator plays at the rate) and/or lockstep '
                             f'({LOCKSTEP_STEPS}-step requests paced at the rate, with step '
                             'barriers); default both')
    parser.add_argument('--no-variants', dest='variants', action='store_false',
                        help='subscribe once per topic (reliable); by default clock, INS and '
                             'barrier are also read reliable 10 and 1, best effort 1000, 10, 1')
    where = parser.add_mutually_exclusive_group()
    prefixes = ', '.join(f'{name}: {path}' for name, path in DISTRO_PREFIXES.items())
    where.add_argument('--distro', choices=sorted(DISTRO_PREFIXES),
                       help=f"run every process from this distribution's prefix ({prefixes})")
    where.add_argument('--prefix', default=None,
                       help='run every process from this prefix (default: this Python\'s)')
    parser.add_argument('--modes', nargs='+', choices=('bridge', 'floor'),
                        default=['bridge', 'floor'], help='what to measure (default both)')
    parser.add_argument('--seconds', type=float, default=60.0,
                        help='wall seconds of each run (default 60)')
    parser.add_argument('--rate-seconds', nargs='*', default=[], metavar='RATE=SECONDS',
                        help='other wall seconds for some rates, e.g. 1=20 5=20 20=20')
    parser.add_argument('--domain-id', type=int, default=DEFAULT_DOMAIN_ID,
                        help=f'ROS_DOMAIN_ID of the runs (default {DEFAULT_DOMAIN_ID})')
    parser.add_argument('--depth', type=int, default=200,
                        help="the floor's keep-last depth for clock, INS and camera info "
                             "(default 200, the bridge's SMALL_DEPTH)")
    parser.add_argument('--large-depth', type=int, default=10,
                        help="the floor's keep-last depth for clouds and images (default 10, "
                             "the bridge's LARGE_DEPTH)")
    parser.add_argument('--render-every', type=int, default=10,
                        help="the emulator's --render-every (default 10: the emulator's own "
                             'rendering does not starve the bridge)')
    parser.add_argument('--emulator-nice', type=int, default=0, metavar='N',
                        help='run the emulator N steps of niceness below the other processes '
                             '(default 0): on a machine with few cores its own CPU then no '
                             'longer delays the bridge and the subscriber when they wake; '
                             'the floor runs have no emulator')
    parser.add_argument('--floor-beside', action='store_true',
                        help='run a floor publisher of clock, INS and barrier beside the '
                             'bridge in its own runs (topics under /floor, the same '
                             'subscriber, in lockstep a burst with each step request); the '
                             'comparison then takes that floor, under the same load')
    parser.add_argument('--output-dir', default=os.path.join(ROOT, 'docs'),
                        help='where benchmarks.json, .md and .png go (default docs/)')
    parser.add_argument('--work-dir', default=None,
                        help='where the raw records and child logs go (default a temp folder)')
    parser.add_argument('--profile', action='store_true',
                        help='run the bridge in-process under cProfile (all threads); the '
                             'stats go to <work-dir>/bridge-*.prof and the bridge log')
    parser.add_argument('--perf', action='store_true',
                        help='sample the measured process (bridge or floor) with Linux perf '
                             'over the measured window and split its CPU by layer: kernel '
                             'TCP, Fast DDS, rcl + rmw, Python (tools/perf_split.py; the '
                             'perf.data files stay in --work-dir)')
    parser.add_argument('--bridge-command', default=None,
                        help='run this command instead of the sensor_bridge executable (the '
                             '--ros-args with namespace and port are appended), e.g. a '
                             'patched bridge to compare')
    parser.add_argument('--reanalyse', metavar='REPORT_JSON', default=None,
                        help='recompute the figures of a report from the records in --work-dir '
                             'and write the outputs again (no new runs)')
    parser.add_argument('--name', default=None,
                        help='the base name of the output files (default benchmarks, with '
                             '--hosts 2 benchmarks_two_hosts)')
    parser.add_argument('--hosts', type=int, choices=(1, 2), default=1,
                        help='2: the bridge and the floor on host A, the subscriber on host B '
                             '(two network namespaces joined by a veth link; root), play only, '
                             f'configurations {", ".join(TWO_HOST_CONFIGS)} '
                             '(tools/bench_two_hosts.py), and each repeat also one host, stock, '
                             'at 1x')
    parser.add_argument('--subscriber-distro', choices=sorted(DISTRO_PREFIXES), default=None,
                        help='with --hosts 2: host B\'s subscriber runs from this '
                             'distribution\'s prefix (a reader of its Fast DDS); default: the '
                             'publisher\'s')
    parser.add_argument('--mtu', type=int, default=None,
                        help='with --hosts 2: the MTU of the link (default 1500)')
    parser.add_argument('--repeat', type=int, default=1,
                        help='with --hosts 2: how many times to run everything (default 1)')
    return parser


def _role_parser(role: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f'benchmark.py {role}')
    parser.add_argument('--record', required=True)
    parser.add_argument('--rate', type=float, default=1.0)
    parser.add_argument('--seconds', type=float, default=10.0)
    parser.add_argument('--depth', type=int, default=200)
    parser.add_argument('--large-depth', type=int, default=10)
    parser.add_argument('--render-every', type=int, default=10)
    parser.add_argument('--nice', type=int, default=0)
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--drive', choices=DEFAULT_DRIVES, default='play')
    parser.add_argument('--variants', action='store_true')
    parser.add_argument('--beside', action='store_true')
    parser.add_argument('--release', choices=('schedule', 'command'), default='schedule')
    return parser


ROLES = {'_emulator': role_emulator, '_floor': role_floor, '_subscriber': role_subscriber,
         '_bridge_profiled': role_bridge_profiled, '_control': role_control}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, or one of its child roles."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ROLES:
        if argv[0] != '_bridge_profiled':
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return ROLES[argv[0]](_role_parser(argv[0]).parse_args(argv[1:]))
    args = _parser().parse_args(argv)

    def on_terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt   # unwinds run_once, which stops every child

    signal.signal(signal.SIGTERM, on_terminate)
    import tempfile
    prefix = (os.path.join(ROOT, DISTRO_PREFIXES[args.distro]) if args.distro
              else args.prefix or sys.prefix)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix='acres_benchmark_')
    print(f'records and logs in {work_dir}', flush=True)
    rate_seconds = {float(item.split('=')[0]): float(item.split('=')[1])
                    for item in args.rate_seconds}
    if args.hosts == 2:
        report = run_two_hosts(
            rates=args.rates, configs=args.configs or list(TWO_HOST_CONFIGS),
            seconds=args.seconds, rate_seconds=rate_seconds, repeat=args.repeat, mtu=args.mtu,
            modes=args.modes, domain_id=args.domain_id, work_dir=work_dir, depth=args.depth,
            large_depth=args.large_depth, render_every=args.render_every,
            emulator_nice=args.emulator_nice, bridge_command=args.bridge_command,
            variants=args.variants, prefix=prefix, log=lambda text: print(text, flush=True),
            subscriber_prefix=(os.path.join(ROOT, DISTRO_PREFIXES[args.subscriber_distro])
                               if args.subscriber_distro else None))
        os.makedirs(args.output_dir, exist_ok=True)
        path = os.path.join(args.output_dir, (args.name or 'benchmarks_two_hosts') + '.json')
        with open(path, 'w', encoding='utf-8') as stream:
            json.dump(report, stream, indent=1)
        print(f'wrote {path}', flush=True)
        return 0
    if args.reanalyse:
        with open(args.reanalyse, encoding='utf-8') as stream:
            report = reanalyse(json.load(stream), work_dir)
    else:
        report = run_benchmark(
            rates=args.rates, configs=args.configs or list(DEFAULT_CONFIGS),
            seconds=args.seconds,
            domain_id=args.domain_id, work_dir=work_dir, depth=args.depth,
            large_depth=args.large_depth, render_every=args.render_every,
            emulator_nice=args.emulator_nice, modes=args.modes,
            profile=args.profile, bridge_command=args.bridge_command,
            rate_seconds=rate_seconds,
            drives=args.drives, variants=args.variants, floor_beside=args.floor_beside,
            prefix=prefix, profile_file=args.profile_file, perf=args.perf,
            log=lambda text: print(text, flush=True))
    os.makedirs(args.output_dir, exist_ok=True)
    base = os.path.join(args.output_dir, args.name or 'benchmarks')
    with open(base + '.json', 'w', encoding='utf-8') as stream:
        json.dump(report, stream, indent=1)
    write_plot(report, base + '.png')
    write_markdown(report, base + '.md', os.path.basename(base + '.png'))
    print(f'wrote {base}.json, {base}.md, {base}.png', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
