# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure what the Foxglove view costs: its CPU and memory, and the bridge's latency beside it.

Each run is tools/benchmark.py's ``bridge`` run at 1x with stock Fast DDS (the emulator playing,
the ``sensor_bridge`` executable, the raw measuring subscriber, each in its own process) with
one of four ``view`` sides:

``none``
    nothing more: the floor of the comparison.
``client``
    the ``foxglove_view`` executable and a Foxglove protocol client
    (acres_devkit/clients/foxglove_client.py, a process of its own) subscribed to every topic
    of the Polaris.
``reader``
    in the view's place, acres_devkit/clients/bare_reader.py: the cheapest rclpy reader of the
    same topics (serialised, the view's QoS, taken every 10 ms as the view's thread takes them),
    which sends nothing anywhere. Its CPU is the floor of the view's in the same hour: what taking
    every topic from ROS in Python costs on this machine.
``paused``
    the same as ``client``, with the client stopped (SIGSTOP) once it has subscribed: it reads
    nothing while the run lasts.

Sides alternate (none, client, reader, none, client, reader, ..., then paused), so that the
machine's load falls on all alike. The figures: the subscriber's /clock (and other topics')
p50 latency from the simulator's publish time, the view's CPU over the run as a fraction of a
core (and the bare reader's), the view's RSS at the start and at most.

    .venv/bin/python tools/bench_foxglove_view.py --seconds 30 --repeat 2
    .venv/bin/python tools/bench_foxglove_view.py --distro jazzy --seconds 30

Results: printed, and out/benchmark/bench_foxglove_view.json unless ``--output`` says
otherwise (docs/bench_foxglove_view.json is a dated copy).
"""

import argparse
from collections.abc import Sequence
import json
import os
import re
import signal
import sys
import tempfile
import time
from typing import Any

from acres_devkit.bench import harness
from acres_devkit.bench import sensor
from acres_devkit.bench import topics
from acres_devkit.bench.harness import ROOT
from acres_devkit.bench.report import portable
from acres_devkit.clients import CLIENTS

CLIENT = str(CLIENTS / 'foxglove_client.py')
BARE_READER = str(CLIENTS / 'bare_reader.py')
SIDES = ('none', 'client', 'reader')
TOPICS = ('/clock', '/tf_static', '/polaris/lidar/points', '/polaris/camera/image_raw',
          '/polaris/camera/camera_info', '/polaris/ins/imu', '/polaris/ins/fix',
          '/polaris/ins/odometry', '/polaris/ground_truth/odometry', '/diagnostics')
TARGET_VIEW_CPU_FRACTION = 0.10
TARGET_CLOCK_P50_CHANGE_MS = 0.2
TARGET_RSS_GROWTH_MB = 20.0 * 1.048576     # 20 MiB


def run_side(side: str, *, seconds: float, domain_id: int, work_dir: str,
             prefix: str, profile_view: str | None = None) -> dict[str, Any]:
    """Run one measurement with a view side; return its figures (profile_view: a folder)."""
    from acres_bridge.protocol.control_client import ControlClient
    tag = f'{side}-{int(time.time() * 1000) % 10_000_000}'
    env = harness.dds_env('stock', domain_id, None, prefix)
    me = [harness.prefix_python(prefix), '-m', 'acres_devkit.bench.sensor']
    sub_record = os.path.join(work_dir, f'{tag}-subscriber.json')
    pub_record = os.path.join(work_dir, f'{tag}-sent.json')
    children: list[harness.Child] = []
    view = client = reader = None
    try:
        subscriber = harness.Child(f'{tag}-subscriber', me + [
            '_subscriber', '--record', sub_record], env, work_dir)
        children.append(subscriber)
        subscriber.expect('READY', harness.START_TIMEOUT_S)
        emulator = harness.Child(f'{tag}-emulator', me + [
            '_emulator', '--rate', '1', '--record', pub_record, '--render-every', '1',
            '--nice', '0'], env, work_dir)
        children.append(emulator)
        ports = dict(item.split('=') for item in
                     emulator.expect('READY', harness.START_TIMEOUT_S).split()[1:])
        bridge = harness.Child(f'{tag}-bridge', sensor.bridge_argv(
            int(ports['sensor']), None, prefix), env, work_dir, interrupt=True)
        children.insert(0, bridge)
        if side == 'reader':
            reader = harness.Child(f'{tag}-reader', [
                harness.prefix_python(prefix), BARE_READER, *TOPICS], env, work_dir,
                interrupt=True)
            children.insert(0, reader)
        elif side != 'none':
            command = [os.path.join(prefix, 'lib', 'acres_bridge', 'foxglove_view')]
            if profile_view:
                command = [harness.prefix_python(prefix), '-m', 'cProfile', '-o',
                           os.path.join(profile_view, f'{tag}.prof'), '-m',
                           'acres_bridge.nodes.foxglove_view']
            # Port 0: the view binds a free port itself and logs its URL.
            command += ['--ros-args', '-p', 'port:=0', '-p', 'use_sim_time:=true']
            view = harness.Child(
                f'{tag}-view', command, dict(env, RCUTILS_LOGGING_SEVERITY_THRESHOLD='INFO'),
                work_dir, interrupt=True)
            children.insert(0, view)
            url = _wait_for_line(view, r'Foxglove view on (ws://127\.0\.0\.1:\d+)')[1]
            client = harness.Child(f'{tag}-client', [
                harness.prefix_python(prefix), CLIENT, url, *TOPICS],
                env, work_dir)
            children.append(client)
        control = ControlClient(port=int(ports['control']), name='benchmark')
        control.start()
        sensor.wait_matched(subscriber, harness.START_TIMEOUT_S)
        for subscribing in (client, reader):
            if subscribing is not None:
                subscribing.expect('subscribed', harness.START_TIMEOUT_S)
        sensor.warm_up(subscriber, lambda: control.request('step', steps=12, timeout_s=30.0))
        emulator.ask('drain', ('DRAINED',), topics.DRAIN_TIMEOUT_S + 5.0)
        sensor.wait_quiet(subscriber, topics.DRAIN_TIMEOUT_S, quiet_s=0.5)
        emulator.ask('reset', ('RESET',))
        subscriber.ask('reset', ('RESET',))
        if client is not None and side == 'paused':
            client.process.send_signal(signal.SIGSTOP)
        samplers = {'bridge': harness.Sampler(bridge.process.pid)}
        if view is not None:
            samplers['view'] = harness.Sampler(view.process.pid)
        if reader is not None:
            samplers['reader'] = harness.Sampler(reader.process.pid)
        cpu_start = {name: sampler.cpu_s() for name, sampler in samplers.items()}
        rss_start = {name: sampler.process.memory_info().rss / 1e6
                     for name, sampler in samplers.items()}
        threads_start = _thread_cpu(samplers['view'].process) if 'view' in samplers else {}
        thread_cpu = None
        wall_start = time.monotonic()
        if not control.request('set_state', state=1).get('ok'):
            raise RuntimeError('set_state 1 failed')
        time.sleep(seconds)
        control.request('set_state', state=2)
        wall_s = time.monotonic() - wall_start
        cpu = {name: (sampler.cpu_s() - cpu_start[name]) / wall_s
               for name, sampler in samplers.items()}
        if 'view' in samplers:
            threads = _thread_cpu(samplers['view'].process)
            thread_cpu = {name: round((cpu_s - threads_start.get(name, 0.0)) / wall_s, 4)
                          for name, cpu_s in threads.items()
                          if cpu_s - threads_start.get(name, 0.0) > 0.01 * wall_s}
        emulator.ask('drain', ('DRAINED',), topics.DRAIN_TIMEOUT_S + 5.0)
        sensor.wait_quiet(subscriber, topics.DRAIN_TIMEOUT_S)
        for sampler in samplers.values():
            sampler.stop()
        control.stop()
        client_counts = None
        if client is not None and side == 'client':
            lines = [line for line in list(client.lines.queue) if line.startswith('{')]
            client_counts = json.loads(lines[-1]) if lines else None
    finally:
        if client is not None and side == 'paused':
            client.process.send_signal(signal.SIGCONT)
        for child in reversed(children):
            child.finish()
    if reader is not None:
        # The bare reader prints what it took once interrupted.
        lines = [line for line in list(reader.lines.queue) if line.startswith('{')]
        client_counts = json.loads(lines[-1]) if lines else None
    with open(pub_record, encoding='utf-8') as stream:
        sent = json.load(stream)
    with open(sub_record, encoding='utf-8') as stream:
        received = json.load(stream)['received']
    by_topic = sensor.topic_figures(sent, received)['topics']
    result = {
        'side': side, 'wall_s': round(wall_s, 2),
        'clock_p50_ms': by_topic['/clock']['latency_p50_ms'],
        'p50_ms': {topic: figures['latency_p50_ms'] for topic, figures in by_topic.items()},
        'lost': {topic: figures['lost'] for topic, figures in by_topic.items()},
        'cpu_core_fraction': {name: round(value, 4) for name, value in cpu.items()},
        'loadavg': [round(x, 2) for x in os.getloadavg()]}
    if side == 'reader':
        result.update(reader_counts=client_counts)
    if 'view' in samplers:
        series = [rss for _, rss, _ in samplers['view'].samples]
        result.update(view_rss_mb_start=round(rss_start['view'], 1),
                      view_rss_mb_max=round(max(series + [rss_start['view']]), 1),
                      view_rss_growth_mb=round(max(series + [rss_start['view']])
                                               - rss_start['view'], 1),
                      client_counts=client_counts, view_thread_cpu=thread_cpu)
    return result


def _thread_cpu(process: Any) -> dict[str, float]:
    """Return the CPU seconds of a process's threads by name (summed over equal names)."""
    totals: dict[str, float] = {}
    for thread in process.threads():
        try:
            with open(f'/proc/{process.pid}/task/{thread.id}/comm', encoding='utf-8') as comm:
                name = comm.read().strip()
        except OSError:
            continue
        totals[name] = totals.get(name, 0.0) + thread.user_time + thread.system_time
    return totals


def _wait_for_line(child: harness.Child, pattern: str) -> re.Match:
    """Wait until a child's log (its stderr) has a line matching ``pattern``; return the match."""
    deadline = time.monotonic() + harness.START_TIMEOUT_S
    while time.monotonic() < deadline:
        with open(child._stderr.name, encoding='utf-8', errors='replace') as log:
            found = re.search(pattern, log.read())
        if found:
            return found
        if child.process.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f'{child.name}: no {pattern!r} in {child._stderr.name}')


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the figures against the targets: medians over the runs of each side."""
    by_side = {side: [run for run in runs if run['side'] == side]
               for side in ('none', 'client', 'reader', 'paused')}
    none_p50 = _median([run['clock_p50_ms'] for run in by_side['none']])
    client_p50 = _median([run['clock_p50_ms'] for run in by_side['client']])
    view_cpu = _median([run['cpu_core_fraction']['view'] for run in by_side['client']])
    reader_cpu = _median([run['cpu_core_fraction']['reader'] for run in by_side['reader']])
    growth = max((run['view_rss_growth_mb'] for run in by_side['paused']), default=None)
    return {
        'clock_p50_ms_without_view': none_p50, 'clock_p50_ms_with_view': client_p50,
        'clock_p50_change_ms': round(client_p50 - none_p50, 3),
        'view_cpu_core_fraction': view_cpu,
        'bare_reader_cpu_core_fraction': reader_cpu,
        'view_over_bare_reader_core_fraction': round(view_cpu - reader_cpu, 4),
        'paused_client_view_rss_growth_mb': growth,
        'targets': {'view_cpu_core_fraction': TARGET_VIEW_CPU_FRACTION,
                    'clock_p50_change_ms': TARGET_CLOCK_P50_CHANGE_MS,
                    'rss_growth_mb': round(TARGET_RSS_GROWTH_MB, 1)}}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sides in turn, print each run and the summary, and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=30.0, help='the length of each run')
    parser.add_argument('--repeat', type=int, default=2,
                        help='how many none/client pairs (then one paused run)')
    parser.add_argument('--distro', choices=sorted(harness.DISTRO_PREFIXES), default=None,
                        help='run every process from that prefix (default: this Python\'s)')
    parser.add_argument('--domain-id', type=int, default=sensor.DEFAULT_DOMAIN_ID + 7)
    parser.add_argument('--profile-view', metavar='DIR', default=None,
                        help='run the view under cProfile, one .prof per run in DIR')
    parser.add_argument('--output', default=os.path.join(ROOT, 'out', 'benchmark',
                                                         'bench_foxglove_view.json'),
                        help='the results (default out/benchmark/bench_foxglove_view.json; '
                             'docs/ keeps the dated ones by hand)')
    args = parser.parse_args(argv)
    prefix = (os.path.join(ROOT, harness.DISTRO_PREFIXES[args.distro]) if args.distro
              else sys.prefix)
    runs = []
    with tempfile.TemporaryDirectory(prefix='bench-foxglove-') as work_dir:
        for side in [*SIDES * args.repeat, 'paused']:
            result = run_side(side, seconds=args.seconds, domain_id=args.domain_id,
                              work_dir=work_dir, prefix=prefix,
                              profile_view=args.profile_view)
            print(json.dumps(result), flush=True)
            runs.append(result)
    report = {'prefix': prefix, 'seconds': args.seconds, 'runs': runs, 'summary': summary(runs)}
    print(json.dumps(report['summary'], indent=2))
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, 'w', encoding='utf-8') as stream:
        stream.write(portable(json.dumps(report, indent=1)))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
