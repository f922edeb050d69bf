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

Results: out/benchmark/benchmarks.json, benchmarks.md (a table) and benchmarks.png (latency and
loss against the real-time factor) unless ``--output-dir`` says otherwise; out/ is not kept
in git, and docs/benchmarks.md (kept by hand) takes what a run shows.

``--hosts 2`` (root) runs the same bridge and floor across two hosts: two network namespaces
joined by a veth link (acres_devkit/two_hosts.py), the emulator, the publisher (bridge or
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
from collections.abc import Sequence
import json
import math
import os
import platform
import shlex
import signal
import sys
import time
from typing import Any

from acres_bridge.runtime import dds
from acres_devkit import two_hosts
from acres_devkit.bench import perf_split
from acres_devkit.bench import two_hosts as two_host_bench
from acres_devkit.bench.harness import Child
from acres_devkit.bench.harness import dds_env
from acres_devkit.bench.harness import DISTRO_PREFIXES
from acres_devkit.bench.harness import prefix_python
from acres_devkit.bench.harness import RemoteControl
from acres_devkit.bench.harness import ROOT
from acres_devkit.bench.harness import Sampler
from acres_devkit.bench.harness import START_TIMEOUT_S
from acres_devkit.bench.report import _summary_line
from acres_devkit.bench.report import _two_host_line
from acres_devkit.bench.report import portable
from acres_devkit.bench.report import TARGET_ADDED_P50_MS
from acres_devkit.bench.report import TARGET_CPU_FRACTION_1X
from acres_devkit.bench.report import TARGET_RSS_MB
from acres_devkit.bench.report import two_host_comparison
from acres_devkit.bench.report import write_markdown
from acres_devkit.bench.report import write_plot
from acres_devkit.bench.roles import _role_parser
from acres_devkit.bench.roles import queue_drops_path
from acres_devkit.bench.roles import ROLES
from acres_devkit.bench.topics import DEFAULT_CONFIGS
from acres_devkit.bench.topics import DEFAULT_DRIVES
from acres_devkit.bench.topics import DEFAULT_RATES
from acres_devkit.bench.topics import DRAIN_TIMEOUT_S
from acres_devkit.bench.topics import FRAME_KINDS
from acres_devkit.bench.topics import FRAME_TOPICS
from acres_devkit.bench.topics import label_order
from acres_devkit.bench.topics import label_topic
from acres_devkit.bench.topics import LARGE_TOPICS
from acres_devkit.bench.topics import LOCKSTEP_STEPS
from acres_devkit.bench.topics import NAMESPACE
from acres_devkit.bench.topics import PAYLOAD_BYTES
from acres_devkit.bench.topics import PHYSICS_HZ
from acres_devkit.bench.topics import sent_key
from acres_devkit.bench.topics import SMALL_TOPICS
from acres_devkit.bench.topics import split_beside
from acres_devkit.bench.topics import SUBSCRIBER_DEPTH
from acres_devkit.bench.topics import SUBSCRIBER_LARGE_DEPTH
from acres_devkit.bench.topics import TOPIC_FRAME
from acres_devkit.bench.topics import TOPICS

DEFAULT_DOMAIN_ID = 42
# Longer than Fast DDS's default heartbeat period (3 s): a sample that needs a repair at the
# end of a run still arrives (late: its latency shows) before the subscriber is stopped.
QUIET_S = 4.0


def bridge_argv(port: int, command: str | None = None, prefix: str = sys.prefix) -> list[str]:
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


def two_host_envs(config: str, domain_id: int, fast_dds: dds.FastDds | None,
                  prefix: str, work_dir: str,
                  prefix_b: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """
    Return the environments of host A's and host B's processes for a two-host configuration.

    As :func:`dds_env`, but discovery on the link's subnet (allowed only inside the
    namespaces of acres_devkit.two_hosts) and the variables that the two-host benchmark
    gives every process of both hosts; :func:`two_host_bridge_env` adds the publisher's own.
    ``prefix_b``: host B's processes run from that prefix (another distribution's) instead.
    Host B's also get the configuration's variables for its readers alone
    (:func:`acres_devkit.bench.two_hosts.reader_env`).
    """
    _, both = two_host_bench.config_env(config, work_dir)
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
    hosts[1].update(two_host_bench.reader_env(config, fast_dds_b))
    return hosts[0], hosts[1]


def two_host_bridge_env(config: str, work_dir: str) -> dict[str, str]:
    """Return the variables of host A's publisher (the bridge or the floor) for ``config``."""
    return two_host_bench.config_env(config, work_dir)[0]


def warm_up(subscriber: Child, publish_some: Any) -> None:
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


def wait_quiet(subscriber: Child, timeout_s: float, quiet_s: float = QUIET_S) -> int:
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


def wait_matched(subscriber: Child, timeout_s: float) -> None:
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
    measured window; the split by layer goes under ``perf`` (acres_devkit/bench/perf_split.py).

    ``floor_beside``: a bridge run also runs the floor's clock, INS and barrier in the same
    run (figures under ``floor_beside``). ``hosts``: an ``acres_devkit.two_hosts.TwoHosts``; the
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
    me = [prefix_python(prefix), '-m', 'acres_devkit.bench.sensor']
    sub_record = os.path.join(work_dir, f'{tag}-subscriber.json')
    pub_record = os.path.join(work_dir, f'{tag}-sent.json')
    beside_record = os.path.join(work_dir, f'{tag}-beside-sent.json')
    beside = floor_beside and mode == 'bridge'
    floor: Child | None = None
    emulator: Child | None = None
    children: list[Child] = []
    load_before = os.getloadavg()
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
            argv = bridge_argv(int(ports['sensor']), bridge_command, prefix) if not profile else (
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
        wait_matched(subscriber, START_TIMEOUT_S)
        if control is not None:
            def step_some() -> None:
                control.request('step', steps=12, timeout_s=30.0)
                if floor is not None:
                    floor.ask('warmup', ('WARM',))
            warm_up(subscriber, step_some)
            emulator.ask('drain', ('DRAINED',), DRAIN_TIMEOUT_S + 5.0)
            wait_quiet(subscriber, DRAIN_TIMEOUT_S, quiet_s=0.5)
            emulator.ask('reset', ('RESET',))
        else:
            warm_up(subscriber, lambda: source.ask('warmup', ('WARM',)))
            wait_quiet(subscriber, DRAIN_TIMEOUT_S, quiet_s=0.5)
        subscriber.ask('reset', ('RESET',))
        sampler = Sampler(source.process.pid)
        recorder = (perf_split.PerfRecorder(source.process.pid,
                                            os.path.join(work_dir, f'{tag}.perf.data'),
                                            os.path.join(work_dir, f'{tag}-perf.log'))
                    if perf else None)
        cpu_start = sampler.cpu_s()
        subscriber_cpu = Sampler(subscriber.process.pid, period_s=5.0)
        subscriber_cpu_start = subscriber_cpu.cpu_s()
        receive_drops = hosts.b.receive_drops() if hosts is not None else None
        wall_s, publish_errors = _measured_window(drive, rate, seconds, control=control,
                                                  source=source, emulator=emulator, floor=floor)
        wait_quiet(subscriber, DRAIN_TIMEOUT_S)
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
    result, sent, sub = _delivery(pub_record, sub_record, beside_record if beside else None)
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


def _measured_window(drive: str, rate: float, seconds: float, *, control: Any, source: Child,
                     emulator: Child | None, floor: Child | None) -> tuple[float, int | None]:
    """
    Publish for the measured window; return its wall time and the floor's publish errors.

    With a ``control`` (the bridge's runs), the emulator plays or is stepped, and the frames
    still in its queue are let out before the end (they count as sent); without one, the
    floor publisher ``source`` plays its schedule.
    """
    publish_errors = None
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
        emulator.ask('drain', ('DRAINED',), DRAIN_TIMEOUT_S + 5.0)
        if floor is not None:
            floor.expect('PLAYED', seconds + START_TIMEOUT_S)
    else:
        source.send('play')
        played = source.expect('PLAYED', seconds + START_TIMEOUT_S)
        wall_s = time.monotonic() - wall_start
        publish_errors = int(played.rsplit('=', 1)[1])
    return wall_s, publish_errors


def _delivery(pub_record: str, sub_record: str,
              beside_record: str | None) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """
    Read a run's records back: the delivery figures, what was sent, the subscriber's record.

    Frames the simulator's queue dropped count as lost on their topics; ``beside_record``:
    the floor beside the bridge, whose figures go under ``floor_beside``.
    """
    with open(pub_record, encoding='utf-8') as stream:
        sent = json.load(stream)
    with open(sub_record, encoding='utf-8') as stream:
        sub = json.load(stream)
    received, beside_received = split_beside(sub['received'])
    result = topic_figures(sent, received)
    if os.path.exists(queue_drops_path(pub_record)):
        with open(queue_drops_path(pub_record), encoding='utf-8') as stream:
            add_queue_drops(result['topics'], json.load(stream))
    if beside_record is not None:
        with open(beside_record, encoding='utf-8') as stream:
            beside_sent = json.load(stream)
        result['floor_beside'] = topic_figures(beside_sent, beside_received, SMALL_TOPICS)
    result['bridge_diagnostics'] = _diagnostic_figures(sub.get('diagnostics', []))
    return result, sent, sub


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
    """
    Return the nearest-rank percentile of sorted values (the smallest covering ``fraction``).

    Not harness.percentile (index ``int(n * fraction)``, one rank higher at an exact fraction):
    the latency figures of docs/benchmarks.md were taken with this rank, and stay comparable.
    """
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, math.ceil(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def topic_figures(sent: list[list[Any]], received: dict[str, list[list[Any]]],
                  topics_sent: Sequence[str] = TOPICS) -> dict[str, Any]:
    """Match received stamps to sent frames per topic: delivery and latency."""
    published: dict[int, dict[int, float]] = {frame_type: {} for frame_type in FRAME_TOPICS}
    for frame_type, key, publish_s in sent:
        if frame_type in published:
            published[frame_type][key] = publish_s
    topics = {}
    for topic in sorted(set(topics_sent) | set(received), key=label_order):
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


def add_queue_drops(topics: dict[str, Any], drops: dict[str, int]) -> None:
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


def compare_runs(bridge: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
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
        run['topics'] = topic_figures(sent, received)['topics']
        if run.get('floor_beside'):
            with open(os.path.join(work_dir, f'{tag}-beside-sent.json'),
                      encoding='utf-8') as stream:
                run['floor_beside'] = topic_figures(json.load(stream), beside_received,
                                                    SMALL_TOPICS)
            run['vs_floor_beside'] = compare_runs(run, run['floor_beside'])
        pairs.setdefault((run['config'], drive, run['rate']), {})[run['mode']] = run
    for pair in pairs.values():
        if 'bridge' in pair and 'floor' in pair:
            pair['bridge']['vs_floor'] = compare_runs(pair['bridge'], pair['floor'])
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
                        result['vs_floor_beside'] = compare_runs(result, result['floor_beside'])
                    log(_summary_line(result))
                    pair[mode] = result
                    runs.append(result)
                if 'bridge' in pair and 'floor' in pair:
                    pair['bridge']['vs_floor'] = compare_runs(pair['bridge'], pair['floor'])
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
                    pair['bridge']['vs_floor'] = compare_runs(pair['bridge'], pair['floor'])
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
                run['vs_one_host'] = compare_runs(run, single[run['mode']])
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
    parser.add_argument('--output-dir', default=os.path.join(ROOT, 'out', 'benchmark'),
                        help='where benchmarks.json, .md and .png go (default out/benchmark/)')
    parser.add_argument('--work-dir', default=None,
                        help='where the raw records and child logs go (default a temp folder)')
    parser.add_argument('--profile', action='store_true',
                        help='run the bridge in-process under cProfile (all threads); the '
                             'stats go to <work-dir>/bridge-*.prof and the bridge log')
    parser.add_argument('--perf', action='store_true',
                        help='sample the measured process (bridge or floor) with Linux perf '
                             'over the measured window and split its CPU by layer: kernel '
                             'TCP, Fast DDS, rcl + rmw, Python (acres_devkit.bench.perf_split; '
                             'the perf.data files stay in --work-dir)')
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
            stream.write(portable(json.dumps(report, indent=1)))
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
        stream.write(portable(json.dumps(report, indent=1)))
    write_plot(report, base + '.png')
    write_markdown(report, base + '.md', os.path.basename(base + '.png'))
    print(f'wrote {base}.json, {base}.md, {base}.png', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
