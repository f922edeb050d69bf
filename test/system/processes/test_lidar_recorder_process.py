# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The lidar_recorder executable in its own process: Ctrl-C, a crash, a restart.

The emulator (lockstep) and the sensor bridge run in the test's process and Context; the
recorder is the installed executable with ``commit_interval_s`` 0.5, so the test can watch
scans.npy grow. Ctrl-C (SIGINT) must commit everything the recorder took; SIGKILL must leave a
sequence the reader opens, holding only committed scans; a restart refuses (``existing``
refuse) or appends, and never overwrites.
"""

import os
from pathlib import Path
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from rclpy.parameter import Parameter
from support.emulator_probe import JsonChannel
from support.paths import ROOT
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_until
from support.wire_tap import WireTap

from acres_bridge.dataset import LidarSet
from acres_bridge.dataset.calibration import lens_centres
from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import RANGE_STEP_M
from acres_bridge.protocol.frames import LidarFrame
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros
TIMEOUT_S = 60.0
INSTALLED = Path(sys.executable).parent.parent / 'lib' / 'acres_bridge' / 'lidar_recorder'


def _command() -> list[str]:
    if INSTALLED.is_file():
        return [sys.executable, str(INSTALLED)]
    return [sys.executable, '-m', 'acres_bridge.nodes.lidar_recorder']


class Recorder:
    """The executable, with its output in a file."""

    def __init__(self, root: Path, log: Path, **parameters: str) -> None:
        arguments = ['--ros-args', '-r', '__ns:=/polaris', '-p', f'root:={root}',
                     '-p', 'set:=proc', '-p', 'sequence:=run', '-p', 'commit_interval_s:=0.5']
        for name, value in parameters.items():
            arguments += ['-p', f'{name}:={value}']
        self.log = log
        self._out = open(log, 'ab')             # noqa: SIM115 (closed in wait)
        env = {**os.environ, 'PYTHONPATH': os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get('PYTHONPATH')])), 'PYTHONUNBUFFERED': '1'}
        self.process = subprocess.Popen(_command() + arguments, cwd=ROOT, env=env,
                                        stdout=self._out, stderr=subprocess.STDOUT)

    def stop(self, signum: int) -> int:
        self.process.send_signal(signum)
        return self.wait()

    def wait(self) -> int:
        try:
            return self.process.wait(TIMEOUT_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._out.close()

    def output(self) -> str:
        return self.log.read_text(errors='replace')


@pytest.fixture
def session(ros_context, spinning, emulator_factory):
    emulator = emulator_factory(lockstep=True)
    tap = WireTap(emulator.sensor_ports[0])
    bridge = SensorBridgeNode(context=ros_context, namespace='polaris',
                              parameter_overrides=[
                                  Parameter('port', value=tap.port),
                                  Parameter('reconnect_s', value=0.1)])
    spinning.add(bridge)
    wait_until(lambda: streaming(bridge.bridge), TIMEOUT_S, 'the Hello')
    channel = JsonChannel(emulator.control_port)
    started: list[Recorder] = []
    yield tap, channel, bridge, started
    for recorder in started:
        if recorder.process.poll() is None:
            recorder.stop(signal.SIGKILL)
    channel.close()
    spinning.shutdown()
    bridge.destroy_node()
    tap.close()


def _rows(folder: Path) -> int:
    try:
        return len(np.load(folder / 'scans.npy'))
    except (FileNotFoundError, ValueError, OSError):
        return -1


def _subscribed(bridge, count: int = 1) -> None:
    publisher = bridge.bridge.publishers['lidar/points']
    wait_until(lambda: publisher.get_subscription_count() == count, TIMEOUT_S,
               f'{count} subscription to the clouds')


def _check_scans(folder: Path, tap: WireTap) -> LidarSet:
    """Every stored scan is the frame of its stamp, within half a range step."""
    sequence = LidarSet.open('proc', root=folder.parents[1])['run']
    frames = {round(frame.header.stamp_s * 1e9): frame for frame in tap.of(LidarFrame)}
    lens = lens_centres(1800, 0.035)
    for k, row in enumerate(sequence.scans):
        frame = frames[int(row['stamp_ns'])]
        points = np.frombuffer(frame.points, '<f4').reshape(frame.columns, frame.rings, 4)
        source = points[..., :3].transpose(1, 0, 2).astype(np.float64)
        returns = np.isfinite(source).all(axis=-1)
        raw = sequence.range_raw(k)
        assert np.array_equal(raw > 0, returns)
        error = np.abs(raw * RANGE_STEP_M - np.linalg.norm(source - lens, axis=-1))[returns]
        assert error.max() <= RANGE_STEP_M / 2
    return sequence


def _step(channel: JsonChannel, scans: int) -> None:
    for _ in range(scans // 4):
        reply = channel.call('step', steps=48)
        assert reply['result'] == 1, reply


def _step_until(channel: JsonChannel, folder: Path, rows: int,
                recorder: 'Recorder | None' = None) -> int:
    """
    Step 4 scans at a time until scans.npy holds at least ``rows`` rows; return them.

    A killed recorder's subscription stays in the graph until DDS notices, so the new one's
    matching cannot be told apart from it: the clouds published before it matched are not
    its, and it records from the first one it gets.
    """
    for _ in range(20):
        _step(channel, 4)
        try:
            wait_until(lambda: _rows(folder) >= rows, 3.0, f'{rows} committed scans')
            return _rows(folder)
        except AssertionError:
            continue
    output = '' if recorder is None else recorder.output()[-3000:]
    raise AssertionError(f'scans.npy never reached {rows} rows (has {_rows(folder)}); the '
                         f'recorder said:\n{output}')


def test_ctrl_c_commits_a_crash_keeps_what_was_committed_and_a_restart_appends(
        session, tmp_path):
    tap, channel, bridge, started = session
    folder = tmp_path / 'proc' / 'run'

    # Run 1: at least 20 scans, then Ctrl-C: every scan the recorder took is there (its last
    # line says how many), nothing half-written.
    first = Recorder(tmp_path, tmp_path / 'first.log')
    started.append(first)
    _subscribed(bridge)
    _step_until(channel, folder, 20, first)
    assert first.stop(signal.SIGINT) == 0, first.output()
    took = int(re.search(r'(\d+) scans in ', first.output()).group(1))
    assert not list(folder.glob('.*.tmp'))
    sequence = _check_scans(folder, tap)
    assert len(sequence) == took >= 20
    assert np.all(np.diff(sequence.scans['source_index'].astype(np.int64)) > 0)
    before = {path.name: path.read_bytes() for path in folder.iterdir()}

    # A restart that must not touch an existing sequence exits 2 and changes nothing.
    refused = Recorder(tmp_path, tmp_path / 'refused.log', existing='refuse')
    started.append(refused)
    assert refused.wait() == 2, refused.output()
    assert 'exists' in refused.output()
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before

    # Run 2 appends; a SIGKILL after a commit keeps the committed scans only.
    second = Recorder(tmp_path, tmp_path / 'second.log')
    started.append(second)
    committed = _step_until(channel, folder, took + 12, second)
    assert second.stop(signal.SIGKILL) == -signal.SIGKILL
    sequence = _check_scans(folder, tap)
    committed = len(sequence)
    assert committed >= took + 12
    indices = sequence.scans['source_index'].astype(np.int64)
    assert np.all(np.diff(indices) > 0)
    assert sequence.meta['counts']['runs'] == 2

    # Run 3 appends after the crash: the short shard goes on, stale temporaries go.
    (folder / '.range-00000.npy.deadbeef.tmp').write_bytes(b'left by a killed writer')
    third = Recorder(tmp_path, tmp_path / 'third.log')
    started.append(third)
    _step_until(channel, folder, committed + 4, third)
    assert third.stop(signal.SIGINT) == 0, third.output()
    assert not list(folder.glob('.*.tmp'))
    sequence = _check_scans(folder, tap)
    assert len(sequence) >= committed + 4 and sequence.meta['counts']['runs'] == 3
    assert np.load(folder / 'range-00000.npy').shape == (len(sequence), 32, 1800)
    assert np.all(np.diff(sequence.scans['stamp_ns']) > 0)


def test_a_bad_parameter_exits_2_with_one_line(tmp_path):
    done = subprocess.run(_command() + ['--ros-args', '-p', 'split:=training',
                                        '-p', f'root:={tmp_path}'],
                          cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith('lidar_recorder: parameter split:'), done.stderr
    assert not any(tmp_path.iterdir())
    with pytest.raises(DatasetError):
        LidarSet.open('bridge', root=tmp_path)
