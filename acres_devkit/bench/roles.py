# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The child processes of the sensor benchmark, each one a process of its own.

Each runs as ``python -m acres_devkit.bench.sensor _<role>``: the emulator, the floor
publisher, the measuring subscriber, the control proxy and the bridge under a profiler.
"""

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

from acres_bridge.runtime import dds
from acres_devkit.bench.harness import Commands
from acres_devkit.bench.harness import say
from acres_devkit.bench.topics import BESIDE_FRAMES
from acres_devkit.bench.topics import BESIDE_NAMESPACE
from acres_devkit.bench.topics import cdr_stamp_key
from acres_devkit.bench.topics import DEFAULT_DRIVES
from acres_devkit.bench.topics import DRAIN_TIMEOUT_S
from acres_devkit.bench.topics import FRAME_TOPICS
from acres_devkit.bench.topics import LARGE_TOPICS
from acres_devkit.bench.topics import LOCKSTEP_STEPS
from acres_devkit.bench.topics import message_types
from acres_devkit.bench.topics import NAMESPACE
from acres_devkit.bench.topics import PHYSICS_HZ
from acres_devkit.bench.topics import qos_profile
from acres_devkit.bench.topics import stamp_key
from acres_devkit.bench.topics import subscribed_topic
from acres_devkit.bench.topics import subscriptions
from acres_devkit.bench.topics import TOPIC_FRAME
from acres_devkit.bench.topics import TOPICS


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


def floor_messages(columns: int, rings: int, width: int, height: int) -> dict[str, Any]:
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


def set_stamp(message: Any, topic: str, sec: int, nanosec: int) -> None:
    stamp = message.clock if topic == '/clock' else message.header.stamp
    stamp.sec = sec
    stamp.nanosec = nanosec


def is_due(step: int, hz: int) -> bool:
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
    messages = floor_messages(1800, 32, 896, 512)
    commands = Commands()
    say('READY')
    records: list[tuple[int, int, float]] = []
    publish_errors = 0
    command = commands.get()
    while command == 'warmup':
        # One message per topic, stamped before the run's first step; the subscriber forgets it.
        for topic in topics:
            set_stamp(messages[topic], topic, 0, 0)
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
                set_stamp(message, topic, sec, nanosec)
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
                if is_due(step, 100):
                    frames.append(3)
                if is_due(step, 10):
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
