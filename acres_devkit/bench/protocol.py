# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Print throughput and latency figures of the protocol layer (not a test: run it by hand).

    .venv/bin/python tools/bench_protocol.py

A sender process streams Polaris-sized camera and LiDAR frames to a SensorStreamClient, first
as fast as it can, then paced at 100 Hz; a JSON-lines echo process answers ControlClient
requests from 8 threads.
"""

import concurrent.futures
import json
import multiprocessing
import socket
import sys
import threading
import time

import numpy as np

from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.protocol import frames
from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.stream_client import SensorStreamClient


def _sensor_sender(ports: multiprocessing.Queue, seconds: float, rate_hz: float) -> None:
    hello = hello_layout('polaris', 'polaris')
    with socket.create_server(('127.0.0.1', 0)) as server:
        ports.put(server.getsockname()[1])
        conn, _ = server.accept()
    camera = frames.encode_camera_payload(np.zeros((512, 896, 3), np.uint8))
    lidar = frames.encode_lidar_payload(np.zeros((1800, 32, 4), np.float32))
    with conn:
        conn.sendall(frames.encode_frame(frames.FrameType.HELLO,
                                         encode_hello_payload(hello), sequence=0,
                                         stamp_s=0.0, publish_s=time.monotonic()))
        sequence = 1
        start = time.monotonic()
        end = start + seconds
        while time.monotonic() < end:
            for kind, payload in ((frames.FrameType.CAMERA, camera),
                                  (frames.FrameType.LIDAR, lidar)):
                conn.sendall(frames.encode_header(
                    kind, sequence=sequence, payload_size=len(payload), stamp_s=0.0,
                    publish_s=time.monotonic()))
                conn.sendall(payload)
                sequence += 1
            if rate_hz:
                time.sleep(max(0.0, start + sequence / 2 / rate_hz - time.monotonic()))


def bench_sensor_stream(seconds: float, rate_hz: float) -> None:
    ports: multiprocessing.Queue = multiprocessing.Queue()
    sender = multiprocessing.Process(target=_sensor_sender, args=(ports, seconds, rate_hz))
    sender.start()
    closed = threading.Event()
    client = SensorStreamClient(
        '127.0.0.1', ports.get(), name='bench', on_frame=lambda frame: None,
        on_connection=lambda up, reason: None if up else closed.set(), reconnect_s=60.0,
        stats_window_s=seconds)
    begin = time.monotonic()
    client.start()
    closed.wait(seconds + 10.0)
    elapsed = time.monotonic() - begin
    stats = client.stats
    client.stop()
    sender.join()
    label = f'{rate_hz:g} Hz pairs' if rate_hz else 'flat out'
    print(f'sensor stream, {label}: {stats["frames"]} frames, '
          f'{stats["bytes"] / elapsed / 1e6:.0f} MB/s over {elapsed:.1f} s')
    for name in ('camera', 'lidar'):
        figures = stats['by_type'][name]
        print(f'  {name:6} {figures["frames"]:6} frames  transport p50 '
              f'{figures["latency_p50_ms"]:.2f} ms  max {figures["latency_max_ms"]:.2f} ms')


def _echo_server(ports: multiprocessing.Queue) -> None:
    with socket.create_server(('127.0.0.1', 0)) as server:
        ports.put(server.getsockname()[1])
        conn, _ = server.accept()
    with conn, conn.makefile('rb') as lines:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for line in lines:
            request = json.loads(line)
            conn.sendall(json.dumps({'id': request['id'], 'ok': True, 'result': 1}).encode()
                         + b'\n')


def bench_control(threads: int, requests: int) -> None:
    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=_echo_server, args=(ports,))
    server.start()
    connected = threading.Event()
    client = ControlClient('127.0.0.1', ports.get(),
                           on_connection=lambda up, reason: up and connected.set())
    client.start()
    connected.wait(10.0)
    begin = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda _: [client.request('get_state') for _ in range(requests)],
                      range(threads)))
    elapsed = time.monotonic() - begin
    stats = client.stats
    client.stop()
    server.join()
    print(f'control channel, {threads} threads x {requests} requests: '
          f'{threads * requests / elapsed:.0f} requests/s, round trip p50 '
          f'{stats["round_trip_p50_ms"]:.2f} ms max {stats["round_trip_max_ms"]:.2f} ms')


def main() -> int:
    bench_sensor_stream(3.0, 0.0)
    bench_sensor_stream(3.0, 100.0)
    bench_control(8, 500)
    return 0


if __name__ == '__main__':
    sys.exit(main())
