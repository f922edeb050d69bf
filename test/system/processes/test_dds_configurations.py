# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The bridge's writers deliver promptly under every Fast DDS configuration a user can reach.

Each configuration is the environment of the user's processes: the real ``acres_bridge``
executable (``python -m acres_bridge.nodes.acres_bridge``) against the in-process emulator (one
Polaris, playing at 1x), and a subscriber in a process of its own (reliable, keep-last 1000,
as deep as a recorder's), both with that environment. Two latencies per message, p50 over a
few seconds:

- the DDS leg, what the Fast DDS configuration governs (a repair that waits for a heartbeat,
  a message larger than the segment): the reception time minus the writer's source timestamp
  (both from MessageInfo, system clock). Within 2 ms for /clock, INS and camera_info
  (0.06-0.44 ms measured at load 4-6).
- end to end, as tools/benchmark.py measures it: the reception time (mapped to
  CLOCK_MONOTONIC) minus the publish time the emulator put into the frame's header, matched by
  the header stamp. It also holds a publish() that blocks in the bridge (a full data-sharing
  history: a deep keep-last /clock history delivered that way had a p50 of 0.44 s). Within
  50 ms for /clock: 0.34-0.97 ms measured on a quiet machine, 2.3-7.3 ms in CI runs with four
  test workers on two cores, where the bridge waits for a core (DDS leg 0.3-0.5 ms). INS
  (0.58-1.44 ms) and camera_info (1.2-3.4 ms: it follows its 1.4 MB camera frame over the
  socket and through the bridge, in every configuration) hold the bridge's own work, which a
  loaded machine stretches, so they are printed, not judged: the DDS leg judges their
  configuration.

The bridge's start-up log must say which configuration it found.

Run as a script, this file is the subscriber process.
"""

import os
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time

import pytest
from support import paths
from support.user_profiles import write_transports_only

from acres_bridge.emulator import stream_server
from acres_bridge.protocol.frames import FrameType
from acres_bridge.runtime import dds

# Not marked delivery: each test sets its configuration itself, so the suite's second run with
# the shipped profile in the environment would only repeat them.
pytestmark = [pytest.mark.ros]
PROFILE_NAMES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE',
                 'RMW_FASTRTPS_USE_QOS_FROM_XML', 'FASTDDS_BUILTIN_TRANSPORTS',
                 'RMW_FASTRTPS_PUBLICATION_MODE', 'SKIP_DEFAULT_XML_FILE')
# Each topic and the frame type it comes from.
TOPICS = {'/clock': FrameType.CLOCK, '/polaris/ins/imu': FrameType.INS,
          '/polaris/camera/camera_info': FrameType.CAMERA}
_STAMP = struct.Struct('<iI')   # builtin_interfaces/Time after the 4-byte CDR encapsulation
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
# A few seconds of messages at 1x: cameras run at 10 Hz, so 40 camera infos are 4 s.
CAMERA_INFOS = 40
P50_LIMIT_MS = 2.0
# End to end holds the bridge's own work, which a busy machine delays by milliseconds; the
# failures this judges (a publish held by a full history) cost tenths of a second.
END_TO_END_LIMIT_MS = 50.0
CONFIGURATIONS = ('nothing set', 'shipped profile', 'shipped profile, QoS from XML',
                  'other version profile', 'other version profile, QoS from XML',
                  'transports only', 'transports only, QoS from XML')


def _fast_dds() -> dds.FastDds:
    found = dds.find_fast_dds()
    assert found is not None, f'no librmw_fastrtps_cpp.so in {dds.library_dirs()}'
    return found


def _user_environment(configuration: str, tmp_path) -> dict[str, str]:
    """Return the Fast DDS variables a user has set in ``configuration``."""
    fast_dds = _fast_dds()
    variable = dds.profile_variable(fast_dds)
    other = dds.FastDds(2 if fast_dds.major >= 3 else 3, 0, 'the other major version')
    transports = write_transports_only(tmp_path)
    return {
        'nothing set': {},
        'shipped profile': {variable: dds.shipped_profile(fast_dds)},
        'shipped profile, QoS from XML': {variable: dds.shipped_profile(fast_dds),
                                          'RMW_FASTRTPS_USE_QOS_FROM_XML': '1'},
        'other version profile': {variable: dds.shipped_profile(other)},
        'other version profile, QoS from XML': {variable: dds.shipped_profile(other),
                                                'RMW_FASTRTPS_USE_QOS_FROM_XML': '1'},
        'transports only': {variable: transports},
        'transports only, QoS from XML': {variable: transports,
                                          'RMW_FASTRTPS_USE_QOS_FROM_XML': '1'},
    }[configuration]


def _expected_log(configuration: str, fast_dds: dds.FastDds) -> str:
    if configuration == 'nothing set':
        return f"DDS: {fast_dds}, the bridge's own settings"
    if configuration.startswith('shipped'):
        return 'as it is: it sets every writer setting the bridge needs'
    if configuration.startswith('other version profile'):
        return 'which ' + str(fast_dds) + ' cannot load'
    return "with the bridge's settings where it sets none"


def stamp_key(stamp_s: float) -> int:
    """Return the key of a stamp: microseconds, robust to the float-to-nanosecond rounding."""
    return round(stamp_s * 1e6)


class Publication:
    """The publish time of every frame the emulator queues, by frame type and stamp key."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.times_s: dict[int, dict[int, float]] = {kind: {} for kind in TOPICS.values()}
        encode_header = stream_server.encode_header

        def recording(frame_type: int, **fields) -> bytes:
            # The header the emulator sends, with the publish time that goes on the wire.
            if frame_type in self.times_s:
                self.times_s[frame_type][stamp_key(fields['stamp_s'])] = fields['publish_s']
            return encode_header(frame_type, **fields)

        monkeypatch.setattr(stream_server, 'encode_header', recording)


class Reception:
    """The subscriber process: what it received, by topic (stamp key, source and reception s)."""

    def __init__(self, env: dict[str, str]) -> None:
        # This file runs as the subscriber: its imports of support/ need test/ on the path.
        python_path = os.pathsep.join(filter(None, [str(paths.TEST), env.get('PYTHONPATH')]))
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *TOPICS],
            env={**env, 'PYTHONPATH': python_path}, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.received: dict[str, list[tuple[int, float, float]]] = {
            topic: [] for topic in TOPICS}
        self.other: list[str] = []
        self.matched = threading.Event()
        self._condition = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        # The subscriber's reception times are on the system clock; CLOCK_MONOTONIC is shared
        # by every process of the machine.
        offset_ns = time.time_ns() - time.monotonic_ns()
        for line in self.process.stdout:
            fields = line.split()
            if fields == ['matched']:
                self.matched.set()
            elif len(fields) == 4 and fields[0] in self.received and fields[3].isdigit():
                key, source_ns, received_ns = (int(field) for field in fields[1:])
                with self._condition:
                    self.received[fields[0]].append(
                        (key, (source_ns - offset_ns) / 1e9, (received_ns - offset_ns) / 1e9))
                    self._condition.notify_all()
            else:
                self.other.append(line)

    def end_to_end_ms(self, publication: Publication) -> dict[str, list[float]]:
        """Return each topic's latencies: reception minus the frame's publish time."""
        with self._condition:
            return {topic: [(received_s - publication.times_s[kind][key]) * 1e3
                            for key, _, received_s in self.received[topic]
                            if key in publication.times_s[kind]]
                    for topic, kind in TOPICS.items()}

    def dds_ms(self) -> dict[str, list[float]]:
        """Return each topic's latencies: reception minus the writer's source timestamp."""
        with self._condition:
            return {topic: [(received_s - source_s) * 1e3
                            for _, source_s, received_s in self.received[topic]]
                    for topic in TOPICS}

    def wait_for(self, topic: str, count: int, timeout_s: float) -> bool:
        with self._condition:
            return self._condition.wait_for(
                lambda: len(self.received[topic]) >= count, timeout_s)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()      # the subscriber ends when its stdin does
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class BridgeProcess:
    """The acres_bridge executable, its output read line by line."""

    def __init__(self, port: int, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'acres_bridge.nodes.acres_bridge', '--ros-args',
             '-p', f'port:={port}'], env=env, text=True, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self.configured = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if 'DDS: ' in line:
                self.configured.set()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@pytest.mark.parametrize('configuration', CONFIGURATIONS)
def test_the_bridge_delivers_promptly_and_says_how_it_is_configured(
        configuration, emulator_factory, tmp_path, monkeypatch):
    fast_dds = _fast_dds()
    publication = Publication(monkeypatch)
    emulator = emulator_factory(vehicles=('polaris',), rate=1.0)
    env = {name: value for name, value in os.environ.items() if name not in PROFILE_NAMES}
    env['PYTHONUNBUFFERED'] = '1'
    env.update(_user_environment(configuration, tmp_path))
    reception = Reception(env)
    bridge = BridgeProcess(emulator.control_port, env)
    try:
        assert bridge.configured.wait(START_TIMEOUT_S), ''.join(bridge.lines)
        assert reception.matched.wait(START_TIMEOUT_S), ''.join(reception.other)
        assert reception.wait_for('/polaris/camera/camera_info', CAMERA_INFOS,
                                  START_TIMEOUT_S), (
            {topic: len(values) for topic, values in reception.received.items()},
            ''.join(bridge.lines))
        segments = dds.shm_segments(f'/proc/{bridge.process.pid}/maps')
    finally:
        reception.stop()
        returncode = bridge.stop()
    log = ''.join(bridge.lines)
    end_to_end = reception.end_to_end_ms(publication)
    assert all(end_to_end.values()), ({topic: len(values) for topic, values in
                                       reception.received.items()}, log)
    end_to_end_p50 = {topic: statistics.median(values) for topic, values in end_to_end.items()}
    dds_p50 = {topic: statistics.median(values) for topic, values in reception.dds_ms().items()}
    print(f'\n{fast_dds}, {configuration}: p50 end to end (DDS leg) ' + ', '.join(
        f'{topic} {end_to_end_p50[topic]:.3f} ({dds_p50[topic]:.3f}) ms of '
        f'{len(end_to_end[topic])}' for topic in TOPICS))
    assert returncode == 0, log
    summary = [line for line in bridge.lines if 'DDS: ' in line]
    assert len(summary) == 1 and _expected_log(configuration, fast_dds) in summary[0], log
    assert 'did not take effect' not in log, log
    if configuration.startswith('other version profile'):
        assert f'is a profile for Fast DDS {2 if fast_dds.major >= 3 else 3}.x' in log, log
    else:
        assert 'Fix:' not in log, log     # nothing of the bridge's needs falls short
    # Every configuration gives the bridge's participant a segment that holds a cloud.
    assert max(segments, default=0) >= dds.SHM_SEGMENT_BYTES, (segments, log)
    assert all(p50 <= P50_LIMIT_MS for p50 in dds_p50.values()), (dds_p50, log)
    assert end_to_end_p50['/clock'] <= END_TO_END_LIMIT_MS, (end_to_end_p50, log)


def _subscribe(topics: list[str]) -> int:
    """
    Print ``matched`` once every topic has a publisher, then a line per message.

    Each line is ``topic stamp_key source_ns received_ns``: the header stamp in microseconds,
    the writer's source timestamp and the DDS reception time (system clock).
    """
    import rclpy
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import CameraInfo
    from sensor_msgs.msg import Imu
    types = {'/clock': Clock, '/polaris/ins/imu': Imu, '/polaris/camera/camera_info': CameraInfo}
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    rclpy.init()
    node = rclpy.create_node('dds_configuration_subscriber')

    def record(topic: str):
        def on_message(message: bytes, info) -> None:
            sec, nanosec = _STAMP.unpack_from(message, 4)
            print(f'{topic} {sec * 1_000_000 + round(nanosec / 1000)} '
                  f'{info["source_timestamp"]} {info["received_timestamp"]}', flush=True)
        return on_message

    subscriptions = [node.create_subscription(types[topic], topic, record(topic), qos,
                                              raw=True) for topic in topics]

    def matched() -> None:
        if all(subscription.get_publisher_count() for subscription in subscriptions):
            print('matched', flush=True)
            timer.cancel()

    timer = node.create_timer(0.05, matched)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    while not stop.is_set():
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(_subscribe(sys.argv[1:]))
