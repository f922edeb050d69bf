# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The bridge across two hosts: loss, latency and CPU per Fast DDS configuration, at 1x and 5x.

Two network namespaces joined by a veth link (acres_devkit/two_hosts.py, root only): host A
runs the emulator of one Polaris in play, the ``acres_bridge`` executable and a reader
(acres_devkit/clients/two_host_client.py) beside it; host B runs the same reader, reliable
keep-last 1000.
What A's reader got is what the bridge published; what B's lacks of it, within the span B
covers, is lost across the link. Latency is when B's reader had the message minus when A's
had it (the link's cost over a reader on the bridge's host): the time each process took it,
not DDS's reception stamp, which for a message sent in fragments is the first fragment's on
Fast DDS 3.x and the last one's on 2.x. CPU is the processes' CPU seconds per
second of the run on each host; host B's kernel counts what it dropped on receipt (UDP
datagrams for a full socket buffer, IP datagrams short of a fragment). Configurations:

* ``own``: nothing set, the bridge's own writer settings (the default);
* ``stock_heartbeat``: the bridge's writers with Fast DDS's stock 3 s heartbeat (a user
  profile that sets it);
* ``large_data``: ``FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA`` on both hosts (data over TCP);
* ``buffers``: ``FASTDDS_BUILTIN_TRANSPORTS=DEFAULT?sockets_size=4MB`` on both hosts;
* ``buffers_bridge``: the same in the bridge's process only (host B stock);
* ``two_hosts_profile``: config/fastdds_two_hosts.xml (4 MiB socket buffers) on both hosts;
* ``two_hosts_profile_b``: the same file on host B's readers only, the bridge's host as it is
  (an autonomy computer set up as README "Two machines" says, the simulator's host untouched);
* ``paced_bridge``: in the bridge's process only (host B stock), a Fast DDS flow controller on
  the writers of clouds and images (:func:`paced_profile_xml`: asynchronous publishing, at most
  ``PACED_BYTES_PER_MS`` a millisecond for both together, round robin), with
  ``RMW_FASTRTPS_USE_QOS_FROM_XML=1`` so that rmw_fastrtps leaves the publish mode to the file;
  the other writers stay synchronous and unpaced.

``.venv/bin/python tools/bench_two_hosts.py --seconds 30 --rates 1 5 [--mtu 1280]`` prints a
line per run and a JSON report at the end. ``--compressed`` has both readers take
``camera/image_raw/compressed`` (JPEG, the bridge's default) instead of the raw images, as a
viewer or a recording on the second host would.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from acres_bridge.runtime import dds
from acres_devkit import two_hosts
from acres_devkit.bench.harness import percentile
from acres_devkit.bench.harness import ROOT
from acres_devkit.clients import CLIENTS
from acres_devkit.environment import claim_domain_id

CLIENT = str(CLIENTS / 'two_host_client.py')
CONFIGS = ('own', 'stock_heartbeat', 'large_data', 'buffers', 'buffers_bridge',
           'two_hosts_profile', 'two_hosts_profile_b', 'paced_bridge')
# The flow controller of paced_bridge: 128 KiB a millisecond (about 130 MB/s; a Polaris sends
# 23 MB/s of clouds and images at 1x, in bursts of 2.3 MB ten times a second).
PACED_BYTES_PER_MS = 131072
PACED_AGENTS = ('polaris', 'maxxum')
PACED_TOPICS = ('lidar/points', 'camera/image_raw')
START_S = 120.0
BUFFERS = 'DEFAULT?sockets_size=4MB'
TWO_HOSTS_PROFILE = os.path.join(ROOT, 'config', 'fastdds_two_hosts.xml')
AGENT = 'polaris'


def config_env(config: str, work_dir: str) -> tuple[dict[str, str], dict[str, str]]:
    """Return the extra environment of host A's bridge and of every process of both hosts."""
    if config in ('own', 'two_hosts_profile_b'):
        return {}, {}
    if config == 'stock_heartbeat':
        fast_dds = dds.find_fast_dds()
        path = os.path.join(work_dir, 'stock_heartbeat.xml')
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write(dds.profile_xml(fast_dds.major, local_discovery=False,
                                         heartbeat_period_ms=3000, segment_size=None))
        return {dds.profile_variable(fast_dds): path}, {}
    if config == 'large_data':
        return {}, {'FASTDDS_BUILTIN_TRANSPORTS': 'LARGE_DATA'}
    if config == 'buffers':
        return {}, {'FASTDDS_BUILTIN_TRANSPORTS': BUFFERS}
    if config == 'buffers_bridge':
        return {'FASTDDS_BUILTIN_TRANSPORTS': BUFFERS}, {}
    if config == 'two_hosts_profile':
        return {}, {dds.profile_variable(dds.find_fast_dds()): TWO_HOSTS_PROFILE}
    if config == 'paced_bridge':
        path = os.path.join(work_dir, 'paced_bridge.xml')
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write(paced_profile_xml())
        return {dds.profile_variable(dds.find_fast_dds()): path,
                'RMW_FASTRTPS_USE_QOS_FROM_XML': '1'}, {}
    raise ValueError(f'unknown configuration {config!r}')


def reader_env(config: str, fast_dds: dds.FastDds | None = None) -> dict[str, str]:
    """
    Return the extra environment of host B's readers alone (on top of :func:`config_env`'s).

    ``fast_dds``: the readers' Fast DDS, which names the profile variable (default: this
    Python's).
    """
    if config == 'two_hosts_profile_b':
        return {dds.profile_variable(fast_dds or dds.find_fast_dds()): TWO_HOSTS_PROFILE}
    return {}


def paced_profile_xml(agents: tuple[str, ...] = PACED_AGENTS,
                      bytes_per_ms: int = PACED_BYTES_PER_MS) -> str:
    """
    Return the profile of ``paced_bridge``, one text for Fast DDS 2.14 and 3.x.

    rmw_fastrtps gives a writer the ``data_writer`` profile named as its topic (``/polaris/
    lidar/points``), else the default one, so the clouds and images of each agent named here
    share the flow controller and every other writer keeps the default: synchronous. The file
    sets data sharing off and history memory by reallocation itself, which rmw_fastrtps takes
    from the file under ``RMW_FASTRTPS_USE_QOS_FROM_XML=1``. It spells no tag that the two
    versions spell differently; the bridge adds its heartbeat in its own process.
    """
    def writer(name: str, attributes: str, mode: str) -> list[str]:
        return [f'    <data_writer profile_name="{name}"{attributes}>', '      <qos>',
                '        <publishMode>', f'          <kind>{mode}</kind>',
                *(['          <flow_controller_name>acres_link</flow_controller_name>']
                  if mode == 'ASYNCHRONOUS' else []),
                '        </publishMode>', '        <data_sharing>',
                '          <kind>OFF</kind>', '        </data_sharing>', '      </qos>',
                '      <historyMemoryPolicy>PREALLOCATED_WITH_REALLOC</historyMemoryPolicy>',
                '    </data_writer>']
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<dds xmlns="http://www.eprosima.com">',
             '  <profiles>',
             '    <participant profile_name="acres_two_hosts_paced" is_default_profile="true">',
             '      <rtps>', '        <sendSocketBufferSize>4194304</sendSocketBufferSize>',
             '        <listenSocketBufferSize>4194304</listenSocketBufferSize>',
             '        <flow_controller_descriptor_list>', '          <flow_controller_descriptor>',
             '            <name>acres_link</name>',
             '            <scheduler>ROUND_ROBIN</scheduler>',
             f'            <max_bytes_per_period>{bytes_per_ms}</max_bytes_per_period>',
             '            <period_ms>1</period_ms>', '          </flow_controller_descriptor>',
             '        </flow_controller_descriptor_list>', '      </rtps>', '    </participant>',
             *writer('acres_two_hosts_writer', ' is_default_profile="true"', 'SYNCHRONOUS')]
    for agent in agents:
        for topic in PACED_TOPICS:
            lines += writer(f'/{agent}/{topic}', '', 'ASYNCHRONOUS')
    return '\n'.join(lines + ['  </profiles>', '</dds>', ''])


def _cpu_s(host: two_hosts.Host) -> float:
    import psutil
    total = 0.0
    for process in host.processes:
        try:
            top = psutil.Process(process.process.pid)
            for item in (top, *top.children(recursive=True)):
                times = item.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def run_once(config: str, rate: float, seconds: float, mtu: int | None,
             compressed: bool = False) -> dict:
    """Run one configuration at one rate; return its figures."""
    with tempfile.TemporaryDirectory(prefix='acres-two-hosts-') as work_dir:
        bridge_env, both_env = config_env(config, work_dir)
        pair = two_hosts.TwoHosts(mtu=mtu)
        try:
            return _measure(pair, config, rate, seconds, bridge_env, both_env,
                            reader_env(config), compressed)
        finally:
            pair.remove()


def _measure(pair: two_hosts.TwoHosts, config: str, rate: float, seconds: float,
             bridge_env: dict[str, str], both_env: dict[str, str],
             b_env: dict[str, str], compressed: bool = False) -> dict:
    two_hosts.start_bridge(pair.a, AGENT, emulator_options=['--rate', repr(rate)],
                           start_s=START_S, **both_env, **bridge_env)
    logs = {}
    for host, name, env in ((pair.a, 'host_a_reader', both_env),
                            (pair.b, 'host_b_reader', {**both_env, **b_env})):
        logs[host.name] = two_hosts.ClientLog(
            host.start([sys.executable, CLIENT, name, '--read', AGENT,
                        *(['--compressed'] if compressed else [])], **env))
    deadline = time.monotonic() + START_S
    while not all(log.update().ready for log in logs.values()):
        if time.monotonic() > deadline:
            raise TimeoutError('the readers saw no publisher for every topic')
        time.sleep(0.1)
    cpu_start = {host.name: _cpu_s(host) for host in pair.hosts}
    drops_start = pair.b.receive_drops()
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    cpu = {host.name: (_cpu_s(host) - cpu_start[host.name]) / elapsed for host in pair.hosts}
    time.sleep(2.0)         # let what is in flight arrive before counting
    reference, reader = (logs[pair.a.name].update(), logs[pair.b.name].update())
    drops = {key: value - drops_start[key] for key, value in pair.b.receive_drops().items()}
    figures = {'config': config, 'rate': rate, 'mtu': pair.mtu(), 'compressed': compressed,
               'topics': {},
               'cpu_a': round(cpu[pair.a.name], 2), 'cpu_b': round(cpu[pair.b.name], 2),
               'host_b_drops': drops}
    for topic, sent in reference.messages.items():
        got = {stamp: taken for _, stamp, taken in reader.messages.get(topic, [])}
        if not got:
            figures['topics'][topic] = {'sent': len(sent), 'lost': len(sent)}
            continue
        low, high = min(got), max(got)
        window = [(taken, stamp) for _, stamp, taken in sent if low <= stamp <= high]
        lost = sum(1 for _, stamp in window if stamp not in got)
        extra_ms = [(got[stamp] - taken) * 1e-6 for taken, stamp in window if stamp in got]
        figures['topics'][topic] = {
            'sent': len(window), 'lost': lost,
            'extra_p50_ms': round(statistics.median(extra_ms), 2) if extra_ms else None,
            'extra_p99_ms': round(percentile(extra_ms, 0.99), 2) if extra_ms else None}
    return figures


def summary(figures: dict) -> str:
    """One line: the run, loss per topic that lost any, the cloud's and IMU's latency, CPU."""
    topics = figures['topics']
    lost = {topic.rsplit('/', 2)[-2] + '/' + topic.rsplit('/', 1)[-1]: f'{item["lost"]}/'
            f'{item["sent"]}' for topic, item in topics.items() if item['lost']}
    cloud = topics.get(f'/{AGENT}/lidar/points', {})
    imu = topics.get(f'/{AGENT}/ins/imu', {})
    return (f'{figures["config"]:>15} {figures["rate"]:g}x mtu {figures["mtu"]}: lost '
            f'{lost or "none"}; cloud +{cloud.get("extra_p50_ms")} ms p50 '
            f'+{cloud.get("extra_p99_ms")} p99, imu +{imu.get("extra_p50_ms")} p50 '
            f'+{imu.get("extra_p99_ms")} p99; cpu A {figures["cpu_a"]} B {figures["cpu_b"]}; '
            f'B dropped {figures["host_b_drops"]}')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=30.0)
    parser.add_argument('--rates', type=float, nargs='+', default=[1.0, 5.0])
    parser.add_argument('--configs', nargs='+', choices=CONFIGS, default=list(CONFIGS))
    parser.add_argument('--mtu', type=int, default=None)
    parser.add_argument('--repeat', type=int, default=1)
    parser.add_argument('--compressed', action='store_true',
                        help='read camera/image_raw/compressed instead of camera/image_raw')
    args = parser.parse_args(argv)
    reason = two_hosts.unavailable()
    if reason:
        print(f'bench_two_hosts: {reason}', file=sys.stderr)
        return 2
    os.environ.setdefault('ROS_DOMAIN_ID', str(claim_domain_id()))
    two_hosts.remove_stale()
    report = []
    for _ in range(args.repeat):
        for rate in args.rates:
            for config in args.configs:
                figures = run_once(config, rate, args.seconds, args.mtu, args.compressed)
                print(summary(figures), flush=True)
                report.append(figures)
    print(json.dumps(report))
    return 0


if __name__ == '__main__':
    sys.exit(main())
