# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The demo: the simulator emulator, the bridge and a live viewer, until Ctrl-C.

    tools/demo                                   # the Polaris, until Ctrl-C
    tools/demo --duration 20 --vehicles polaris,maxxum --out out/demo
    tools/demo --duration 30 --record-dataset ~/data/acres/lidar   # also a LiDAR data set
    tools/demo --foxglove                        # also a live view in Foxglove

It starts three kinds of child process, each in its own process group, with DDS discovery
limited to this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, and ROS_LOCALHOST_ONLY=1 on
Humble only: Jazzy and later warn that it is deprecated) and a ROS_DOMAIN_ID of its own:

1. ``acres_sim_emulator`` on free loopback ports, playing at real time (``--rate``);
2. the bridge: the ``acres_bridge`` executable (the whole session in one process), or, where it
   is not there yet, ``sim_control`` plus one ``sensor_bridge`` per vehicle;
3. the viewer (``python -m acres_bridge.demo.viewer``), which prints the table of topics on this
   terminal and writes ``camera_lidar.png``, ``birdseye.png`` and ``viewer_summary.json`` into
   ``--out``;
4. with ``--record-dataset DIR``, one ``lidar_recorder`` per vehicle (in the vehicle's
   namespace), which writes the LiDAR data set ``DIR/demo/<start time>-<vehicle>/``
   (docs/dataset.md); its log is ``<out>/recorder.log``;
5. with ``--foxglove``, the ``foxglove_view`` node on ws://127.0.0.1:8765 (simulation time),
   whose URL the demo prints; its log is ``<out>/foxglove.log``.

The emulator's and the bridge's output goes to ``<out>/emulator.log`` and ``<out>/bridge.log``.
Ctrl-C (or SIGTERM, or the end of ``--duration``) stops the viewer first (it draws its last
pictures), then the recorders (they commit their last scans), then the bridge, then the
emulator: SIGINT to each process group, SIGTERM after a
grace period, SIGKILL as the last resort. The exit status is 0 when the viewer wrote its
pictures and every child stopped cleanly.
"""

import argparse
from collections.abc import Sequence
import importlib.util
import os
from pathlib import Path
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r'ACRES_SIM_EMULATOR_READY control=(\d+) sensors=([\d,]+)')
# Console scripts of setup.py, to run by module where the script is not installed.
ENTRY_POINTS = {
    'acres_sim_emulator': 'acres_bridge.emulator.server',
    'acres_bridge': 'acres_bridge.nodes.acres_bridge',
    'sensor_bridge': 'acres_bridge.nodes.sensor_bridge',
    'sim_control': 'acres_bridge.nodes.sim_control',
    'lidar_recorder': 'acres_bridge.nodes.lidar_recorder',
    'foxglove_view': 'acres_bridge.nodes.foxglove_view',
}
FOXGLOVE_URL = 'ws://127.0.0.1:8765'
OUTPUTS = ('camera_lidar.png', 'birdseye.png', 'viewer_summary.json')


def _command(name: str) -> list[str]:
    """Return the command of a console script: the installed one beside this Python first."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which(name)
    if found:
        return [found]
    module = ENTRY_POINTS[name]
    return [sys.executable, '-c', f'import sys; from {module} import main; sys.exit(main())']


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


class Child:
    """A child process in its own process group, stopped politely."""

    def __init__(self, name: str, command: Sequence[str], *, env: dict[str, str],
                 log: Path | None = None, stdout: int | IO | None = None) -> None:
        self.name = name
        self.log = log
        self._log_file = open(log, 'ab') if log is not None else None   # noqa: SIM115
        self.process = subprocess.Popen(
            list(command), env=env, start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=stdout if stdout is not None else self._log_file,
            stderr=self._log_file if self._log_file is not None else None)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def stop(self, *, grace_s: float = 8.0, term_s: float = 3.0) -> int:
        """SIGINT the group, then SIGTERM, then SIGKILL; return the exit status."""
        for signum, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, term_s),
                               (signal.SIGKILL, 5.0)):
            if not self.running:
                break
            self._signal(signum)
            try:
                self.process.wait(wait_s)
            except subprocess.TimeoutExpired:
                print(f'demo: {self.name} did not stop on {signal.Signals(signum).name}',
                      file=sys.stderr)
        self._signal(signal.SIGKILL)        # leftovers of the group, if any
        if self._log_file is not None:
            self._log_file.close()
        return self.process.wait()


def _start_emulator(args: argparse.Namespace, env: dict[str, str],
                    out: Path) -> tuple[Child, int, list[int]]:
    command = _command('acres_sim_emulator') + [
        '--control-port', 'any', '--vehicles', ','.join(args.vehicles), '--mode', args.mode,
        '--rate', str(args.rate), '--seed', str(args.seed)]
    emulator = Child('emulator', command, env=env, log=out / 'emulator.log',
                     stdout=subprocess.PIPE)
    found = threading.Event()
    ports: list[int] = []

    def read() -> None:
        # The READY line gives the ports; the rest of stdout goes to the log like stderr.
        with open(out / 'emulator.log', 'ab') as log:
            for line in emulator.process.stdout:
                match = READY.search(line.decode(errors='replace'))
                if match and not found.is_set():
                    ports.extend([int(match.group(1))] + [
                        int(port) for port in match.group(2).split(',')])
                    found.set()
                log.write(line)
                log.flush()
        found.set()

    threading.Thread(target=read, name='emulator-stdout', daemon=True).start()
    if not found.wait(args.start_timeout) or not ports:
        emulator.stop()
        raise RuntimeError(f'the emulator did not start; see {out / "emulator.log"}')
    return emulator, ports[0], ports[1:]


def _start_bridge(args: argparse.Namespace, env: dict[str, str], out: Path,
                  control_port: int, sensor_ports: list[int]) -> list[Child]:
    log = out / 'bridge.log'
    session = args.bridge == 'session' or (
        args.bridge == 'auto' and _has_module('acres_bridge.nodes.acres_bridge'))
    if session:
        ports = ','.join(str(port) for port in sensor_ports)
        return [Child('acres_bridge', _command('acres_bridge') + [
            '--ros-args', '-p', f'port:={control_port}', '-p', f'sensor_ports:=[{ports}]',
            '-p', 'publish_tf:=ins'], env=env, log=log)]
    children = [Child('sim_control', _command('sim_control') + [
        '--ros-args', '-p', f'port:={control_port}'], env=env, log=log)]
    for index, (agent, port) in enumerate(zip(args.vehicles, sensor_ports)):
        children.append(Child(f'sensor_bridge:{agent}', _command('sensor_bridge') + [
            '--ros-args', '-r', f'__ns:=/{agent}', '-p', f'port:={port}',
            '-p', f'frame_prefix:={agent}', '-p', f'publish_clock:={str(index == 0).lower()}',
            '-p', 'publish_tf:=ins'], env=env, log=log))
    return children


def _start_recorders(args: argparse.Namespace, env: dict[str, str], out: Path) -> list[Child]:
    root = args.record_dataset.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return [Child(f'lidar_recorder:{agent}', _command('lidar_recorder') + [
        '--ros-args', '-r', f'__ns:=/{agent}', '-p', f'root:={root}', '-p', 'set:=demo'],
        env=env, log=out / 'recorder.log') for agent in args.vehicles]


def _dataset_summary(root: Path, started: float) -> str:
    """Return one line per sequence the demo's recorders wrote."""
    try:
        from acres_bridge.dataset import DatasetError
        from acres_bridge.dataset import LidarSet
    except ImportError as exc:
        return f'demo: the data set reader is not importable: {exc}'
    try:
        dataset = LidarSet.open('demo', root=root)
    except DatasetError as exc:
        return f'demo: no data set: {exc}'
    lines = []
    for name in dataset.names:
        sequence = dataset[name]
        if sequence.folder.stat().st_mtime >= started:
            lines.append(f'demo: data set sequence {sequence.folder}: {len(sequence)} scans')
    return '\n'.join(lines) or f'demo: no sequence written below {root / "demo"}'


def _environment(args: argparse.Namespace) -> dict[str, str]:
    from acres_bridge.runtime import dds
    from acres_devkit import dds_environment
    fast_dds = dds.find_fast_dds()
    env = dict(os.environ, ROS_DOMAIN_ID=str(args.domain_id), PYTHONUNBUFFERED='1')
    dds_environment.keep_discovery_local(env, fast_dds)
    if args.dds_profile:
        # The profile spelled for the prefix's Fast DDS, under the one variable it reads
        # (3.x: FASTDDS_..., 2.x: FASTRTPS_...); each rejects the other's whole file.
        if fast_dds is not None:
            env.pop('FASTDDS_DEFAULT_PROFILES_FILE', None)
            env.pop('FASTRTPS_DEFAULT_PROFILES_FILE', None)
            env.update(dds_environment.shipped_profile_environment(fast_dds))
    # The children import acres_bridge from this tree even without an installed package.
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    return env


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='tools/demo',
        description='Run the simulator emulator, the bridge and a live viewer that prints the '
                    'rates and ages of the topics and writes pictures (the camera image with '
                    "the LiDAR points, a bird's-eye view). Ctrl-C stops everything.")
    parser.add_argument('--duration', type=float, default=None,
                        help='stop after this many seconds (default: until Ctrl-C)')
    parser.add_argument('--out', type=Path, default=Path('out/demo'),
                        help='where pictures and logs go (default out/demo)')
    parser.add_argument('--vehicles', default='polaris',
                        help='the agents, comma separated: polaris, maxxum (default polaris)')
    parser.add_argument('--mode', choices=('game', 'core'), default='game',
                        help='emulate the Unreal game or the ACRES Core server (default game)')
    parser.add_argument('--rate', type=float, default=1.0,
                        help='the real-time factor of the simulation (default 1.0)')
    parser.add_argument('--seed', type=int, default=42, help='the sensor noise seed')
    parser.add_argument('--domain-id', type=int,
                        default=int(os.environ.get('ACRES_DEMO_DOMAIN_ID', '57')),
                        help='the ROS_DOMAIN_ID of the demo (default 57, or '
                             '$ACRES_DEMO_DOMAIN_ID); rviz2 with the same id and '
                             'ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST sees the topics')
    parser.add_argument('--bridge', choices=('auto', 'session', 'nodes'), default='auto',
                        help='session: the acres_bridge executable; nodes: sim_control and a '
                             'sensor_bridge per vehicle; auto: session when it exists')
    parser.add_argument('--no-dds-profile', dest='dds_profile', action='store_false',
                        help='do not use the shipped Fast DDS profile '
                             '(config/fastdds_large_data.xml; fastdds2_... on 2.x)')
    parser.add_argument('--pictures', type=int, default=None,
                        help='stop once the viewer has drawn both pictures of every vehicle '
                             'this many times (--duration still bounds the run)')
    parser.add_argument('--picture-period', type=float, default=2.0,
                        help='seconds between pictures (default 2)')
    parser.add_argument('--print-period', type=float, default=5.0,
                        help='seconds between tables when the output is not a terminal')
    parser.add_argument('--record-dataset', type=Path, metavar='DIR', default=None,
                        help='also record each vehicle\'s LiDAR into the data set DIR/demo '
                             '(lidar_recorder; see docs/dataset.md)')
    parser.add_argument('--foxglove', action='store_true',
                        help='also serve the session to Foxglove (the foxglove_view node on '
                             f'{FOXGLOVE_URL}; open config/acres.foxglove.json as its layout)')
    parser.add_argument('--start-timeout', type=float, default=30.0, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return 0 when the viewer wrote its pictures and all stopped cleanly."""
    args = _parser().parse_args(argv)
    args.vehicles = [name.strip() for name in args.vehicles.split(',') if name.strip()]
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS + ('emulator.log', 'bridge.log', 'recorder.log', 'foxglove.log'):
        (out / name).unlink(missing_ok=True)
    started = time.time()
    env = _environment(args)

    stop = threading.Event()
    received = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)
        stop.set()

    previous = {signum: signal.signal(signum, on_signal)
                for signum in (signal.SIGINT, signal.SIGTERM)}
    children: list[Child] = []
    failed = None
    try:
        emulator, control_port, sensor_ports = _start_emulator(args, env, out)
        children.append(emulator)
        print(f'demo: emulator control={control_port} sensors='
              f'{",".join(map(str, sensor_ports))} vehicles={",".join(args.vehicles)} '
              f'mode={args.mode}; ROS_DOMAIN_ID={args.domain_id}; logs in {out}', flush=True)
        children += _start_bridge(args, env, out, control_port, sensor_ports)
        if args.record_dataset is not None:
            children += _start_recorders(args, env, out)
        if args.foxglove:
            children.append(Child('foxglove_view', _command('foxglove_view') + [
                '--ros-args', '-p', 'use_sim_time:=true'], env=env, log=out / 'foxglove.log'))
            print(f'demo: Foxglove: open {FOXGLOVE_URL} (layout config/acres.foxglove.json)',
                  flush=True)
        viewer = Child('viewer', [
            sys.executable, '-m', 'acres_bridge.demo.viewer', '--namespaces',
            ','.join(args.vehicles), '--out', str(out), '--picture-period',
            str(args.picture_period), '--print-period', str(args.print_period)] + (
            [] if args.pictures is None else ['--pictures', str(args.pictures)]), env=env)
        children.append(viewer)
        deadline = None if args.duration is None else time.monotonic() + args.duration
        while not stop.is_set():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            stop.wait(0.5 if remaining is None else min(0.5, remaining))
            if args.pictures is not None and viewer.process.poll() == 0:
                break                               # the viewer drew what was asked
            dead = [child for child in children if not child.running]
            if dead:
                failed = dead[0]
                print(f'demo: {failed.name} exited with {failed.process.returncode}'
                      + (f'; see {failed.log}' if failed.log else ''), file=sys.stderr)
                break
    except RuntimeError as exc:
        print(f'demo: {exc}', file=sys.stderr)
        failed = exc
    finally:
        # Stop in reverse order: the viewer draws its last pictures while the data still flows.
        statuses = {child.name: child.stop() for child in reversed(children)}
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    pictures = [out / name for name in OUTPUTS[:2] if (out / name).is_file()]
    print('demo: pictures ' + ('  '.join(map(str, pictures)) if pictures else 'none') +
          f'; logs {out / "emulator.log"} {out / "bridge.log"}', flush=True)
    if args.record_dataset is not None:
        print(_dataset_summary(args.record_dataset.expanduser().resolve(), started), flush=True)
    unclean = {name: status for name, status in statuses.items()
               if status not in (0, -signal.SIGINT, 130)}
    if unclean:
        print(f'demo: unclean exits: {unclean}', file=sys.stderr)
    return 0 if pictures and failed is None and not unclean else 1


if __name__ == '__main__':
    sys.exit(main())
