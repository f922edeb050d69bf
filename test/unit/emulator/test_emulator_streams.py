# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The emulator's sensor streams against the sensor stream seed, over real sockets."""

from collections import Counter
import json
import logging
import select
import socket
import struct
import subprocess
import sys

import numpy as np
import pytest
from support.emulator_probe import connect_stream
from support.emulator_probe import JsonChannel
from support.emulator_probe import read_frame
from support.emulator_probe import read_until_barrier
from support.paths import DATA

from acres_bridge.emulator.server import Emulator
from acres_bridge.emulator.stream_server import SensorStreamServer
from acres_bridge.protocol.frames import FrameType

SEED_READER = str(DATA / 'seed_reader.py')


@pytest.fixture
def lockstep_polaris():
    with Emulator(('polaris',), lockstep=True) as emulator:
        yield emulator


def _step(channel: JsonChannel, steps: int) -> dict:
    reply = channel.call('step', steps=steps)
    assert reply['result'] == 1, reply
    return reply


def test_three_12_step_requests_give_the_seed_frames_and_barriers(lockstep_polaris):
    sock = connect_stream(lockstep_polaris.sensor_ports[0])
    channel = JsonChannel(lockstep_polaris.control_port)
    kind, sequence, stamp_s, payload = read_frame(sock)
    assert (kind, sequence, stamp_s) == (FrameType.HELLO, 0, 0.0)
    assert json.loads(payload)['agent'] == 'polaris'
    for request in range(1, 4):
        reply = _step(channel, 12)
        frames = read_until_barrier(sock)
        counts = Counter(frame[0] for frame in frames[:-1])
        assert counts == {FrameType.CLOCK: 12, FrameType.INS: 10, FrameType.LIDAR: 1,
                          FrameType.CAMERA: 1}
        kind, sequence, stamp_s, payload = frames[-1]
        assert sequence == 25 * request
        assert struct.unpack('<Q', payload)[0] == 12 * request == reply['barrier']
        assert stamp_s == reply['time_s'] == pytest.approx(0.1 * request, abs=1e-6)
        assert [frame[1] for frame in frames] == list(range(25 * request - 24, 25 * request + 1))
    channel.close()
    sock.close()


def test_sensor_stamps_and_payloads_follow_the_seed(lockstep_polaris):
    sock = connect_stream(lockstep_polaris.sensor_ports[0])
    channel = JsonChannel(lockstep_polaris.control_port)
    hello = json.loads(read_frame(sock)[3])
    _step(channel, 24)
    frames = read_until_barrier(sock)
    clocks = [frame for frame in frames if frame[0] == FrameType.CLOCK]
    step_s = float(np.float32(1 / 120))
    assert [frame[2] for frame in clocks] == [step * step_s for step in range(1, 25)]
    # The payload is the vehicle time: the stamp less one nonzero offset per agent.
    offsets = {frame[2] - struct.unpack('<d', frame[3])[0] for frame in clocks}
    assert len(offsets) == 1 and offsets.pop() == pytest.approx(-1000.0, abs=1e-9)
    ins = [frame for frame in frames if frame[0] == FrameType.INS]
    steps = [round(frame[2] / float(np.float32(1 / 120))) for frame in ins]
    assert len(ins) == 20 and set(np.diff(steps)) == {1, 2}
    assert all(len(frame[3]) == 320 for frame in ins)
    lidar = [frame for frame in frames if frame[0] == FrameType.LIDAR]
    assert [frame[2] for frame in lidar] == [clocks[11][2], clocks[23][2]]
    columns, rings, point_step, reserved = struct.unpack_from('<4I', lidar[0][3])
    assert (columns, rings, point_step, reserved) == (
        hello['lidar']['columns'], hello['lidar']['rings'], 16, 0)
    assert len(lidar[0][3]) == 16 + 16 * columns * rings
    camera = [frame for frame in frames if frame[0] == FrameType.CAMERA]
    width, height, encoding, row_step = struct.unpack_from('<4I', camera[0][3])
    assert (width, height, encoding, row_step) == (
        hello['camera']['width'], hello['camera']['height'], 1, 3 * hello['camera']['width'])
    assert len(camera[0][3]) == 16 + row_step * height


def test_a_new_connection_gets_a_new_hello_and_the_sequence_continues(lockstep_polaris):
    channel = JsonChannel(lockstep_polaris.control_port)
    first = connect_stream(lockstep_polaris.sensor_ports[0])
    assert read_frame(first)[:2] == (FrameType.HELLO, 0)
    _step(channel, 12)
    assert read_until_barrier(first)[-1][1] == 25
    first.close()
    assert lockstep_polaris.streams[0].wait_disconnected(10.0)
    # Frames of steps without a client are not queued and get no number.
    _step(channel, 12)
    second = connect_stream(lockstep_polaris.sensor_ports[0])
    kind, sequence, stamp_s, _ = read_frame(second)
    assert (kind, stamp_s) == (FrameType.HELLO, 0.0)
    assert sequence == 26
    _step(channel, 12)
    frames = read_until_barrier(second)
    assert [frame[1] for frame in frames] == list(range(sequence + 1, sequence + 26))
    second.close()


def test_a_second_client_waits_until_the_first_disconnects(lockstep_polaris):
    first = connect_stream(lockstep_polaris.sensor_ports[0])
    assert read_frame(first)[0] == FrameType.HELLO
    second = connect_stream(lockstep_polaris.sensor_ports[0])
    channel = JsonChannel(lockstep_polaris.control_port)
    _step(channel, 12)
    read_until_barrier(first)
    # The second client is in the listen queue: no byte has come.
    assert select.select([second], [], [], 0.2)[0] == []
    first.close()
    kind, sequence, _, _ = read_frame(second)
    assert kind == FrameType.HELLO and sequence == 26
    second.close()


def test_core_mode_sends_no_camera_frames_and_a_hello_of_sequence_0():
    with Emulator(('polaris',), mode='core', lockstep=True) as emulator:
        channel = JsonChannel(emulator.control_port)
        _step(channel, 24)
        sock = connect_stream(emulator.sensor_ports[0])
        kind, sequence, stamp_s, payload = read_frame(sock)
        assert (kind, sequence) == (FrameType.HELLO, 0)
        assert stamp_s == 24 / 120
        assert json.loads(payload)['camera']['enabled'] is False
        _step(channel, 24)
        frames = read_until_barrier(sock)
        counts = Counter(frame[0] for frame in frames)
        assert counts == {FrameType.CLOCK: 24, FrameType.INS: 20, FrameType.LIDAR: 2,
                          FrameType.BARRIER: 1}
        assert frames[0][1] == 1
        assert frames[-1][2] == 48 / 120
        sock.close()


def test_each_agent_has_its_own_stream_and_barrier():
    with Emulator(('polaris', 'maxxum'), lockstep=True) as emulator:
        channel = JsonChannel(emulator.control_port)
        ports = [agent['sensor_stream'] for agent in channel.call('hello')['agents']]
        assert ports == emulator.sensor_ports and len(set(ports)) == 2
        socks = [connect_stream(port) for port in ports]
        hellos = [json.loads(read_frame(sock)[3]) for sock in socks]
        assert [hello['agent'] for hello in hellos] == ['polaris', 'maxxum']
        _step(channel, 12)
        for sock, hello in zip(socks, hellos):
            frames = read_until_barrier(sock)
            lidar = [frame for frame in frames if frame[0] == FrameType.LIDAR]
            columns, rings = struct.unpack_from('<2I', lidar[0][3])
            assert (columns, rings) == (hello['lidar']['columns'], hello['lidar']['rings'])
            assert struct.unpack('<Q', frames[-1][3])[0] == 12
            sock.close()


def test_the_drop_rules_drop_sensor_frames_first_and_number_only_queued_frames():
    stream = SensorStreamServer(agent='probe', hello={'agent': 'probe'}, time_s=lambda: 0.0,
                                drop_sensor_bytes=1000, drop_all_bytes=3000)
    stream.start()
    try:
        assert not stream.queue(FrameType.CLOCK, b'\0' * 8, 0.0)   # no client: not queued
        sock = connect_stream(stream.port)
        assert read_frame(sock)[:2] == (FrameType.HELLO, 0)
        assert stream.queue(FrameType.CLOCK, b'\0' * 8, 0.1)
        assert not stream.queue(FrameType.LIDAR, b'\0' * 1500, 0.1)   # above 1000 with it
        assert stream.queue(FrameType.INS, b'\0' * 1500, 0.1)         # only LiDAR/camera drop
        assert not stream.queue(FrameType.INS, b'\0' * 3500, 0.1)     # above 3000: all drop
        assert stream.wait_drained(10.0)
        assert stream.queue(FrameType.CAMERA, b'\0' * 16, 0.2)
        assert [read_frame(sock)[:2] for _ in range(3)] == [
            (FrameType.CLOCK, 1), (FrameType.INS, 2), (FrameType.CAMERA, 3)]
        drops = {kind: stream.counters[kind].drops for kind in FrameType}
        assert drops[FrameType.LIDAR] == 1 and drops[FrameType.INS] == 1
        assert stream.counters[FrameType.CLOCK].frames == 1
        sock.close()
    finally:
        stream.stop()


def test_frames_a_client_does_not_read_yet_arrive_whole_and_in_order():
    # Frames go straight into the socket while nothing waits, and queue once the socket is
    # full (the rest of a partial send first): the client that reads later gets every byte.
    stream = SensorStreamServer(agent='probe', hello={'agent': 'probe'}, time_s=lambda: 0.0)
    stream.start()
    try:
        sock = connect_stream(stream.port)
        assert read_frame(sock)[:2] == (FrameType.HELLO, 0)
        sent = []
        for k in range(1, 61):
            kind = FrameType.CAMERA if k % 3 == 0 else FrameType.CLOCK
            payload = bytes([k]) * (1_000_003 if kind == FrameType.CAMERA else 8)
            assert stream.queue(kind, payload, k / 120)
            sent.append((kind, k, payload))
        assert stream.queued_bytes > 0        # the socket filled: the rest waits in the queue
        received = [read_frame(sock) for _ in sent]
        assert [(kind, sequence, payload) for kind, sequence, _, payload in received] == sent
        assert stream.wait_drained(10.0) and stream.queued_bytes == 0
        sock.close()
    finally:
        stream.stop()


def test_the_log_lines_follow_the_seed(caplog):
    caplog.set_level(logging.INFO, logger='acres_bridge.emulator.stream_server')
    with Emulator(('polaris',), lockstep=True) as emulator:
        port = emulator.sensor_ports[0]
        sock = connect_stream(port)
        read_frame(sock)
        channel = JsonChannel(emulator.control_port)
        _step(channel, 12)
        read_until_barrier(sock)
        sock.close()
        assert emulator.streams[0].wait_disconnected(10.0)
    lines = [record.getMessage() for record in caplog.records
             if record.getMessage().startswith('ACRES_SENSOR_STREAM')]
    assert lines[0] == f'ACRES_SENSOR_STREAM_LISTENING agent=polaris port={port}'
    assert lines[1].startswith(f'ACRES_SENSOR_STREAM_CONNECTED agent=polaris port={port} '
                               'send_buffer=')
    assert lines[2] == (
        f'ACRES_SENSOR_STREAM_DISCONNECTED agent=polaris port={port} reason=peer closed '
        'queued_mb=0.0 hello=1/0.0MB/drop0 clock=12/0.0MB/drop0 ins=10/0.0MB/drop0 '
        'lidar=1/0.9MB/drop0 camera=1/1.3MB/drop0')
    assert lines[3].startswith(f'ACRES_SENSOR_STREAM_STOP agent=polaris port={port} hello=1/')


def test_the_seed_python_reader_prints_the_hello_and_a_cloud():
    with Emulator(('polaris',), sensor_ports=(5601,)) as emulator:
        if emulator.sensor_ports[0] != 5601:
            pytest.skip('port 5601 is busy')
        result = subprocess.run([sys.executable, SEED_READER], capture_output=True, text=True,
                                timeout=60, check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == 'hello polaris 1800 x 32'
    assert lines[1].startswith('lidar seq=') and 'shape=(1800, 32, 4)' in lines[1]
    assert int(lines[1].rsplit('returns=', 1)[1]) > 1000


def test_a_stream_port_in_use_is_reported_as_0():
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with Emulator(('polaris',), sensor_ports=(port,), lockstep=True) as emulator:
            assert emulator.sensor_ports == [0]
            channel = JsonChannel(emulator.control_port)
            assert channel.call('hello')['agents'][0]['sensor_stream'] == 0
            assert _step(channel, 12)['step'] == 12
