# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the LiDAR dataset: recording from the bridge without loss, reader speed, size per scan.

    .venv/bin/python tools/bench_dataset.py                      # 60 s at 10x, then the reader
    .venv/bin/python tools/bench_dataset.py --seconds 20 --rate 10 --configs default,xml
    .venv/bin/python tools/bench_dataset.py --read-only --scans 2048   # the reader alone

Recording: the emulator (Polaris, lockstep until the recorder matched, then playing at
``--rate``), the ``sensor_bridge`` and the ``lidar_recorder`` executables, each in its own
process on a local-only graph with a ROS_DOMAIN_ID of its own. After ``--seconds`` of wall time
the emulator pauses; once the bridge's ``/diagnostics`` count of published clouds stops
growing, the recorder gets Ctrl-C. A cloud is lost when the bridge published it and the
sequence has no row for it; ``source_index`` (counted in scan periods from the stamps) shows a
hole for every cloud that never reached the recorder. ``default`` is Fast DDS as it ships (the
nodes' own writer settings apply), ``xml`` adds config/fastdds_large_data.xml to every process.

Reader: ``Sequence.range_m(slice(i, i + 256))`` over the recorded sequence (or a synthetic one
of ``--scans`` scans with ``--read-only``) in one process: a first pass from the files, then
passes from the page cache, as range images per second; also single random scans and top views.

Size: the bytes of the range and intensity shards per scan, against the seed's 172,800, and the
scan table's bytes per row.
"""

import argparse
import json
import os
from pathlib import Path
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from acres_bridge.dataset import LidarSet
from acres_bridge.dataset import TopView
from acres_bridge.dataset.format import SCAN_DTYPE
from acres_devkit.bench.harness import ROOT

SEED_BYTES_PER_SCAN = 172_800
READY = re.compile(r'ACRES_SIM_EMULATOR_READY control=(\d+) sensors=([\d,]+)')
XML_PROFILE = Path(ROOT) / 'config' / 'fastdds_large_data.xml'
PLAYING, PAUSED = 1, 2
START_TIMEOUT_S = 60.0


def _executable(name: str, module: str) -> list[str]:
    installed = Path(sys.executable).parent.parent / 'lib' / 'acres_bridge' / name
    if installed.is_file():
        return [sys.executable, str(installed)]
    return [sys.executable, '-m', module]


def _environment(config: str, domain_id: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', ROS_DOMAIN_ID=str(domain_id),
               PYTHONUNBUFFERED='1')
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    for name in ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE',
                 'RMW_FASTRTPS_USE_QOS_FROM_XML'):
        env.pop(name, None)
    if config == 'xml':
        env['FASTDDS_DEFAULT_PROFILES_FILE'] = str(XML_PROFILE)
        env['RMW_FASTRTPS_USE_QOS_FROM_XML'] = '1'
    elif config != 'default':
        raise SystemExit(f'bench_dataset: unknown configuration {config!r}')
    return env


class _Control:
    """A JSON-lines client of the emulator's control channel."""

    def __init__(self, port: int) -> None:
        import socket
        self._sock = socket.create_connection(('127.0.0.1', port), timeout=10.0)
        self._file = self._sock.makefile('rb')
        self._id = 0

    def call(self, op: str, **fields) -> dict:
        self._id += 1
        self._sock.sendall(json.dumps({'id': self._id, 'op': op, **fields}).encode() + b'\n')
        while True:
            message = json.loads(self._file.readline())
            if message.get('id') == self._id:
                return message

    def close(self) -> None:
        self._file.close()
        self._sock.close()


class _Watcher:
    """An rclpy node that sees the graph and the bridge's /diagnostics."""

    def __init__(self, env: dict[str, str]) -> None:
        os.environ.update({key: env[key] for key in ('ROS_AUTOMATIC_DISCOVERY_RANGE',
                                                     'ROS_DOMAIN_ID')})
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_dataset', context=self.context)
        self.published: int | None = None
        self.frames: int | None = None
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:                                   # noqa: B902 (shutdown)
            pass

    def _on_diagnostics(self, message) -> None:
        for status in message.status:
            values = {item.key: item.value for item in status.values}
            if 'lidar.published' in values:
                self.published = int(values['lidar.published'])
                self.frames = int(values.get('lidar.frames', -1))

    def subscribers(self, topic: str) -> int:
        return self.node.count_subscribers(topic)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f'timed out waiting for {what}')
        time.sleep(0.05)


def _cpu_s(pid: int) -> float:
    try:
        import psutil
        times = psutil.Process(pid).cpu_times()
        return times.user + times.system
    except Exception:                                       # noqa: B902 (gone or no psutil)
        return float('nan')


def record(config: str, rate: float, seconds: float, root: Path, log: Path, *,
           commit_interval_s: float = 10.0, cloud_depth: int | None = None) -> dict:
    """Record from the bridge at a real-time factor; return the figures."""
    domain_id = random.randint(120, 230)
    env = _environment(config, domain_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, 'ab')                                   # noqa: SIM115 (closed below)
    children: list[subprocess.Popen] = []
    watcher = None
    try:
        emulator = subprocess.Popen(
            _executable('acres_sim_emulator', 'acres_bridge.emulator.server') + [
                '--control-port', '0', '--vehicles', 'polaris', '--lockstep', '--rate',
                str(rate)], env=env, stdout=subprocess.PIPE, stderr=out, cwd=ROOT)
        children.append(emulator)
        match = None
        deadline = time.monotonic() + START_TIMEOUT_S
        while match is None and time.monotonic() < deadline:
            line = emulator.stdout.readline().decode(errors='replace')
            if not line:
                break
            match = READY.search(line)
        if match is None:
            raise RuntimeError('the emulator did not start')
        threading.Thread(target=lambda: [out.write(b) for b in emulator.stdout],
                         daemon=True).start()
        control_port, sensor_port = int(match.group(1)), int(match.group(2).split(',')[0])
        bridge = subprocess.Popen(
            _executable('sensor_bridge', 'acres_bridge.nodes.sensor_bridge') + [
                '--ros-args', '-r', '__ns:=/polaris', '-p', f'port:={sensor_port}'] + (
                    [] if cloud_depth is None else [
                        '-p', f'qos_overrides./polaris/lidar/points.publisher.depth:='
                              f'{cloud_depth}']),
            env=env, stdout=out, stderr=out, cwd=ROOT)
        children.append(bridge)
        recorder = subprocess.Popen(
            _executable('lidar_recorder', 'acres_bridge.nodes.lidar_recorder') + [
                '--ros-args', '-r', '__ns:=/polaris', '-p', f'root:={root}',
                '-p', 'set:=bench', '-p', f'sequence:=rate{rate:g}-{config}',
                '-p', f'commit_interval_s:={commit_interval_s}'],
            env=env, stdout=out, stderr=out, cwd=ROOT)
        children.append(recorder)
        watcher = _Watcher(env)
        _wait(lambda: watcher.subscribers('/polaris/lidar/points') >= 1, START_TIMEOUT_S,
              'the recorder to subscribe')
        _wait(lambda: watcher.published is not None, START_TIMEOUT_S, 'the diagnostics')
        control = _Control(control_port)
        cpu_before = _cpu_s(recorder.pid)
        started = time.monotonic()
        reply = control.call('set_state', state=PLAYING)
        if not reply.get('ok', reply.get('result') == 1):
            raise RuntimeError(f'set_state playing: {reply}')
        time.sleep(seconds)                                 # the run itself, wall time
        control.call('set_state', state=PAUSED)
        played_s = time.monotonic() - started
        last, stable = -1, 0
        while stable < 3:                                   # 3 s without a new cloud
            time.sleep(1.0)
            stable = stable + 1 if watcher.published == last else 0
            last = watcher.published
        published, received = watcher.published, watcher.frames
        cpu_s = _cpu_s(recorder.pid) - cpu_before
        control.close()
        recorder.send_signal(signal.SIGINT)
        recorder.wait(60)
    finally:
        if watcher is not None:
            watcher.close()
        for child in reversed(children):
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
                try:
                    child.wait(20)
                except subprocess.TimeoutExpired:
                    child.kill()
        out.close()
    stops = re.findall(r'ACRES_SENSOR_STREAM_STOP .*? lidar=(\d+)/[\d.]+MB/drop(\d+)',
                       log.read_text(errors='replace'))
    sent, dropped = (int(stops[-1][0]), int(stops[-1][1])) if stops else (None, None)
    sequence = LidarSet.open('bench', root=root)[f'rate{rate:g}-{config}']
    indices = sequence.scans['source_index'].astype(np.int64)
    holes = int((np.diff(indices) - 1).clip(0).sum()) if len(indices) else 0
    return {
        'config': config, 'rate': rate, 'wall_s': round(played_s, 1), 'cloud_depth': cloud_depth,
        'emulator_lidar_frames': sent, 'emulator_lidar_dropped': dropped,
        'bridge_received': received, 'bridge_published': published,
        'rows': len(sequence), 'lost': None if published is None else published - len(sequence),
        'source_index_holes': holes, 'gap_flags': int((sequence.scans['flags'] & 1).sum()),
        'poses_missing': int(np.isnan(sequence.scans['east']).sum()),
        'recorder_cpu_percent': round(100.0 * cpu_s / played_s, 1),
        'folder': str(sequence.folder)}


def reader_speed(folder: Path, seconds: float) -> dict:
    """Read slices of 256, single scans and top views from one sequence; return the rates."""
    from acres_bridge.dataset.reader import Sequence
    sequence = Sequence(folder)
    count = len(sequence)
    starts = list(range(0, count - 255, 256)) or [0]
    figures = {'scans': count}
    first = time.perf_counter()
    for start in starts:
        sequence.range_m(slice(start, start + 256))
    figures['first_pass_per_s'] = round(len(starts) * 256 / (time.perf_counter() - first))
    images, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        for start in starts:
            sequence.range_m(slice(start, start + 256))
            images += 256
    figures['slices_of_256_per_s'] = round(images / (time.perf_counter() - began))
    rng = np.random.default_rng(1)
    picks = rng.integers(0, count, 2000)
    began = time.perf_counter()
    for pick in picks:
        sequence.range_m(int(pick))
    figures['single_scans_per_s'] = round(len(picks) / (time.perf_counter() - began))
    view = TopView()
    batch = sequence.range_m(slice(0, min(count, 32)))
    began = time.perf_counter()
    view(sequence.calibration, batch)
    figures['top_views_per_s'] = round(len(batch) / (time.perf_counter() - began))
    return figures


def sizes(folder: Path) -> dict:
    """Return the bytes per scan of the layers and of the scan table."""
    scans = len(np.load(folder / 'scans.npy', mmap_mode='r'))
    layers = sum(path.stat().st_size for pattern in ('range-*.npy', 'intensity-*.npy')
                 for path in folder.glob(pattern))
    return {'scans': scans, 'layer_bytes_per_scan': round(layers / max(scans, 1), 1),
            'seed_bytes_per_scan': SEED_BYTES_PER_SCAN,
            'scan_table_bytes_per_row': SCAN_DTYPE.itemsize,
            'meta_json_bytes': (folder / 'meta.json').stat().st_size}


def _synthetic(root: Path, scans: int) -> Path:
    """Write a sequence of synthetic scans (random ranges, 5 % misses) for the reader alone."""
    from acres_bridge.dataset.writer import SequenceWriter
    writer = SequenceWriter(root, 'bench', 'synthetic', rings=32, columns=1800)
    rng = np.random.default_rng(3)
    rows = np.zeros(0, SCAN_DTYPE)
    for k in range(scans):
        value = rng.integers(1, 60000, (32, 1800), dtype=np.uint16)
        value[rng.random((32, 1800)) < 0.05] = 0
        writer.add(value, rng.integers(0, 256, (32, 1800), dtype=np.uint8))
        rows = np.concatenate([rows, np.zeros(1, SCAN_DTYPE)])
        rows['source_index'][-1] = k
        if writer.full or k == scans - 1:
            writer.commit(rows)
    writer.close()
    return writer.folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='tools/bench_dataset.py', description=__doc__.split(
        '\n\n')[0].strip(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--seconds', type=float, default=60.0,
                        help='wall seconds of recording per run (default 60)')
    parser.add_argument('--rate', type=float, default=10.0, help='real-time factor (10)')
    parser.add_argument('--configs', default='default',
                        help='DDS configurations, comma separated: default, xml (default)')
    parser.add_argument('--commit-interval', type=float, default=10.0,
                        help="the recorder's commit_interval_s (default 10)")
    parser.add_argument('--cloud-depth', type=int, default=None,
                        help="the bridge's keep-last depth of lidar/points (a QoS override; "
                             'default: the bridge\'s 10)')
    parser.add_argument('--read-seconds', type=float, default=10.0,
                        help='seconds of slice reads (default 10)')
    parser.add_argument('--read-only', action='store_true',
                        help='measure the reader on a synthetic sequence only')
    parser.add_argument('--scans', type=int, default=2048,
                        help='scans of the synthetic sequence (default 2048)')
    parser.add_argument('--root', type=Path, help='where the data goes (default: a temporary '
                                                  'folder, removed at the end)')
    parser.add_argument('--json', type=Path, help='also write the figures here')
    args = parser.parse_args(argv)
    temporary = None
    if args.root is None:
        temporary = tempfile.TemporaryDirectory(prefix='bench_dataset-')
        args.root = Path(temporary.name)
    results: dict = {'machine': {'cpus': os.cpu_count(), 'load': os.getloadavg()}}
    try:
        folders = []
        if args.read_only:
            folders.append(_synthetic(args.root, args.scans))
        else:
            results['recording'] = []
            for config in [c.strip() for c in args.configs.split(',') if c.strip()]:
                figures = record(config, args.rate, args.seconds, args.root,
                                 args.root / f'{config}.log',
                                 commit_interval_s=args.commit_interval,
                                 cloud_depth=args.cloud_depth)
                print(f'recording {config} at {args.rate:g}x for {figures["wall_s"]} s: emulator '
                      f'sent {figures["emulator_lidar_frames"]} LiDAR frames and dropped '
                      f'{figures["emulator_lidar_dropped"]} (its queue), bridge '
                      f'published {figures["bridge_published"]} clouds (received '
                      f'{figures["bridge_received"]}), {figures["rows"]} rows, lost '
                      f'{figures["lost"]}, source_index holes {figures["source_index_holes"]}, '
                      f'gap flags {figures["gap_flags"]}, rows without pose '
                      f'{figures["poses_missing"]}, recorder CPU '
                      f'{figures["recorder_cpu_percent"]} %', flush=True)
                results['recording'].append(figures)
                folders.append(Path(figures['folder']))
        folder = max(folders, key=lambda path: len(np.load(path / 'scans.npy', mmap_mode='r')))
        results['reader'] = reader_speed(folder, args.read_seconds)
        reader = results['reader']
        print(f'reader on {reader["scans"]} scans: slices of 256 {reader["slices_of_256_per_s"]} '
              f'range images/s (first pass {reader["first_pass_per_s"]}/s), single scans '
              f'{reader["single_scans_per_s"]}/s, top views {reader["top_views_per_s"]}/s',
              flush=True)
        results['size'] = sizes(folder)
        size = results['size']
        print(f'size: {size["layer_bytes_per_scan"]:,} bytes of range + intensity per scan '
              f'(seed {SEED_BYTES_PER_SCAN:,}), scan table {size["scan_table_bytes_per_row"]} '
              f'bytes per row, meta.json {size["meta_json_bytes"]:,} bytes', flush=True)
        results['machine']['load_after'] = os.getloadavg()
        if args.json:
            args.json.write_text(json.dumps(results, indent=1) + '\n')
    finally:
        if temporary is not None:
            temporary.cleanup()
    return 0


if __name__ == '__main__':
    sys.exit(main())
