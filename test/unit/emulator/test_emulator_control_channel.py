# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The emulator's control channel where it must reproduce the seed's edges, over real sockets.

Reply back-pressure (a client that does not read is disconnected at 8 MiB of waiting replies,
and the reader never waits for it), set_conditions with weather but no preset, Core's
``--control-port 0`` (no channel) and an agent without a sensor stream.
"""

import contextlib
import json
import logging
import socket
import subprocess
import sys
import threading
import time

import pytest
from support.emulator_probe import JsonChannel

from acres_bridge.emulator.control_server import MAX_UNSENT_BYTES
from acres_bridge.emulator.server import Emulator

FARM_STATE = json.dumps({'op': 'farm_state', 'fields': list(range(1, 60))}).encode() + b'\n'
TIMEOUT_S = 30.0


def _ok(reply: dict) -> dict:
    assert reply['ok'] is True and reply['result'] == 1, reply
    return reply


class _Warnings(logging.Handler):
    """The emulator's 'does not read' warnings, with an event for the first."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if 'does not read' in record.getMessage():
            self.records.append(record)
            self.event.set()


@pytest.fixture
def disconnects():
    logger = logging.getLogger('acres_bridge.emulator.control_server')
    handler = _Warnings()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.WARNING)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_a_client_that_does_not_read_is_disconnected_at_8_mib_without_stopping_the_reader(
        disconnects):
    with Emulator(lockstep=True) as emulator:
        probe = JsonChannel(emulator.control_port)
        reply_bytes = len(json.dumps(_ok(probe.call('farm_state', fields=list(range(1, 60))))))
        probe.close()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # little kernel buffering
        sock.settimeout(TIMEOUT_S)
        sock.connect(('127.0.0.1', emulator.control_port))
        # Never read. About 8 MiB wait in the emulator, plus what the kernels buffer; 32 MiB of
        # replies are far beyond both. The requests are small: the kernel takes them at once.
        count = (32 << 20) // reply_bytes
        started = time.monotonic()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(FARM_STATE * count)
        assert disconnects.event.wait(TIMEOUT_S), 'the client that does not read stays'
        elapsed_s = time.monotonic() - started
        [warning] = disconnects.records
        assert MAX_UNSENT_BYTES - 2 * reply_bytes < warning.args[0] <= MAX_UNSENT_BYTES
        # The reader went on reading while the replies waited (the old writer held it for up
        # to 10 s under a lock): it took about 8 MiB of replies' worth of requests and more.
        taken = emulator.requests.count - 1
        assert taken * reply_bytes > MAX_UNSENT_BYTES
        assert elapsed_s < 10.0
        # That client's channel is closed: its buffered replies come, then the end ...
        data = b''
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(1 << 20):
                data += chunk
        sock.close()
        assert len(data) < taken * reply_bytes
        # ... and the next client is served at once.
        channel = JsonChannel(emulator.control_port)
        assert channel.read()['event'] == 'episode'
        _ok(channel.call('get_state'))
        channel.close()


def test_a_slow_reader_gets_every_reply_in_order():
    with Emulator(lockstep=True) as emulator:
        channel = JsonChannel(emulator.control_port)
        ids = [channel.send('farm_state', fields=list(range(1, 60))) for _ in range(200)]
        assert channel.read()['event'] == 'episode'
        assert [channel.reply()['id'] for _ in ids] == ids
        channel.close()


# --- set_conditions ----------------------------------------------------------------------------

def test_weather_without_a_preset_keeps_the_sky():
    with Emulator(lockstep=True) as emulator:
        channel = JsonChannel(emulator.control_port)
        first = _ok(channel.call('set_conditions', weather={'rain_mm_h': 2.5}))
        assert first['message'] == 'weather clear rain 2.5 mm/h'   # the starting sky
        _ok(channel.call('set_conditions', weather={'preset': 'storm'}))
        kept = _ok(channel.call('set_conditions', weather={'rain_mm_h': 7}))
        assert kept['message'] == 'weather storm rain 7.0 mm/h' and 'error' not in kept
        default_rain = _ok(channel.call('set_conditions', weather={}))
        assert default_rain['message'] == 'weather storm rain 20.0 mm/h'
        assert emulator.world.conditions['weather'] == {'preset': 'storm', 'rain_mm_h': 20.0}
        # A preset that is not one is still refused, naming the presets.
        refused = channel.call('set_conditions', weather={'preset': 'hail'})
        assert refused['result'] == 4 and 'clear, fair' in refused['error']
        channel.close()


# --- Core's --control-port 0 ---------------------------------------------------------------------

def test_no_channel_when_asked_for_none_and_the_world_still_runs():
    with Emulator(mode='core', control_port=None) as emulator:
        assert emulator.control_port == 0
        step = emulator.world.step
        deadline = time.monotonic() + TIMEOUT_S
        while emulator.world.step <= step + 12:    # playing: the physics goes on alone
            assert time.monotonic() < deadline
            time.sleep(0.01)


def _cli(*args: str) -> tuple[subprocess.Popen, dict[str, str]]:
    process = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.emulator', *args, '--drive', 'hold'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline().split()
    assert line and line[0] == 'ACRES_SIM_EMULATOR_READY', line
    return process, dict(item.split('=') for item in line[1:])


def _stop(process: subprocess.Popen) -> str:
    process.terminate()
    _, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, stderr
    return stderr


@pytest.mark.parametrize(('args', 'channel'), [
    (('--mode', 'core', '--control-port', '0'), False),
    (('--mode', 'core', '--control-port', 'any'), True),
    (('--mode', 'game', '--control-port', '0'), True),
    (('--mode', 'game', '--control-port', 'any'), True)])
def test_the_cli_control_port_0_closes_the_channel_in_core_mode_only(args, channel):
    process, ports = _cli(*args, '--sensor-ports', '0')
    try:
        if channel:
            assert int(ports['control']) > 0
            hello = _ok(JsonChannel(int(ports['control'])).call('hello'))
            assert hello['agents'][0]['sensor_stream'] == int(ports['sensors'])
        else:
            assert ports['control'] == '0'
            # The sensor stream is there without a channel.
            stream = socket.create_connection(('127.0.0.1', int(ports['sensors'])), TIMEOUT_S)
            assert stream.recv(4) == b'TSS1'
            stream.close()
    finally:
        stderr = _stop(process)
    assert ('ACRES_SIM_CONTROL_CLOSED' in stderr) is not channel
    assert ('ACRES_SIM_CONTROL_LISTENING' in stderr) is channel


# --- an agent without a sensor stream ----------------------------------------------------------

def test_an_agent_without_a_stream_has_sensor_stream_0_in_hello():
    with Emulator(vehicles=('polaris', 'maxxum'), sensor_ports=(None, 0),
                  lockstep=True) as emulator:
        assert emulator.sensor_ports[0] == 0 and emulator.sensor_ports[1] > 0
        channel = JsonChannel(emulator.control_port)
        agents = _ok(channel.call('hello'))['agents']
        assert [(agent['name'], agent['index'], agent['sensor_stream']) for agent in agents] == [
            ('polaris', 0, 0), ('maxxum', 1, emulator.sensor_ports[1])]
        reply = _ok(channel.call('step', steps=12))
        assert reply['barrier'] == 12
        channel.close()
