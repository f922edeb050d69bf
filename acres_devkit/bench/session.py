# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure where a session's sensor streams should run: one process, or one process per agent.

Each run plays the emulator (its own process) at a real-time factor with one to four agents
(Polaris, Maxxum, then a second of each, which the emulator names ``polaris_1`` and
``maxxum_1``) for ``--seconds``, bridged by one of

``session-in_process``
    the ``acres_bridge`` executable with ``sensor_processes:=in_process`` (every stream and
    sim_control in one process, one GIL);
``session-per_agent``
    the ``acres_bridge`` executable with ``sensor_processes:=per_agent`` (sim_control and
    lockstep in the session's process, each stream in a child process);
``session-auto``
    the ``acres_bridge`` executable as users start it (``sensor_processes:=auto``, which picks
    one of the two above from the agents and the cores);
``sensor_bridge``
    one ``sensor_bridge`` executable per agent, started by this harness (no control node);

and measured by a subscriber process (raw, reliable, keep-last 1000, 100 for clouds and
images) on /clock and every agent's topics. Figures per run: messages delivered against the
frames the emulator queued (by stamp, per topic), latency p50, p90 and p99 (DDS reception time
minus the emulator's publish time in the frame header, both CLOCK_MONOTONIC), CPU per process
(share of one core over the run) and RSS, the real-time factor the emulator reached, and the
bridge processes' CPU per message and per MB of cloud and image payload.

``--floor-beside``: in the same run a plain rclpy publisher (tools/benchmark.py's floor, its
own process) publishes clock and INS messages of the same sizes under ``/floor`` at the rate,
read by the same subscriber; ``floor/clock`` and ``floor/ins`` then give the latency and loss
of DDS alone under the same load, and ``floor_cpu_us_per_message`` its CPU per message.

    .venv/bin/python tools/bench_session.py --seconds 20 --rates 10 20
    .venv/bin/python tools/bench_session.py --agents 2 --modes session-per_agent --seconds 5
    .venv/bin/python tools/bench_session.py --agents 1 --rates 10 --floor-beside
    .venv/bin/python tools/bench_session.py --agents 1 2 4 --rates 1 \
        --modes session-in_process session-per_agent       # the agent-count table

After the runs it prints a Markdown table of each mode and rate by agent count: the CPU and
RSS of the bridge's processes together, and each added agent's CPU against the first's.

Results: one JSON line per run on stdout and in ``--output`` (default
/tmp/bench_session.json); docs/benchmarks.md has the table of the last full run ("Sensor
streams: one process or one per agent").
"""

import argparse
from collections.abc import Sequence
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from acres_bridge.runtime import dds
from acres_devkit import dds_environment
from acres_devkit.bench.harness import Child
from acres_devkit.bench.harness import Commands
from acres_devkit.bench.harness import ROOT
from acres_devkit.bench.harness import say
from acres_devkit.bench.report import portable
from acres_devkit.bench.topics import beside_topic
from acres_devkit.bench.topics import cdr_stamp_key
from acres_devkit.bench.topics import message_types
from acres_devkit.bench.topics import PAYLOAD_BYTES
from acres_devkit.bench.topics import qos_profile
from acres_devkit.bench.topics import sent_key
from acres_devkit.bench.topics import stamp_key

# The agents in the order the emulator names them: a vehicle's second instance is <vehicle>_1.
AGENTS = ('polaris', 'maxxum', 'polaris_1', 'maxxum_1')
MODES = ('session-in_process', 'session-per_agent', 'session-auto', 'sensor_bridge')
PHYSICS_HZ = 120
START_TIMEOUT_S = 90.0
DRAIN_TIMEOUT_S = 30.0
QUIET_S = 4.0       # past Fast DDS's stock 3 s heartbeat: late repairs still count
# frame type -> the topics of one frame (relative to the agent; /clock from agent 0 only)
FRAME_TOPICS = {2: ('/clock',), 3: ('ins/fix', 'ins/imu', 'ins/odometry',
                                    'ground_truth/odometry'),
                4: ('lidar/points',), 5: ('camera/image_raw', 'camera/camera_info')}
LARGE = ('lidar/points', 'camera/image_raw')
GROUPS = {'clock': ('/clock',), 'ins': FRAME_TOPICS[3], 'lidar': ('lidar/points',),
          'camera': ('camera/image_raw', 'camera/camera_info')}
GROUP_HZ = {'clock': 120, 'ins': 100, 'lidar': 10, 'camera': 10}   # both vehicles' layouts
# What the floor beside publishes (tools/benchmark.py --beside), by its frame types.
BESIDE_FRAME_TOPICS = {2: FRAME_TOPICS[2], 3: FRAME_TOPICS[3]}


def agent_names(count: int, vehicle: str | None = None) -> tuple[str, ...]:
    """Return the names of ``count`` agents: AGENTS, or instances of one ``vehicle``."""
    if vehicle is None:
        return AGENTS[:count]
    return tuple(vehicle if index == 0 else f'{vehicle}_{index}' for index in range(count))


def vehicle_of(agent: str) -> str:
    """Return the vehicle of an agent name of AGENTS (``polaris_1`` -> ``polaris``)."""
    return agent.split('_')[0]


def topic_of(agent: str, topic: str) -> str:
    return topic if topic.startswith('/') else f'/{agent}/{topic}'


def expected_topics(agents: Sequence[str], beside: bool = False) -> dict[str, str]:
    """Return full topic -> relative topic of every topic measured (and the floor's)."""
    topics = {'/clock': '/clock'}
    for agent in agents:
        for frame_type, names in FRAME_TOPICS.items():
            if frame_type != 2:
                topics.update({topic_of(agent, name): name for name in names})
    if beside:
        for names in BESIDE_FRAME_TOPICS.values():
            topics.update({beside_topic(name): name for name in names})
    return topics


# --- child: the emulator ------------------------------------------------------------------


def role_emulator(args: argparse.Namespace) -> int:
    """Run the emulator paused; record (agent, type, stamp key, time) of each frame queued."""
    from acres_bridge.emulator.server import Emulator
    emulator = Emulator(tuple(vehicle_of(agent) for agent in args.agents), lockstep=True,
                        rate=args.rate, render_every=args.render_every, drive='loop').start()
    named = [agent.name for agent in emulator.world.agents]
    if named != list(args.agents):
        raise SystemExit(f'the emulator named its agents {named}, not {args.agents}')
    records: list[tuple[str, int, int, float]] = []
    lock = threading.Lock()
    for agent, stream in zip(args.agents, emulator.streams):
        original = stream._queue_locked

        def recording(frame_type, payload, stamp_s, *rest, agent=agent, original=original,
                      **options):
            queued = original(frame_type, payload, stamp_s, *rest, **options)
            if queued and int(frame_type) in FRAME_TOPICS:
                with lock:
                    records.append((agent, int(frame_type), stamp_key(stamp_s),
                                    time.monotonic()))
            return queued
        stream._queue_locked = recording
    commands = Commands()
    ports = ','.join(str(port) for port in emulator.sensor_ports)
    say(f'READY control={emulator.control_port} sensors={ports}')
    while (command := commands.get()) != 'stop':
        if command == 'drain':
            drained = all(stream.wait_drained(DRAIN_TIMEOUT_S) for stream in emulator.streams)
            say(f'DRAINED {drained}')
        elif command == 'reset':
            with lock:
                records.clear()
            say('RESET')
        elif command == 'clients':
            say(f'CLIENTS {sum(stream.has_client for stream in emulator.streams)}')
    emulator.stop()
    with open(args.record, 'w', encoding='utf-8') as stream:
        json.dump(records, stream)
    say(f'DONE frames={len(records)}')
    return 0


# --- child: the subscriber ----------------------------------------------------------------


def role_subscriber(args: argparse.Namespace) -> int:
    """Take every message raw in a wait-set loop; record (stamp key, reception time) each."""
    import rclpy
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
    rclpy.init()
    context = rclpy.get_default_context()
    node = rclpy.create_node('bench_session_subscriber')
    types = message_types()
    topics = expected_topics(args.agents, args.beside)
    logs: dict[str, list[tuple[int, float]]] = {topic: [] for topic in topics}
    subscriptions = [
        (node.create_subscription(types[name], topic, lambda _: None,
                                  qos_profile(100 if name in LARGE else 1000), raw=True), topic)
        for topic, name in topics.items()]
    commands = Commands()
    stop = threading.Event()

    def serve() -> None:
        for command in iter(commands.get, 'stop'):
            if command == 'counts':
                say('COUNTS ' + ' '.join(str(len(log)) for log in logs.values()))
            elif command == 'reset':
                for log in logs.values():
                    log.clear()
                say('RESET')
        stop.set()

    threading.Thread(target=serve, name='commands', daemon=True).start()
    say('READY')
    offset_ns = time.time_ns() - time.monotonic_ns()
    with context.handle:
        handles = [(subscription.handle, subscription.msg_type, logs[topic])
                   for subscription, topic in subscriptions]
        for handle, _, _ in handles:
            handle.__enter__()
        wait_set = _rclpy.WaitSet(len(handles), 0, 0, 0, 0, 0, context.handle)
        while not stop.is_set():
            wait_set.clear_entities()
            for handle, _, _ in handles:
                wait_set.add_subscription(handle)
            wait_set.wait(100_000_000)
            ready = set(wait_set.get_ready_entities('subscription'))
            for handle, msg_type, log in handles:
                taken = handle.take_message(msg_type, True) if handle.pointer in ready else None
                while taken is not None:
                    data, info = taken
                    log.append((cdr_stamp_key(data),
                                (info['received_timestamp'] - offset_ns) / 1e9))
                    taken = handle.take_message(msg_type, True)
    with open(args.record, 'w', encoding='utf-8') as stream:
        json.dump(logs, stream)
    say('DONE')
    os._exit(0)


# --- child: the session's client ---------------------------------------------------------


def role_driver(args: argparse.Namespace) -> int:
    """
    Drive a session through its ROS services (the simulator takes one control client only).

    Commands: ``step`` (12 steps), ``play``, ``pause``; each answers ``OK`` or ``FAILED ...``.
    """
    import rclpy
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import SetSimulationState
    from simulation_interfaces.srv import StepSimulation
    rclpy.init()
    node = rclpy.create_node('bench_session_driver')
    step = node.create_client(StepSimulation, '/step_simulation')
    state = node.create_client(SetSimulationState, '/set_simulation_state')
    for client in (step, state):
        client.wait_for_service(timeout_sec=START_TIMEOUT_S)
    commands = Commands()
    say('READY')
    for command in iter(commands.get, 'stop'):
        if command == 'step':
            future = step.call_async(StepSimulation.Request(steps=12))
        else:
            request = SetSimulationState.Request()
            request.state.state = (SimulationState.STATE_PLAYING if command == 'play'
                                   else SimulationState.STATE_PAUSED)
            future = state.call_async(request)
        rclpy.spin_until_future_complete(node, future, timeout_sec=60.0)
        result = future.result().result if future.done() else None
        say('OK' if result is not None and result.result == 1 else f'FAILED {result}')
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


class _ControlDriver:
    """The same commands straight over the control channel (no session, no sim_control)."""

    def __init__(self, port: int) -> None:
        from acres_bridge.protocol.control_client import ControlClient
        self._client = ControlClient(port=port, name='bench_session')
        self._client.start()

    def ask(self, command: str, prefixes: tuple[str, ...], timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if command == 'step':
                    reply = self._client.request('step', steps=12, timeout_s=30.0)
                else:
                    reply = self._client.request('set_state', state=1 if command == 'play'
                                                 else 2, timeout_s=30.0)
                return 'OK' if reply.get('ok') else f'FAILED {reply}'
            except Exception:   # noqa: B902 - not connected yet: try again until the deadline
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def finish(self) -> None:
        self._client.stop()


# --- the harness ----------------------------------------------------------------------------


def environment(domain_id: int) -> dict[str, str]:
    """Stock Fast DDS (nothing of the user's), a local graph of the run's own."""
    env = {name: value for name, value in os.environ.items()
           if name not in dds_environment.USER_VARIABLES}
    dds_environment.keep_discovery_local(env, dds.find_fast_dds())
    env.update(ROS_DOMAIN_ID=str(domain_id), PYTHONUNBUFFERED='1',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    return env


def bridge_commands(mode: str, agents: Sequence[str], control: int,
                    sensors: Sequence[int]) -> list[list[str]]:
    """Return the command lines of the bridge processes of a mode."""
    binary = os.path.join(sys.prefix, 'bin')
    if mode.startswith('session-'):
        return [[os.path.join(binary, 'acres_bridge'), '--ros-args', '-p', f'port:={control}',
                 '-p', f'sensor_processes:={mode.split("-", 1)[1]}']]
    several = len(agents) > 1
    return [[os.path.join(binary, 'sensor_bridge'), '--ros-args', '-r', f'__ns:=/{agent}',
             '-p', f'port:={port}', '-p', f'publish_clock:={"true" if index == 0 else "false"}',
             *(('-p', f'frame_prefix:={agent}') if several else ())]
            for index, (agent, port) in enumerate(zip(agents, sensors))]


class CpuWatch:
    """CPU time and RSS of processes (and their children) from the start of a window."""

    def __init__(self, processes: dict[str, int]) -> None:
        import psutil
        self._processes = {}
        for name, pid in processes.items():
            parent = psutil.Process(pid)
            self._processes[name] = parent
            for index, child in enumerate(parent.children(recursive=True)):
                label = child.cmdline()[child.cmdline().index('--name') + 1] if (
                    '--name' in child.cmdline()) else str(index)
                self._processes[f'{name}/{label}'] = child
        self._start = {name: self._cpu(process) for name, process in self._processes.items()}
        self._wall = time.monotonic()

    @staticmethod
    def _cpu(process: Any) -> float:
        times = process.cpu_times()
        return times.user + times.system

    def figures(self) -> dict[str, dict[str, float]]:
        wall = time.monotonic() - self._wall
        return {name: {'cpu_core': round((self._cpu(process) - self._start[name]) / wall, 3),
                       'rss_mb': round(process.memory_info().rss / 1e6, 1)}
                for name, process in self._processes.items()}


def _wait_counts(subscriber: Child, predicate, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while True:
        counts = [int(count) for count in subscriber.ask('counts', ('COUNTS',)).split()[1:]]
        if predicate(counts) or time.monotonic() > deadline:
            return counts
        time.sleep(0.2)


def wait_quiet(subscriber: Child) -> None:
    last, since = None, time.monotonic()
    deadline = since + DRAIN_TIMEOUT_S
    while time.monotonic() < deadline:
        total = sum(_wait_counts(subscriber, lambda _: True, 0))
        if total != last:
            last, since = total, time.monotonic()
        elif time.monotonic() - since >= QUIET_S:
            return
        time.sleep(0.25)


def run_once(mode: str, agents: Sequence[str], rate: float, *, seconds: float,
             domain_id: int, work_dir: str, render_every: int,
             floor_beside: bool = False) -> dict[str, Any]:
    """Run one measurement and return its figures (with the floor's beside, if asked)."""
    tag = f'{mode}-{len(agents)}-{rate:g}x'
    env = environment(domain_id)
    me = [sys.executable, '-m', 'acres_devkit.bench.session']
    sent_path = os.path.join(work_dir, f'{tag}-sent.json')
    received_path = os.path.join(work_dir, f'{tag}-received.json')
    beside_path = os.path.join(work_dir, f'{tag}-beside-sent.json')
    children: list[Child] = []
    control = None
    floor = None
    try:
        subscriber = Child(f'{tag}-subscriber', me + [
            '_subscriber', '--record', received_path, '--agents', *agents]
            + (['--beside'] if floor_beside else []), env, work_dir)
        children.append(subscriber)
        if floor_beside:
            floor = Child(f'{tag}-beside', [
                sys.executable, '-m', 'acres_devkit.bench.sensor', '_floor', '--beside',
                '--rate', str(rate),
                '--seconds', str(seconds), '--record', beside_path, '--depth', '200',
                '--drive', 'play', '--release', 'schedule'], env, work_dir)
            children.append(floor)
            floor.expect('READY', START_TIMEOUT_S)
        emulator = Child(f'{tag}-emulator', me + [
            '_emulator', '--record', sent_path, '--rate', str(rate), '--render-every',
            str(render_every), '--agents', *agents], env, work_dir)
        children.append(emulator)
        ports = dict(item.split('=') for item in
                     emulator.expect('READY', START_TIMEOUT_S).split()[1:])
        sensors = [int(port) for port in ports['sensors'].split(',')]
        bridges = [Child(f'{tag}-bridge{index}', argv, dict(
            env, RCUTILS_LOGGING_SEVERITY_THRESHOLD='INFO'), work_dir, interrupt=True)
            for index, argv in enumerate(bridge_commands(mode, agents, int(ports['control']),
                                                         sensors))]
        children[:0] = bridges
        subscriber.expect('READY', START_TIMEOUT_S)
        if mode.startswith('session-'):
            control = Child(f'{tag}-driver', me + ['_driver'], env, work_dir)
            control.expect('READY', START_TIMEOUT_S)
        else:
            control = _ControlDriver(int(ports['control']))
        deadline = time.monotonic() + START_TIMEOUT_S
        while emulator.ask('clients', ('CLIENTS',)) != f'CLIENTS {len(agents)}':
            if time.monotonic() > deadline:
                raise RuntimeError('the bridge did not connect every sensor stream')
            time.sleep(0.2)
        # Warm-up: step until every topic has a message (every writer matched the reader).
        deadline = time.monotonic() + START_TIMEOUT_S
        while not all(_wait_counts(subscriber, lambda _: True, 0)):
            if time.monotonic() > deadline:
                raise RuntimeError('warm-up: some topic never reached the subscriber')
            control.ask('step', ('OK', 'FAILED'))
            if floor is not None:
                floor.ask('warmup', ('WARM',))
        emulator.ask('drain', ('DRAINED',), DRAIN_TIMEOUT_S + 5)
        wait_quiet(subscriber)
        emulator.ask('reset', ('RESET',))
        subscriber.ask('reset', ('RESET',))
        watch = CpuWatch({'emulator': emulator.process.pid,
                          'subscriber': subscriber.process.pid,
                          **{f'bridge{index}': bridge.process.pid
                             for index, bridge in enumerate(bridges)},
                          **({'floor': floor.process.pid} if floor is not None else {})})
        started = time.monotonic()
        control.ask('play', ('OK', 'FAILED'))
        if floor is not None:
            floor.send('play')
        time.sleep(seconds)
        control.ask('pause', ('OK', 'FAILED'))
        wall_s = time.monotonic() - started
        cpu = watch.figures()
        if floor is not None:
            floor.expect('PLAYED', START_TIMEOUT_S)
        emulator.ask('drain', ('DRAINED',), DRAIN_TIMEOUT_S + 5)
        wait_quiet(subscriber)
    finally:
        if control is not None:
            control.finish()
        for child in children:
            child.finish()
    with open(sent_path, encoding='utf-8') as stream:
        sent = json.load(stream)
    with open(received_path, encoding='utf-8') as stream:
        received = json.load(stream)
    result = {'mode': mode, 'agents': list(agents), 'rate': rate, 'seconds': seconds,
              'wall_s': round(wall_s, 2), 'cpu': cpu, 'load': os.getloadavg()[0],
              **figures(agents, sent, received)}
    result.update(cpu_per_message(result, cpu, wall_s))
    if floor is not None:
        with open(beside_path, encoding='utf-8') as stream:
            beside_sent = json.load(stream)
        result.update(beside_figures(beside_sent, received))
        small = sum(result[f'floor/{group}']['sent'] for group in ('clock', 'ins'))
        if small:
            result['floor_cpu_us_per_message'] = round(
                1e6 * cpu['floor']['cpu_core'] * wall_s / small, 1)
    return result


def cpu_per_message(result: dict[str, Any], cpu: dict[str, dict[str, float]],
                    wall_s: float) -> dict[str, Any]:
    """Return the bridge processes' CPU per message sent and per MB of large payload."""
    bridge_s = wall_s * sum(figures['cpu_core'] for name, figures in cpu.items()
                            if name.startswith('bridge'))
    messages = sum(figures['sent'] for label, figures in result.items()
                   if isinstance(figures, dict) and 'sent' in figures
                   and not label.startswith('floor/'))
    payload_mb = sum(result[label]['sent'] // (2 if label.endswith('camera') else 1)
                     * PAYLOAD_BYTES['camera/image_raw' if label.endswith('camera')
                                     else 'lidar/points']
                     for label in result
                     if label.endswith(('/lidar', '/camera'))) / 1e6
    return {'messages': messages,
            'cpu_us_per_message': round(1e6 * bridge_s / messages, 1) if messages else None,
            'cpu_ms_per_mb': round(1e3 * bridge_s / payload_mb, 3) if payload_mb else None}


def beside_figures(sent: list, received: dict[str, list]) -> dict[str, Any]:
    """Delivery and latency of the floor's clock and INS beside the bridge."""
    out: dict[str, Any] = {}
    for frame_type, group in ((2, 'clock'), (3, 'ins')):
        frames = {key: at_s for kind, key, at_s in sent if kind == frame_type}
        expected = received_count = 0
        latencies: list[float] = []
        for name in BESIDE_FRAME_TOPICS[frame_type]:
            expected += len(frames)
            keys = set()
            for key, at_s in received.get(beside_topic(name), []):
                match = next((k for k in (key, key - 1, key + 1) if k in frames), None)
                if match is not None and match not in keys:
                    keys.add(match)
                    latencies.append(at_s - frames[match])
            received_count += len(keys)
        out[f'floor/{group}'] = {'sent': expected, 'lost': expected - received_count,
                                 **_latency_figures(sorted(latencies))}
    return out


def _latency_figures(latencies: list[float]) -> dict[str, float | None]:
    """Return p50, p90 and p99 in ms of sorted latencies in seconds."""
    def at(fraction: float) -> float | None:
        if not latencies:
            return None
        return round(latencies[int(fraction * (len(latencies) - 1))] * 1e3, 2)
    return {'p50_ms': round(statistics.median(latencies) * 1e3, 2) if latencies else None,
            'p90_ms': at(0.9), 'p99_ms': at(0.99)}


def figures(agents: Sequence[str], sent: list, received: dict[str, list]) -> dict[str, Any]:
    """Delivery and latency per group of topics, and the real-time factor reached."""
    published: dict[str, dict[int, float]] = {}
    for agent, frame_type, key, at_s in sent:
        for name in FRAME_TOPICS[frame_type]:
            if name == '/clock' and agent != agents[0]:
                continue
            published.setdefault(topic_of(agent, name), {})[key] = at_s
    out: dict[str, Any] = {}
    clock_frames = len(published.get('/clock', {}))
    out['sim_s'] = round(clock_frames / PHYSICS_HZ, 2)
    for group, names in GROUPS.items():
        for agent in agents if group != 'clock' else agents[:1]:
            label = group if group == 'clock' else f'{agent}/{group}'
            expected = received_count = 0
            latencies = []
            for name in names:
                topic = topic_of(agent, name)
                frames = published.get(topic, {})
                expected += len(frames)
                keys = set()
                for key, at_s in received.get(topic, []):
                    match = sent_key(key, frames)
                    if match is not None and match not in keys:
                        keys.add(match)
                        latencies.append(at_s - frames[match])
                received_count += len(keys)
            latencies.sort()
            out[label] = {
                # due: the messages of the simulated time; sent: of the frames the emulator
                # queued (it drops sensor frames a slow client leaves waiting); lost: sent but
                # never received.
                'due': round(clock_frames / PHYSICS_HZ * GROUP_HZ[group]) * len(names),
                'sent': expected, 'lost': expected - received_count,
                **_latency_figures(latencies)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == '_driver':
        return role_driver(argparse.Namespace())
    if argv and argv[0] in ('_emulator', '_subscriber'):
        role = argparse.ArgumentParser()
        role.add_argument('--record', required=True)
        role.add_argument('--rate', type=float, default=1.0)
        role.add_argument('--render-every', type=int, default=10)
        role.add_argument('--agents', nargs='+', default=['polaris'])
        role.add_argument('--beside', action='store_true')
        args = role.parse_args(argv[1:])
        signal.signal(signal.SIGINT, signal.SIG_IGN)    # the harness ends them with 'stop'
        return role_emulator(args) if argv[0] == '_emulator' else role_subscriber(args)
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--agents', type=int, nargs='+', default=[1, 2], choices=(1, 2, 3, 4),
                        help='agent counts to run: 1 (Polaris), 2 (Polaris + Maxxum), 3 and '
                             '4 (a second Polaris, then a second Maxxum)')
    parser.add_argument('--vehicle', choices=('polaris', 'maxxum'),
                        help='every agent this vehicle (polaris, polaris_1, ...), so that each '
                             'added agent is the same work as the first; default: Polaris, '
                             'Maxxum, then a second of each')
    parser.add_argument('--modes', nargs='+', choices=MODES,
                        default=[mode for mode in MODES if mode != 'session-auto'],
                        help='default: every mode but session-auto (one of the first two)')
    parser.add_argument('--rates', type=float, nargs='+', default=[10.0, 20.0])
    parser.add_argument('--seconds', type=float, default=20.0)
    parser.add_argument('--render-every', type=int, default=10,
                        help='the emulator renders every Nth LiDAR/camera frame (default 10)')
    parser.add_argument('--domain-id', type=int, default=180 + os.getpid() % 40)
    parser.add_argument('--output', default='/tmp/bench_session.json')
    parser.add_argument('--floor-beside', action='store_true',
                        help='run a plain rclpy publisher of clock and INS beside the bridge, '
                             'under /floor, in each run: the latency, loss and CPU per message '
                             'of DDS alone under the same load')
    args = parser.parse_args(argv)
    work_dir = tempfile.mkdtemp(prefix='bench_session-')
    print(f'# logs in {work_dir}', flush=True)
    results = []
    for count in args.agents:
        for rate in args.rates:
            for mode in args.modes:
                result = run_once(mode, agent_names(count, args.vehicle), rate,
                                  seconds=args.seconds,
                                  domain_id=args.domain_id, work_dir=work_dir,
                                  render_every=args.render_every,
                                  floor_beside=args.floor_beside)
                results.append(result)
                print(json.dumps(result), flush=True)
                with open(args.output, 'w', encoding='utf-8') as stream:
                    stream.write(portable(json.dumps(results, indent=1)))
    print(agent_table(results), flush=True)
    return 0


def bridge_usage(result: dict[str, Any]) -> tuple[float, float]:
    """Return the CPU (cores) and RSS (MB) of a run's bridge processes, children included."""
    bridge = [figures for name, figures in result['cpu'].items() if name.startswith('bridge')]
    return (sum(figures['cpu_core'] for figures in bridge),
            sum(figures['rss_mb'] for figures in bridge))


def agent_table(results: Sequence[dict[str, Any]]) -> str:
    """
    Return the agent-count table: per mode and rate, the bridge's CPU and RSS by agent count.

    The first agent's CPU is the run with the fewest agents (per agent, where that run has
    several); an added agent's is the difference to the next smaller run, per agent added.
    """
    lines = ['| mode | rate | agents | bridge CPU, cores | bridge RSS, MB | processes | '
             'CPU per added agent, cores | added / first |', '|---|---|---|---|---|---|---|---|']
    series: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for result in results:
        series.setdefault((result['mode'], result['rate']), []).append(result)
    for (mode, rate), runs in series.items():
        runs = sorted(runs, key=lambda run: len(run['agents']))
        first = previous = None
        for run in runs:
            count = len(run['agents'])
            cpu, rss = bridge_usage(run)
            processes = sum(1 for name in run['cpu'] if name.startswith('bridge'))
            added = ratio = ''
            if previous is None:
                first = cpu / count
            else:
                per_agent = (cpu - previous[1]) / (count - previous[0])
                added = f'{per_agent:.3f}'
                ratio = f'{per_agent / first:.2f}' if first else ''
            lines.append(f'| {mode} | {rate:g}x | {count} | {cpu:.3f} | {rss:.0f} | '
                         f'{processes} | {added} | {ratio} |')
            previous = (count, cpu)
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
