# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure what a lockstep client gets: round trips of step calls, beside their two floors.

Each combination runs, in this order and in the same emulator (lockstep, vehicles holding
still, every 10th cloud and image rendered afresh, its own process):

``raw``
    the simulator alone: a client of the seed protocol (its own process, no ROS) that sends
    step requests back to back and reads every frame of every agent's stream until each
    stream's barrier of the step;
``bridge``
    the ``acres_bridge`` executable (``sensor_processes`` in_process or per_agent) and a
    client process calling ``/step_simulation`` (or ``/simulate_steps``) back to back, with
    0, 1 or 3 subscriber processes (a raw, reliable, keep-last 1000 reader of /clock and of
    every agent's topic);
``floor``
    the DDS floor: a plain rclpy process with the bridge's Fast DDS settings
    (``dds.configure``, as the bridge's processes apply them) and its publishers' types and
    QoS, that publishes each call's messages (Polaris-sized clouds and images for every
    agent) to the same subscribers, then waits for every writer's acknowledgement;
``call_floor``
    the call floor: the same client process calling a plain rclpy server of
    ``/step_simulation`` and ``/simulate_steps`` (synchronous callbacks on a single-threaded
    executor) that answers at once: what the ROS call alone costs.

A lockstep bridge cannot answer faster than the sum of the three floors (the simulator's
round trip, the acknowledgement of the step's messages, the ROS call); the table gives it.

Per combination and side: the round trip per call, p50 and p90 (ms), and simulated seconds
per wall second; for the bridge also where a call's time goes, from its lockstep status in
/diagnostics (p50 of the last 200 steps): request in -> step sent (matches) -> the
simulator's reply, which comes with the barriers -> the last barrier published -> every
reader acknowledged; ``answer`` is the rest of the round trip (ROS request, response and
executors), the p50 round trip minus the four.

    .venv/bin/python tools/bench_lockstep.py                  # the issue's rows, 3 runs
    .venv/bin/python tools/bench_lockstep.py --layouts in_process per_agent
        --agents 1 2 4 --steps 1 12 --subscribers 0 1 3 --configs stock profile
        --calls service action              # (one line) every combination of the issue

Results: one JSON line per combination and run on stdout and in ``--output`` (default
/tmp/bench_lockstep.json), then a Markdown table (the medians of the runs).
"""

import argparse
from collections.abc import Sequence
import itertools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from acres_bridge.runtime import dds
from acres_devkit.bench.harness import Child
from acres_devkit.bench.harness import Commands
from acres_devkit.bench.harness import dds_env
from acres_devkit.bench.harness import percentile
from acres_devkit.bench.harness import say
from acres_devkit.bench.roles import floor_messages
from acres_devkit.bench.roles import is_due
from acres_devkit.bench.roles import set_stamp
from acres_devkit.bench.topics import message_types
from acres_devkit.bench.topics import PHYSICS_HZ

VEHICLES = ('polaris', 'maxxum')
AGENT_TOPICS = ('ins/fix', 'ins/imu', 'ins/odometry', 'ground_truth/odometry', 'lidar/points',
                'camera/image_raw', 'camera/camera_info', 'step_barrier')
# The bridge's publisher depths (sensor_bridge.SMALL_DEPTH, LARGE_DEPTH).
SMALL_DEPTH = 200
LARGE_DEPTH = 10
LARGE = ('lidar/points', 'camera/image_raw')
PHASES = ('to_sent', 'to_reply', 'to_published', 'to_acked')
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0
DEFAULT_CALLS = {1: 200, 12: 100}


def vehicles_of(agents: int) -> tuple[str, ...]:
    """Polaris, Maxxum, Polaris, Maxxum: the emulator names the second pair ``*_1``."""
    return tuple(itertools.islice(itertools.cycle(VEHICLES), agents))


def step_topics(agents: Sequence[str]) -> list[str]:
    """Every topic a reader of the step reads: /clock and each agent's."""
    return ['/clock'] + [f'/{agent}/{topic}' for agent in agents for topic in AGENT_TOPICS]


def round_trip_figures(round_trips: Sequence[float], steps: int, wall_s: float) -> dict:
    """p50 and p90 (ms) of the round trips and the simulated seconds per wall second."""
    return {'p50_ms': round(percentile(round_trips, 0.5) * 1e3, 2),
            'p90_ms': round(percentile(round_trips, 0.9) * 1e3, 2),
            'sim_s_per_s': round(len(round_trips) * steps / PHYSICS_HZ / wall_s, 2)}


# --- child: the emulator ----------------------------------------------------------------------


def role_emulator(args: argparse.Namespace) -> int:
    from acres_bridge.emulator.server import Emulator
    emulator = Emulator(vehicles_of(args.agents), lockstep=True, drive='hold',
                        render_every=10).start()
    names = ','.join(agent.name for agent in emulator.world.agents)
    ports = ','.join(str(port) for port in emulator.sensor_ports)
    say(f'READY control={emulator.control_port} sensors={ports} agents={names}')
    commands = Commands()
    while commands.get() != 'stop':
        pass
    emulator.stop()
    return 0


# --- child: the simulator alone -----------------------------------------------------------


def role_raw(args: argparse.Namespace) -> int:
    """Step back to back through the seed protocol, reading every frame to each barrier."""
    from acres_bridge.protocol.control_client import ControlClient
    from acres_bridge.protocol.frames import BarrierFrame
    from acres_bridge.protocol.stream_client import SensorStreamClient
    condition = threading.Condition()
    barriers: dict[int, int] = {}
    frames = [0]

    def on_frame(index: int, frame: Any) -> None:
        with condition:
            frames[0] += 1
            if isinstance(frame, BarrierFrame):
                barriers[index] = frame.step
                condition.notify_all()

    ports = [int(port) for port in args.sensors.split(',')]
    streams = [SensorStreamClient('127.0.0.1', port, name=f'raw{index}',
                                  on_frame=lambda frame, index=index: on_frame(index, frame))
               for index, port in enumerate(ports)]
    control = ControlClient('127.0.0.1', args.control, timeout_s=CALL_TIMEOUT_S, name='raw')
    for client in (*streams, control):
        client.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (control.connected and all(stream.hello is not None for stream in streams)):
        if time.monotonic() > deadline:
            raise SystemExit('raw: the emulator never connected')
        time.sleep(0.01)
    round_trips = []
    started = time.monotonic()
    for _ in range(args.count):
        sent = time.monotonic()
        reply = control.request('step', steps=args.steps)
        barrier = reply.get('barrier', reply.get('step'))
        with condition:
            if not condition.wait_for(lambda: len(barriers) == len(streams) and all(
                    step >= barrier for step in barriers.values()), CALL_TIMEOUT_S):
                raise SystemExit(f'raw: no barrier {barrier} on every stream')
        round_trips.append(time.monotonic() - sent)
    wall_s = time.monotonic() - started
    for client in (*streams, control):
        client.stop()
    say('RESULT ' + json.dumps({**round_trip_figures(round_trips, args.steps, wall_s),
                                'frames': frames[0]}))
    return 0


def _serve_until_stopped(node: Any) -> None:
    """Spin ``node`` on a single-threaded executor of its own, say READY, return on stop."""
    from rclpy.executors import SingleThreadedExecutor
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    say('READY')
    commands = Commands()
    while commands.get() != 'stop':
        pass
    executor.shutdown()


# --- child: a subscriber ------------------------------------------------------------------


def role_subscriber(args: argparse.Namespace) -> int:
    """Read every step topic raw (reliable, keep-last 1000) until stdin says stop."""
    import rclpy
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    rclpy.init()
    node = rclpy.create_node(f'bench_reader_{args.index}')
    types = message_types()
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    received = [0]

    def on_message(_: bytes) -> None:
        received[0] += 1
    for topic in step_topics(args.agent_names.split(',')):
        kind = types['/clock' if topic == '/clock' else topic.split('/', 2)[2]]
        node.create_subscription(kind, topic, on_message, qos, raw=True)
    _serve_until_stopped(node)
    say(f'DONE received={received[0]}')
    rclpy.try_shutdown()
    return 0


# --- child: the client of the bridge ------------------------------------------------------


def role_client(args: argparse.Namespace) -> int:
    """Call the step service or action back to back; the round trips and the phases."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.srv import StepSimulation
    rclpy.init()
    node = rclpy.create_node('bench_lockstep_client')
    statuses: list[dict[str, str]] = []
    lock = threading.Lock()

    def on_diagnostics(message: DiagnosticArray) -> None:
        with lock:
            statuses.extend({value.key: value.value for value in status.values}
                            for status in message.status if status.name.endswith(': lockstep'))
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics,
                             QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    service = node.create_client(StepSimulation, '/step_simulation')
    action = ActionClient(node, SimulateSteps, '/simulate_steps')
    executor = MultiThreadedExecutor(2)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()

    def wait_status(predicate, what: str) -> dict[str, str]:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with lock:
                found = [status for status in statuses if predicate(status)]
            if found:
                return found[-1]
            time.sleep(0.05)
        raise SystemExit(f'client: no lockstep status with {what}')

    if not (service.wait_for_service(timeout_sec=START_TIMEOUT_S)
            and action.wait_for_server(timeout_sec=START_TIMEOUT_S)):
        raise SystemExit('client: no step service or action')
    if not args.call_floor:
        # The README's rule: a client whose readers are in other processes waits until the
        # session's lockstep status counts them.
        wait_status(lambda status: int(status.get('known_readers', '0') or 0) >= args.readers,
                    f'{args.readers} known readers')

    def call() -> None:
        done = threading.Event()
        if args.call == 'service':
            request = StepSimulation.Request()
            request.steps = args.steps
            service.call_async(request).add_done_callback(lambda _: done.set())
        else:
            goal = SimulateSteps.Goal()
            goal.steps = args.steps

            def accepted(future: Any) -> None:
                future.result().get_result_async().add_done_callback(lambda _: done.set())
            action.send_goal_async(goal).add_done_callback(accepted)
        if not done.wait(CALL_TIMEOUT_S):
            raise SystemExit('client: a step call never answered')

    round_trips = []
    started = time.monotonic()
    for _ in range(args.count):
        sent = time.monotonic()
        call()
        round_trips.append(time.monotonic() - sent)
    wall_s = time.monotonic() - started
    figures = round_trip_figures(round_trips, args.steps, wall_s)
    if not args.call_floor:
        status = wait_status(lambda status: int(status.get('steps', '0') or 0) >= args.count,
                             f'{args.count} steps')
        phases = {phase: float(status[f'{phase}_p50_ms']) for phase in PHASES
                  if status.get(f'{phase}_p50_ms') not in (None, '', 'None', '-')}
        if len(phases) == len(PHASES):
            phases['answer'] = round(figures['p50_ms'] - sum(phases.values()), 2)
        figures.update(phases_p50_ms=phases, late_steps=status.get('late_steps'))
    say('RESULT ' + json.dumps(figures))
    executor.shutdown()
    rclpy.try_shutdown()
    return 0


# --- child: the DDS floor -----------------------------------------------------------------


def role_floor(args: argparse.Namespace) -> int:
    """Publish each call's messages like the bridge, then wait for every acknowledgement."""
    configuration = dds.configure()     # the bridge's own writer settings, as it applies them
    import rclpy
    from rclpy.duration import Duration
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    rclpy.init()
    node = rclpy.create_node('bench_lockstep_floor')
    dds.restore(configuration)
    types = message_types()
    agents = args.agent_names.split(',')

    def qos(depth: int) -> QoSProfile:
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                          reliability=ReliabilityPolicy.RELIABLE)
    clock = node.create_publisher(types['/clock'], '/clock', qos(SMALL_DEPTH))
    publishers = {(agent, topic): node.create_publisher(
        types[topic], f'/{agent}/{topic}', qos(LARGE_DEPTH if topic in LARGE else SMALL_DEPTH))
        for agent in agents for topic in AGENT_TOPICS}
    everyone = [clock, *publishers.values()]
    messages = floor_messages(1800, 32, 896, 512)
    deadline = time.monotonic() + START_TIMEOUT_S
    while any(publisher.get_subscription_count() < args.readers for publisher in everyone):
        if time.monotonic() > deadline:
            raise SystemExit('floor: the subscribers never matched')
        time.sleep(0.01)
    say('READY')
    round_trips, step = [], 0
    started = time.monotonic()
    for _ in range(args.count):
        sent = time.monotonic()
        for _ in range(args.steps):
            step += 1
            sec, nanosec = divmod(step * 1_000_000_000 // PHYSICS_HZ, 1_000_000_000)
            due = ['/clock']
            if is_due(step, 100):
                due += ['ins/fix', 'ins/imu', 'ins/odometry', 'ground_truth/odometry']
            if is_due(step, 10):
                due += ['camera/image_raw', 'camera/camera_info', 'lidar/points']
            for topic in due:
                set_stamp(messages[topic], topic, sec, nanosec)
                if topic == '/clock':
                    clock.publish(messages[topic])
                    continue
                for agent in agents:
                    publishers[(agent, topic)].publish(messages[topic])
        messages['step_barrier'].step = step
        for agent in agents:
            publishers[(agent, 'step_barrier')].publish(messages['step_barrier'])
        for publisher in everyone:
            publisher.wait_for_all_acked(Duration(seconds=CALL_TIMEOUT_S))
        round_trips.append(time.monotonic() - sent)
    wall_s = time.monotonic() - started
    say('RESULT ' + json.dumps(round_trip_figures(round_trips, args.steps, wall_s)))
    Commands().get()
    rclpy.try_shutdown()
    return 0


# --- child: the call floor ---------------------------------------------------------------


def role_call_floor(args: argparse.Namespace) -> int:
    """Serve the step service and action, answering at once, until stdin says stop."""
    import rclpy
    from rclpy.action import ActionServer
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import StepSimulation
    rclpy.init()
    node = rclpy.create_node('bench_lockstep_call_floor')

    def step(_: StepSimulation.Request, response: StepSimulation.Response) -> Any:
        response.result.result = Result.RESULT_OK
        return response

    def simulate(goal_handle: Any) -> Any:
        goal_handle.succeed()
        result = SimulateSteps.Result()
        result.result.result = Result.RESULT_OK
        return result
    node.create_service(StepSimulation, '/step_simulation', step)
    ActionServer(node, SimulateSteps, '/simulate_steps', simulate)
    _serve_until_stopped(node)
    rclpy.try_shutdown()
    return 0


# --- the harness --------------------------------------------------------------------------


def _child(name: str, role: str, env: dict[str, str], log_dir: str, *options: str,
           interrupt: bool = False) -> Child:
    return Child(name, [sys.executable, '-m', 'acres_devkit.bench.lockstep', '--role', role,
                        *options], env, log_dir, interrupt=interrupt)


def _result(child: Child, timeout_s: float) -> dict[str, Any]:
    return json.loads(child.expect('RESULT ', timeout_s)[len('RESULT '):])


def run_once(*, layout: str, agents: int, steps: int, subscribers: int, config: str,
             call: str, count: int, domain_id: int, log_dir: str) -> dict[str, Any]:
    """Run the raw client, the bridge and the two floors of one combination; their figures."""
    fast_dds = dds.find_fast_dds()
    env = dds_env(config, domain_id, fast_dds)
    emulator = _child('emulator', 'emulator', env, log_dir, '--agents', str(agents))
    subscribers_ = []
    try:
        ready = dict(item.split('=', 1) for item in
                     emulator.expect('READY', START_TIMEOUT_S).split()[1:])
        names = ready['agents']
        call_options = ('--steps', str(steps), '--count', str(count))
        raw = _child('raw', 'raw', env, log_dir, '--control', ready['control'],
                     '--sensors', ready['sensors'], *call_options)
        result = {'raw': _result(raw, START_TIMEOUT_S + count * CALL_TIMEOUT_S)}
        raw.finish()
        subscribers_ = [_child(f'reader{index}', 'subscriber', env, log_dir, '--index',
                               str(index), '--agent-names', names)
                        for index in range(subscribers)]
        for subscriber in subscribers_:
            subscriber.expect('READY', START_TIMEOUT_S)
        readers = subscribers * len(step_topics(names.split(',')))
        bridge = Child('bridge', [sys.executable, '-m', 'acres_bridge.nodes.acres_bridge',
                                  '--ros-args', '-p', f'port:={ready["control"]}',
                                  '-p', f'sensor_processes:={layout}'],
                       env, log_dir, interrupt=True)
        try:
            client = _child('client', 'client', env, log_dir, '--call', call,
                            '--readers', str(readers), *call_options)
            result['bridge'] = _result(client, START_TIMEOUT_S + count * CALL_TIMEOUT_S)
            client.finish()
        finally:
            bridge.finish()
        floor = _child('floor', 'floor', env, log_dir, '--agent-names', names,
                       '--readers', str(subscribers), *call_options)
        result['floor'] = _result(floor, START_TIMEOUT_S + count * CALL_TIMEOUT_S)
        floor.finish()
        server = _child('call_floor', 'call_floor', env, log_dir)
        try:
            server.expect('READY', START_TIMEOUT_S)
            client = _child('call-client', 'client', env, log_dir, '--call', call,
                            '--call-floor', *call_options)
            result['call_floor'] = _result(client, START_TIMEOUT_S + count * CALL_TIMEOUT_S)
            client.finish()
        finally:
            server.finish()
    finally:
        for child in subscribers_:
            child.finish()
        emulator.finish()
    return result


def combinations(args: argparse.Namespace) -> list[dict[str, Any]]:
    return [dict(zip(('layout', 'agents', 'steps', 'subscribers', 'config', 'call'), values))
            for values in itertools.product(args.layouts, args.agents, args.steps,
                                            args.subscribers, args.configs, args.calls)]


def table(results: Sequence[dict[str, Any]]) -> str:
    """Markdown: per combination, the median over its runs of each figure."""
    keys = ('layout', 'agents', 'steps', 'subscribers', 'config', 'call')
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for result in results:
        groups.setdefault(tuple(result[key] for key in keys), []).append(result)
    lines = ['| layout | agents | steps | subscribers | Fast DDS | call | runs | raw p50 '
             '(p90) ms | raw sim-s/s | floor p50 (p90) ms | call p50 (p90) ms | sum of the '
             'floors | bridge p50 (p90) ms | bridge sim-s/s | bridge / floor | to sent | '
             'to reply | to published | to acked | answer |', '|' + '---|' * 21]

    def median(runs: list[dict[str, Any]], side: str, key: str) -> float:
        return round(statistics.median(run[side][key] for run in runs), 2)

    def phase(runs: list[dict[str, Any]], name: str) -> str:
        values = [run['bridge']['phases_p50_ms'].get(name) for run in runs]
        values = [value for value in values if value is not None]
        return f'{statistics.median(values):.1f}' if values else '-'
    for key, runs in groups.items():
        bridge, floor = median(runs, 'bridge', 'p50_ms'), median(runs, 'floor', 'p50_ms')
        call = median(runs, 'call_floor', 'p50_ms')
        floors = round(median(runs, 'raw', 'p50_ms') + floor + call, 2)
        lines.append(
            '| ' + ' | '.join(str(value) for value in key) + f' | {len(runs)} | '
            f'{median(runs, "raw", "p50_ms")} ({median(runs, "raw", "p90_ms")}) | '
            f'{median(runs, "raw", "sim_s_per_s")} | {floor} ({median(runs, "floor", "p90_ms")})'
            f' | {call} ({median(runs, "call_floor", "p90_ms")}) | '
            f'{floors} | {bridge} ({median(runs, "bridge", "p90_ms")}) | '
            f'{median(runs, "bridge", "sim_s_per_s")} | {bridge / floor:.2f} | '
            + ' | '.join(phase(runs, name) for name in (*PHASES, 'answer')) + ' |')
    return '\n'.join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--role', choices=('emulator', 'raw', 'subscriber', 'client', 'floor',
                                           'call_floor'))
    parser.add_argument('--control', type=int)
    parser.add_argument('--sensors')
    parser.add_argument('--index', type=int, default=0)
    parser.add_argument('--agent-names')
    parser.add_argument('--readers', type=int, default=0)
    parser.add_argument('--call', default='service', choices=('service', 'action'))
    parser.add_argument('--call-floor', action='store_true',
                        help='the client calls the call floor: no lockstep status to wait for')
    parser.add_argument('--count', type=int)
    parser.add_argument('--layouts', nargs='+', default=['in_process'],
                        choices=('in_process', 'per_agent'))
    parser.add_argument('--agents', type=int, nargs='+', default=[2], choices=(1, 2, 3, 4))
    parser.add_argument('--steps', type=int, nargs='+', default=[1, 12])
    parser.add_argument('--subscribers', type=int, nargs='+', default=[1, 3])
    parser.add_argument('--configs', nargs='+', default=['stock'], choices=('stock', 'profile'))
    parser.add_argument('--calls', nargs='+', default=['service'],
                        choices=('service', 'action'))
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--domain-id', type=int, default=140 + os.getpid() % 40)
    parser.add_argument('--output', default='/tmp/bench_lockstep.json')
    args = parser.parse_args(argv)
    if args.role is not None:
        if args.role in ('emulator',):
            args.agents = args.agents[0]
        else:
            args.steps = args.steps[0]
        return globals()[f'role_{args.role}'](args)
    results = []
    log_dir = tempfile.mkdtemp(prefix='bench_lockstep-')
    print(f'logs of the processes: {log_dir}', flush=True)
    with open(args.output, 'w', encoding='utf-8') as output:
        for run in range(args.runs):
            for combination in combinations(args):
                count = args.count or DEFAULT_CALLS.get(combination['steps'], 100)
                result = {**combination, 'run': run + 1, 'count': count,
                          **run_once(**combination, count=count, domain_id=args.domain_id,
                                     log_dir=log_dir)}
                results.append(result)
                line = json.dumps(result)
                print(line, flush=True)
                output.write(line + '\n')
                output.flush()
    print(table(results))
    return 0


if __name__ == '__main__':
    sys.exit(main())
