# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The acres_sim_emulator command line: ports, loopback only, clean stops."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from support import paths
from support.emulator_probe import connect_stream
from support.emulator_probe import JsonChannel
from support.emulator_probe import read_frame
from support.emulator_probe import read_until_barrier

ROOT = str(paths.ROOT)


def _start(*args: str) -> subprocess.Popen:
    environment = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, '-m', 'acres_bridge.emulator', *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment)


def _ready(process: subprocess.Popen) -> tuple[int, list[int]]:
    """Return the control port and the sensor ports of the READY line."""
    line = process.stdout.readline().split()
    assert line[0] == 'ACRES_SIM_EMULATOR_READY', line
    fields = dict(item.split('=') for item in line[1:])
    return int(fields['control']), [int(port) for port in fields['sensors'].split(',')]


def test_the_cli_prints_its_ports_and_quits_on_set_state_3():
    process = _start('--control-port', '0', '--sensor-ports', '0,0', '--vehicles',
                     'polaris,maxxum', '--lockstep', '--seed', '7')
    try:
        control_port, sensor_ports = _ready(process)
        channel = JsonChannel(control_port)
        hello = channel.call('hello')
        assert [agent['sensor_stream'] for agent in hello['agents']] == sensor_ports
        assert (hello['seed'], hello['lockstep']) == (7, True)
        assert channel.call('set_state', state=3)['state'] == 3
        assert process.wait(30) == 0
    finally:
        process.kill()
        process.communicate()
    channel.close()


def test_the_cli_serves_a_map_without_georeference_and_core_sweeps():
    process = _start('--control-port', 'any', '--mode', 'core', '--lockstep', '--sweep',
                     '--no-georeference')
    try:
        control_port, sensor_ports = _ready(process)
        channel = JsonChannel(control_port)
        sock = connect_stream(sensor_ports[0])
        hello = json.loads(read_frame(sock)[3])
        assert hello['georeferenced'] is False
        assert channel.call('step', steps=12)['result'] == 1
        frames = read_until_barrier(sock)
        ins = [np.frombuffer(frame[3], '<f8') for frame in frames if frame[0] == 3]
        assert len(ins) == 10
        # The seed: values 0-6, 16-21, 30 and 31 are NaN; the fix status is -1.
        nan = np.r_[0:7, 16:22, 30, 31]
        assert all(np.isnan(values[nan]).all() and values[29] == -1.0 for values in ins)
        assert all(np.isfinite(np.delete(values, nan)).all() for values in ins)
        sock.close()
        channel.close()
    finally:
        process.kill()
        process.communicate()


def test_sigterm_stops_the_cli_cleanly():
    process = _start('--control-port', 'any', '--mode', 'core')
    try:
        control_port, _ = _ready(process)
        assert JsonChannel(control_port).call('hello')['source'] == 'core'
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        _, stderr = process.communicate()
    finally:
        process.kill()
    assert 'ACRES_SENSOR_STREAM_STOP agent=polaris' in stderr


@pytest.mark.parametrize('args', [('--host', '10.1.2.3'), ('--host', '0.0.0.0'),
                                  ('--mode', 'core', '--vehicles', 'maxxum')])
def test_the_cli_refuses_bad_options_with_one_line(args):
    process = _start('--control-port', '0', *args)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert len(stderr.strip().splitlines()) == 1
    assert stderr.startswith('acres_sim_emulator: ')
