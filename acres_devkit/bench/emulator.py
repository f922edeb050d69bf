# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure how fast the emulator serves a sensor stream.

The emulator runs in this process (pinned to one core with ``--cpu``); a raw socket reader runs
in another process and counts the frames. In lockstep the driver sends step requests and waits
for each barrier at the reader before the next request; the figure is simulated time over wall
time. In playing mode (``--rate N``) the world runs at N times real time for ``--seconds``
and the figure is the rate the reader saw.

    .venv/bin/python tools/bench_emulator.py --sim-seconds 10
    .venv/bin/python tools/bench_emulator.py --rate 10 --seconds 10
    .venv/bin/python tools/bench_emulator.py --render-every 10 --sim-seconds 10
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time

from acres_bridge.emulator.server import Emulator
from acres_bridge.protocol.frames import frame_name

HEADER = struct.Struct('<4sHHIIdd')


def read_stream(port: int, cpu: int | None) -> None:
    """Read the stream; print each barrier step, and the counts when the stream ends."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    sock = socket.create_connection(('127.0.0.1', port))
    buffer = bytearray(4 << 20)
    view = memoryview(buffer)
    counts: dict[str, list[float]] = {}
    sequence_gaps = 0
    last_sequence = None

    def read_into(size: int) -> bool:
        got = 0
        while got < size:
            chunk = sock.recv_into(view[got:size], size - got)
            if chunk == 0:
                return False
            got += chunk
        return True

    while read_into(32):
        _, kind, _, sequence, size, _, publish_s = HEADER.unpack_from(buffer)
        if last_sequence is not None and kind != 1 and sequence != last_sequence + 1:
            sequence_gaps += 1
        last_sequence = sequence
        if size > len(buffer):
            buffer = bytearray(size)
            view = memoryview(buffer)
        if not read_into(size):
            break
        entry = counts.setdefault(frame_name(kind), [0, 0, 0.0])
        entry[0] += 1
        entry[1] += size + 32
        entry[2] = max(entry[2], time.monotonic() - publish_s)
        if kind == 6:
            print(json.dumps({'barrier': struct.unpack_from('<Q', buffer)[0]}), flush=True)
        elif kind == 1:
            print(json.dumps({'hello': sequence}), flush=True)
    print(json.dumps({'counts': counts, 'sequence_gaps': sequence_gaps}), flush=True)


class Reader:
    """The reader process and its lines."""

    def __init__(self, port: int, cpu: int | None) -> None:
        command = [sys.executable, '-m', 'acres_devkit.bench.emulator', '--reader', str(port)]
        if cpu is not None:
            command += ['--reader-cpu', str(cpu)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.line()   # the Hello: from now on the stream queues frames

    def line(self) -> dict:
        text = self.process.stdout.readline()
        if not text:
            raise RuntimeError('the reader ended')
        return json.loads(text)

    def summary(self) -> dict:
        while True:
            line = self.line()
            if 'counts' in line:
                self.process.wait(30)
                return line


class Control:
    """A minimal JSON-lines client."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.file = self.sock.makefile('rb')
        self.next_id = 0

    def call(self, op: str, **fields) -> dict:
        self.next_id += 1
        self.sock.sendall((json.dumps({'id': self.next_id, 'op': op, **fields}) + '\n').encode())
        while True:
            message = json.loads(self.file.readline())
            if message.get('id') == self.next_id and 'event' not in message:
                return message


def cpu_s() -> float:
    """Return the CPU time of this process (the emulator's threads), user and system."""
    times = os.times()
    return times.user + times.system


def report(title: str, summary: dict, sim_s: float, wall_s: float, emulator: Emulator,
           cpu: float) -> None:
    total = sum(entry[1] for entry in summary['counts'].values())
    drops = {frame_type.name.lower(): counters.drops
             for frame_type, counters in emulator.streams[0].counters.items() if counters.drops}
    load = os.getloadavg()[0]
    print(f'{title}: {sim_s:.2f} s simulated in {wall_s:.2f} s wall: '
          f'real-time factor {sim_s / wall_s:.2f}, {total / wall_s / 1e6:.1f} MB/s, '
          f'drops {drops or 0}, sequence gaps {summary["sequence_gaps"]}')
    # On a loaded machine the wall figure falls with the share of the core the emulator gets;
    # simulated time over the emulator's own CPU time is what one core would give it alone.
    print(f'  emulator CPU {cpu:.2f} s: {sim_s / cpu:.2f} simulated seconds per CPU second; '
          f'load average {load:.2f} on {os.cpu_count()} cpus')
    for name, (frames, size, worst_s) in sorted(summary['counts'].items()):
        print(f'  {name:8s} frames={frames:6d} {size / 1e6:9.1f} MB  '
              f'transport max {worst_s * 1e3:7.1f} ms')


def warm_up(control: Control, reader: Reader) -> int:
    """Run one step request (it builds the sensor models' tables); return the step."""
    step = control.call('step', steps=12)['step']
    while reader.line().get('barrier') != step:
        pass
    return step


def bench_lockstep(args: argparse.Namespace) -> None:
    with Emulator(args.vehicles, lockstep=True, mode=args.mode,
                  render_every=args.render_every) as emulator:
        reader = Reader(emulator.sensor_ports[0], args.reader_cpu)
        control = Control(emulator.control_port)
        warm_up(control, reader)
        first = done = control.call('get_state')['step']
        total_steps = first + round(args.sim_seconds * 120)
        started, started_cpu = time.perf_counter(), cpu_s()
        while done < total_steps:
            steps = min(args.steps, total_steps - done)
            reply = control.call('step', steps=steps)
            done = reply['step']
            while reader.line().get('barrier') != done:
                pass
        wall_s, cpu = time.perf_counter() - started, cpu_s() - started_cpu
        emulator.stop()
        summary = reader.summary()
    report(f'lockstep, {args.steps} steps a request, render every {args.render_every}',
           summary, (done - first) / 120, wall_s, emulator, cpu)


def bench_playing(args: argparse.Namespace) -> None:
    with Emulator(args.vehicles, lockstep=True, mode=args.mode, rate=args.rate,
                  render_every=args.render_every) as emulator:
        reader = Reader(emulator.sensor_ports[0], args.reader_cpu)
        control = Control(emulator.control_port)
        first = warm_up(control, reader)
        started, started_cpu = time.perf_counter(), cpu_s()
        control.call('set_state', state=1)
        time.sleep(args.seconds)
        last = control.call('set_state', state=2) and control.call('get_state')['step']
        wall_s, cpu = time.perf_counter() - started, cpu_s() - started_cpu
        emulator.stop()
        summary = reader.summary()
    report(f'playing at rate {args.rate}, render every {args.render_every}', summary,
           (last - first) / 120, wall_s, emulator, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[1])
    parser.add_argument('--vehicles', default='polaris')
    parser.add_argument('--mode', choices=('game', 'core'), default='game')
    parser.add_argument('--sim-seconds', type=float, default=10.0,
                        help='lockstep: the simulated time to run')
    parser.add_argument('--steps', type=int, default=12, help='lockstep: steps a request')
    parser.add_argument('--rate', type=float, default=None,
                        help='run the playing state at this real-time factor instead')
    parser.add_argument('--seconds', type=float, default=10.0, help='playing: the wall time')
    parser.add_argument('--render-every', type=int, default=1)
    parser.add_argument('--cpu', type=int, default=0,
                        help='pin the emulator to this core (-1: no pinning)')
    parser.add_argument('--reader-cpu', type=int, default=None)
    parser.add_argument('--reader', type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reader is not None:
        read_stream(args.reader, args.reader_cpu)
        return
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
        if args.reader_cpu is None and os.cpu_count() > 1:
            args.reader_cpu = (args.cpu + 1) % os.cpu_count()
    if args.rate is None:
        bench_lockstep(args)
    else:
        bench_playing(args)


if __name__ == '__main__':
    main()
