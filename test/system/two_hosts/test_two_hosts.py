# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Two machines: the simulator's host (A) and the autonomy computer (B), joined by one link.

Host A runs the emulator of one Polaris and the real ``acres_bridge`` executable; host B runs
clients (acres_devkit/clients/two_host_client.py) and the real ros2 commands, all with stock
Fast DDS and discovery on the link's subnet (acres_devkit.two_hosts). A client on A, the same
program, is the reference: what it receives is what the bridge published. Each test pulls the
link for 5 s and plugs it in again. Play runs with stock Fast DDS and the default MTU, and with
config/fastdds_two_hosts.xml on both hosts and MTU 1280; lockstep with stock Fast DDS and
both MTUs.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from simulation_interfaces.msg import Result
from support import paths
from support.lockstep_delivery import expected_counts
from support.waiting import wait_until

from acres_bridge.emulator.server import Emulator
from acres_bridge.runtime import dds
from acres_devkit.clients import CLIENTS
from acres_devkit.environment import ros_distro

pytestmark = [pytest.mark.ros]
AGENT = 'polaris'
ROOT = str(paths.ROOT)
CLIENT = str(CLIENTS / 'two_host_client.py')
START_S = 90.0
WAIT_S = 60.0
OUTAGE_S = 5.0
RECOVERY_S = 5.0
# Play: messages of a reliable reader on B over this window of simulation time.
WINDOW_S = 12.0
SENSOR_HZ = {'lidar/points': 10.0, 'camera/image_raw': 10.0, 'camera/camera_info': 10.0}
ACK_TIMEOUT_S = 2.0
# How long B's reader may take to print the messages of a step after the answer.
ARRIVAL_S = 10.0
PHYSICS_HZ = 120
MTUS = [pytest.param(None, id='mtu_default'), pytest.param(1280, id='mtu_1280')]


def start_session(pair, *, lockstep: bool, parameters: tuple[str, ...] = ()) -> None:
    """Start the emulator and the bridge on host A; return when the bridge has its stream."""
    from acres_devkit.two_hosts import start_bridge
    return start_bridge(pair.a, AGENT, start_s=START_S,
                        emulator_options=['--lockstep', '--drive', 'hold'] if lockstep else [],
                        bridge_parameters=[f'ack_timeout_s:={ACK_TIMEOUT_S}', *parameters])


def start_client(host, name: str, *options: str):
    """Start acres_devkit/clients/two_host_client.py on a host; wait until it says it is ready."""
    from acres_devkit.two_hosts import ClientLog
    log = ClientLog(host.start([sys.executable, CLIENT, name, *options], stdin=True))
    wait_until(lambda: log.update().ready, START_S, f'{name} on {host.name} ready')
    return log


def assert_running(*processes) -> None:
    """Nothing crashed: every process still runs and none printed a traceback."""
    for process in processes:
        assert process.process.poll() is None, (
            f'{process.args} ended ({process.process.poll()}):\n{process.tail()}')
        assert 'Traceback' not in process.output, process.output


def pull_the_link(pair, during=None) -> int:
    """Take the link down for OUTAGE_S (calling ``during`` meanwhile); return when it is up."""
    pair.set_link(up=False)
    down_at = time.monotonic()
    if during is not None:
        during()
    threading.Event().wait(max(OUTAGE_S - (time.monotonic() - down_at), 0.0))
    pair.set_link(up=True)
    return time.time_ns()


def missing_from(reference, log, topic: str, since_ns: int = 0) -> list[int]:
    """The stamps that the reference had and ``log`` lacks, within the span both cover."""
    theirs = [stamp for stamp in reference.stamps(topic) if stamp >= since_ns]
    ours = set(stamp for stamp in log.stamps(topic) if stamp >= since_ns)
    if not theirs or not ours:
        return theirs
    low, high = min(ours), max(ours)
    return [stamp for stamp in theirs if low <= stamp <= high and stamp not in ours]


def two_hosts_profile() -> dict[str, str]:
    """The environment that loads config/fastdds_two_hosts.xml (4 MiB socket buffers)."""
    profile = os.path.join(ROOT, 'config', 'fastdds_two_hosts.xml')
    return {dds.profile_variable(dds.find_fast_dds()): profile}


# Stock Fast DDS on both hosts, and the two-host profile on both with MTU 1280. With stock
# socket buffers a subscriber's host loses part of the clouds and images at 1x across the link
# (its 208 KiB receive buffer overflows; docs/two_hosts.md), so the test judges loss
# only with the profile, which the README tells users to load on both hosts.
PLAY_CASES = [pytest.param(None, False, id='stock'),
              pytest.param(1280, True, id='two_hosts_profile-mtu_1280')]
# Where loss is judged, the bridge's writers keep 5 s of clouds and images (users set this
# with the same QoS override; docs/ros_interface.md) instead of 1 s: a keep-last writer drops
# what a reader has not acknowledged within its depth. With depth 10, CI (both distributions'
# suites at once, on 2 cores) lost 5 clouds and 5 images on B once (stop 40), most likely a host
# B starved of CPU for over a second; not seen in 10 runs on a quieter machine. What the profile
# is judged by is the link: that no datagram is dropped for good and every repair lands.
JUDGED_DEPTH = 50
JUDGED_DEPTH_PARAMETERS = [f'qos_overrides./{AGENT}/{topic}.publisher.depth:={JUDGED_DEPTH}'
                           for topic in ('lidar/points', 'camera/image_raw')]


@pytest.mark.ros2_tools
@pytest.mark.parametrize(('mtu', 'profile'), PLAY_CASES)
def test_every_topic_of_a_polaris_reaches_host_b_in_play(two_hosts, mtu, profile):
    pair = two_hosts(mtu, two_hosts_profile() if profile else None)
    emulator, bridge = start_session(
        pair, lockstep=False, parameters=tuple(JUDGED_DEPTH_PARAMETERS) if profile else ())
    reference = start_client(pair.a, 'host_a_reader', '--read', AGENT)
    reader = start_client(pair.b, 'host_b_reader', '--read', AGENT)
    cloud = f'/{AGENT}/lidar/points'

    # A late joiner on B still gets /tf_static; `ros2 topic hz` measures a rate across.
    code, output = pair.b.run(['ros2', 'topic', 'echo', '--once', '--qos-durability',
                               'transient_local', '--qos-reliability', 'reliable',
                               '/tf_static', 'tf2_msgs/msg/TFMessage'], WAIT_S)
    assert code == 0 and 'child_frame_id: base_link' in output, output
    hz = pair.b.start(['ros2', 'topic', 'hz', f'/{AGENT}/ins/imu', '--window', '50'])
    hz.wait_for(r'average rate: \d', WAIT_S)

    def window_covered(log) -> bool:
        stamps = log.stamps(cloud)
        return bool(stamps) and stamps[-1] - stamps[0] >= WINDOW_S * 1e9
    drops_before = pair.b.receive_drops()
    wait_until(lambda: window_covered(reader), WAIT_S + WINDOW_S, f'{WINDOW_S} s of clouds')
    drops = {name: count - drops_before[name] for name, count in pair.b.receive_drops().items()}
    assert set(reader.update().messages) == set(reference.update().messages), (
        f'topics on B {sorted(reader.messages)}, on A {sorted(reference.messages)}')
    missing = {topic: missing_from(reference, reader, topic) for topic in reference.messages}
    lost = {topic: len(stamps) for topic, stamps in missing.items()}
    print(f'\nacross the link ({"two-host profile" if profile else "stock"}, MTU {pair.mtu()}),'
          f' lost of {WINDOW_S:g} s at 1x: {lost}; host B\'s kernel dropped {drops}')
    if profile:
        seconds = {topic: [stamp * 1e-9 for stamp in stamps]
                   for topic, stamps in missing.items() if stamps}
        assert not any(lost.values()), (
            f'host B lost messages: {lost}; their stamps, s: {seconds}; host B\'s kernel '
            f'dropped {drops} while its reader took the window')
        for name, hz_due in SENSOR_HZ.items():
            stamps = sorted(reader.stamps(f'/{AGENT}/{name}'))
            rate = (len(stamps) - 1) / ((stamps[-1] - stamps[0]) * 1e-9)
            assert rate >= 0.95 * hz_due, f'/{AGENT}/{name}: {rate:.2f} Hz of {hz_due:g}'

    up_ns = pull_the_link(pair)
    topics = [topic for topic in reference.messages if not topic.endswith('step_barrier')]

    def resumed() -> dict[str, int]:
        first = {}
        for topic in topics:
            after = [received for received, _, _ in reader.update().messages[topic]
                     if received > up_ns]
            if not after:
                return {}
            first[topic] = min(after)
        return first
    first = wait_until(resumed, WAIT_S, 'every topic on host B after the link came back')
    late = {topic: f'{(at - up_ns) * 1e-9:.2f} s' for topic, at in first.items()
            if at - up_ns > RECOVERY_S * 1e9}
    assert not late, f'host B resumed later than {RECOVERY_S} s after the link came back: {late}'
    assert_running(emulator, bridge, reference.process, reader.process, hz)
    assert pair.mtu() == (mtu or 1500)


# How long host B's reader is stopped (SIGSTOP) in the test of the depth rule: more than the 1 s
# of images the bridge keeps by default, less than the 5 s of clouds it keeps there.
STOPPED_S = 2.5


def test_a_stopped_reader_on_host_b_keeps_what_the_writers_depth_outlasts(two_hosts):
    """
    The rule behind JUDGED_DEPTH, as a user meets it: a reliable keep-last writer drops what a
    reader has not acknowledged within its depth. Host B's reader stops answering (its process
    stopped) for STOPPED_S: it gets every cloud (kept 5 s by the override) and loses images
    (kept 1 s, the default).
    """
    pair = two_hosts(None, two_hosts_profile())
    start_session(pair, lockstep=False, parameters=(JUDGED_DEPTH_PARAMETERS[0],))
    reference = start_client(pair.a, 'host_a_reader', '--read', AGENT)
    reader = start_client(pair.b, 'host_b_reader', '--read', AGENT)
    cloud, image = f'/{AGENT}/lidar/points', f'/{AGENT}/camera/image_raw'
    wait_until(lambda: len(reader.stamps(cloud)) >= 10 and len(reader.stamps(image)) >= 10,
               WAIT_S, 'clouds and images on host B')
    group = reader.process.process.pid
    os.killpg(group, signal.SIGSTOP)
    try:
        threading.Event().wait(STOPPED_S)
        stopped_until = max(reference.stamps(cloud))
    finally:
        os.killpg(group, signal.SIGCONT)
    # Until B has clouds from a second after its stop, on both sides of the gap.
    wait_until(lambda: max(reader.stamps(cloud)) >= stopped_until + 1e9, WAIT_S,
               'clouds on host B after its reader was stopped')
    lost_clouds = missing_from(reference, reader, cloud)
    lost_images = missing_from(reference, reader, image)
    assert not lost_clouds, f'clouds lost within their writer\'s 5 s: {lost_clouds}'
    assert lost_images, 'no image lost, although the reader was stopped beyond their 1 s'
    assert_running(reference.process, reader.process)


def step_window(t0_ns: float, before: int, after: int) -> tuple[float, float]:
    """The stamps of the physics steps after ``before`` up to ``after`` (half a step slack)."""
    dt_ns = 1e9 / PHYSICS_HZ
    return t0_ns + (before + 0.5) * dt_ns, t0_ns + (after + 0.5) * dt_ns


def step_counts(model: Emulator, before: int, after: int) -> dict[str, int]:
    """How many messages of each topic the steps after ``before`` up to ``after`` bring."""
    end, start = expected_counts(model, after, 1), expected_counts(model, before, 0)
    return {topic: end[topic] - start[topic] for topic in end if end[topic] - start[topic]}


class Stepping:
    """Steps taken by clients on either host, and what host B's reader had at each answer."""

    def __init__(self, reader) -> None:
        self.reader = reader
        self.model = Emulator(vehicles=(AGENT,), lockstep=True, drive='hold')
        self.total = 0
        self.t0_ns: float | None = None

    def step(self, client, how: str, steps: int) -> dict:
        """Step through one client; return its answer with the window of these steps."""
        count = len(client.update().answers)
        client.process.send(f'{how} {steps}')
        wait_until(lambda: len(client.update().answers) > count, WAIT_S + 2 * ACK_TIMEOUT_S,
                   f'the answer to {how} {steps}')
        answer = dict(client.answers[count], before=self.total, after=self.total + steps)
        self.total += steps
        return answer

    def missing(self, answer: dict) -> dict[str, str]:
        """
        What host B's reader lacked of the answer's steps when the answer came.

        The client takes what its readers hold before it prints an answer, as a lockstep client
        reads a step's messages after the answer: a message it took by then was there. What
        arrives later is printed later: first wait (ARRIVAL_S at most) until every message due
        is printed, then count those taken by the answer. (DDS's reception stamp would not do:
        Fast DDS 3.x stamps a message sent in fragments when its first fragment arrives.)
        """
        barrier = f'/{AGENT}/step_barrier'
        if self.t0_ns is None:
            wait_until(lambda: self.reader.stamps(barrier), WAIT_S, 'the first barrier on B')
            self.t0_ns = self.reader.stamps(barrier)[0] - answer['after'] * 1e9 / PHYSICS_HZ
        low, high = step_window(self.t0_ns, answer['before'], answer['after'])
        due = step_counts(self.model, answer['before'], answer['after'])

        def in_window(topic: str) -> list[int]:
            return [taken for _, stamp, taken in self.reader.messages.get(topic, [])
                    if low < stamp < high]

        def printed() -> bool:
            self.reader.update()
            return all(len(in_window(topic)) >= count for topic, count in due.items())
        try:
            wait_until(printed, ARRIVAL_S, 'every message of the steps on B')
        except AssertionError:
            pass            # what is missing is in the report
        missing = {}
        for topic, count in due.items():
            window = in_window(topic)
            had = sum(1 for taken in window if taken <= answer['at_ns'])
            if had != count:
                late_ms = [round((taken - answer['at_ns']) * 1e-6, 1) for taken in window
                           if taken > answer['at_ns']]
                missing[topic] = f'{had} of {count} (later, ms after the answer: {late_ms})'
        return missing


def assert_complete(stepping: Stepping, answer: dict, what: str) -> None:
    assert answer['result'] == Result.RESULT_OK and answer['message'] == '', (what, answer)
    missing = stepping.missing(answer)
    assert not missing, f'{what}: at the answer host B had {missing}'


@pytest.mark.ros2_tools
@pytest.mark.parametrize('mtu', MTUS)
def test_lockstep_from_host_b_from_its_first_step_and_across_an_outage(two_hosts, mtu):
    pair = two_hosts(mtu)
    emulator, bridge = start_session(pair, lockstep=True)
    client = start_client(pair.b, 'host_b_client', '--read', AGENT, '--step')
    stepping = Stepping(client)
    for call, steps in enumerate((12, 5, 24, 1)):
        how = 'action' if call % 2 else 'service'
        assert_complete(stepping, stepping.step(client, how, steps), f'call {call + 1} ({how})')

    # The real ros2 commands on B: a service of sim_control and the action (steps too).
    # ``ros2 service call`` of the ros-tooling wheels needs Kilted's rclpy (test_ros2_cli):
    # on Jazzy, B lists the service with its type instead.
    if ros_distro() == 'jazzy':
        code, output = pair.b.run(['ros2', 'service', 'list', '-t', '--no-daemon',
                                   '--spin-time', '5'], WAIT_S)
        assert code == 0 and ('/get_simulation_state [simulation_interfaces/srv/'
                              'GetSimulationState]') in output, output
    else:
        code, output = pair.b.run(['ros2', 'service', 'call', '/get_simulation_state',
                                   'simulation_interfaces/srv/GetSimulationState'], WAIT_S)
        assert code == 0 and 'state=' in output and 'result=' in output, output
    code, output = pair.b.run(['ros2', 'action', 'send_goal', '/simulate_steps',
                               'simulation_interfaces/action/SimulateSteps', '{steps: 12}'],
                              WAIT_S)
    assert code == 0 and 'SUCCEEDED' in output, output
    stepping.total += 12

    # The link goes down: the first step from a client on A answers after the time-out, naming
    # B's reader; the next is not held up by it and says so. Once the link is back and B's
    # reader has caught up, the steps of B's client are complete again.
    driver = start_client(pair.a, 'host_a_client', '--step')
    during = []

    def step_from_a() -> None:
        for how in ('service', 'action'):
            during.append(stepping.step(driver, how, 12))
    up_ns = pull_the_link(pair, step_from_a)
    for answer in during:
        assert answer['result'] == Result.RESULT_OK, answer
        assert '/host_b_client' in answer['message'], answer
    assert 'not acknowledged in time' in during[0]['message'], during[0]
    assert during[0]['wait_s'] >= ACK_TIMEOUT_S, during[0]
    assert 'not waited for until a lagging reader catches up' in during[1]['message'], during[1]
    assert during[1]['wait_s'] < ACK_TIMEOUT_S, during[1]
    caught_up = stepping.step(client, 'service', 1)
    while caught_up['message']:     # B's reader takes what it missed: then it counts again
        assert 'not waited for until a lagging reader catches up' in caught_up['message'], (
            caught_up)
        assert (caught_up['at_ns'] - up_ns) * 1e-9 <= RECOVERY_S + ACK_TIMEOUT_S, caught_up
        caught_up = stepping.step(client, 'service', 1)
    answers = [stepping.step(client, how, steps)
               for how, steps in (('service', 12), ('action', 12), ('service', 7))]
    assert_running(emulator, bridge, client.process, driver.process)
    for answer in answers:
        assert answer['result'] == Result.RESULT_OK and answer['message'] == '', answer
    incomplete = {f'step {answer["after"]}': missing for answer in answers
                  if (missing := stepping.missing(answer))}
    assert not incomplete, (f'after the outage, at the answer host B had {incomplete}\n'
                            f'the bridge:\n{bridge.tail(20)}')
    assert_running(emulator, bridge, client.process, driver.process)


def test_a_killed_run_s_namespaces_are_removed_at_the_next_start(two_hosts):
    from acres_devkit import two_hosts as hosts
    dead = subprocess.Popen(['true'])
    dead.wait()
    stale = f'{hosts.PREFIX}-{dead.pid}-0-a'
    subprocess.run(['ip', 'netns', 'add', stale], check=True)
    try:
        assert stale in hosts.namespaces()
        pair = two_hosts()          # a pair of this run, alive: it must stay
        # Another test run beside this one (tools/test runs Kilted and Jazzy side by side) may
        # remove the stale namespace first: what counts is that it is gone after the call.
        removed = hosts.remove_stale()
        assert stale not in hosts.namespaces(), removed
        assert pair.a.name not in removed and pair.b.name not in removed, removed
        assert pair.a.name in hosts.namespaces() and pair.b.name in hosts.namespaces()
    finally:
        subprocess.run(['ip', 'netns', 'delete', stale], capture_output=True)
