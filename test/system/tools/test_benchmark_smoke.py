# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A short run of tools/benchmark.py's benchmark (acres_devkit.bench.sensor) with stock Fast DDS:
it produces figures, and the bridge loses nothing at real time.

The harness, not the speed: no timing is asserted. Emulator, sensor_bridge, floor publisher
and subscriber each run in their own process on a DDS domain of this file's own, with nothing
of Fast DDS in their environment. The floor, a plain rclpy publisher on stock Fast DDS, may
lose a sample on a busy machine (a missed first send waits 3 s for its repair); the bridge,
with its own writer settings, must not. The bridge's runs also carry the floor beside it
(``floor_beside``): its clock, INS and barrier on /floor topics in the same run.
"""

import json
import os
import sys

import pytest
from support import paths

from acres_devkit.bench.harness import WHEELS_BOOTSTRAPPED
from acres_devkit.bench.report import two_host_comparison
from acres_devkit.bench.report import write_markdown
from acres_devkit.bench.report import write_plot
from acres_devkit.bench.sensor import add_queue_drops
from acres_devkit.bench.sensor import compare_runs
from acres_devkit.bench.sensor import run_benchmark
from acres_devkit.bench.sensor import two_host_envs
from acres_devkit.bench.topics import cdr_stamp_key
from acres_devkit.bench.topics import PAYLOAD_BYTES
from acres_devkit.bench.topics import SMALL_TOPICS
from acres_devkit.bench.topics import stamp_key
from acres_devkit.bench.topics import SUBSCRIBER_VARIANTS
from acres_devkit.bench.topics import TOPICS
from acres_devkit.bench.topics import variant_label
from acres_devkit.environment import claim_domain_id

pytestmark = pytest.mark.ros


@pytest.fixture(scope='module')
def report(tmp_path_factory):
    pytest.importorskip('rclpy')
    pytest.importorskip('psutil')
    import acres_bridge.nodes.sensor_bridge  # noqa: F401  (missing: a failure, not a skip)
    work_dir = tmp_path_factory.mktemp('benchmark')
    result = run_benchmark(rates=[1.0], configs=['stock'], seconds=2.0,
                           drives=['play', 'lockstep'], domain_id=claim_domain_id(),
                           work_dir=str(work_dir), floor_beside=True, log=lambda text: None)
    return result, work_dir


def test_cdr_stamp_key_reads_the_header_stamp_of_a_serialised_message():
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Imu
    message = Imu()
    message.header.stamp.sec, message.header.stamp.nanosec = 12, 341_666_667
    message.header.frame_id = 'base_footprint'
    assert cdr_stamp_key(serialize_message(message)) == stamp_key(
        12.341666667)


def test_frames_the_simulators_queue_dropped_are_lost_on_every_topic_of_their_type():
    """A cloud the emulator never sent (its queue over 96 MiB) is a cloud the bridge lost."""
    topics = {
        'lidar/points': {'sent': 90, 'delivered': 90, 'lost': 0, 'loss_pct': 0.0},
        'camera/image_raw': {'sent': 100, 'delivered': 99, 'lost': 1, 'loss_pct': 1.0},
        'camera/camera_info': {'sent': 100, 'delivered': 100, 'lost': 0, 'loss_pct': 0.0},
        '/clock': {'sent': 1200, 'delivered': 1200, 'lost': 0, 'loss_pct': 0.0},
    }
    add_queue_drops(topics, {'4': 10, '5': 3, '2': 0})
    assert topics['lidar/points'] == {'sent': 100, 'delivered': 90, 'lost': 10,
                                      'loss_pct': 10.0, 'dropped_at_source': 10}
    assert topics['camera/image_raw'] == {'sent': 103, 'delivered': 99, 'lost': 4,
                                          'loss_pct': 3.883, 'dropped_at_source': 3}
    assert topics['camera/camera_info']['lost'] == 3
    assert 'dropped_at_source' not in topics['/clock'] and topics['/clock']['lost'] == 0


def test_a_short_run_at_real_time_measures_both_publishers_and_the_bridge_loses_nothing(report):
    result, _ = report
    runs = {(run['mode'], run['drive']): run for run in result['runs']}
    assert set(runs) == {(mode, drive) for mode in ('bridge', 'floor')
                         for drive in ('play', 'lockstep')}
    for (mode, drive), run in runs.items():
        for topic in TOPICS:
            figures = run['topics'][topic]
            if topic == 'step_barrier' and drive == 'play':
                assert figures['sent'] == 0, (mode, topic)     # barriers end step requests
                continue
            assert figures['sent'] > 0, (mode, drive, topic)
            assert figures['delivered'] > 0, (mode, drive, topic)
            assert figures['latency_p50_ms'] is not None, (mode, drive, topic)
            if mode == 'bridge':
                # The reliable keep-last-1000 subscriber gets every message of the bridge, and
                # nothing else (the floor's warm-up sample may come late, repaired).
                assert figures['lost'] == 0, (drive, topic, figures)
                assert figures['unmatched'] == 0, (drive, topic)
        # Every small topic is also read reliable and best effort, keep-last 1, 10 and 1000.
        for topic in ('/clock', 'ins/imu'):
            for reliability, depth in SUBSCRIBER_VARIANTS:
                label = variant_label(topic, reliability, depth)
                assert run['topics'][label]['sent'] == run['topics'][topic]['sent'], label
                assert run['topics'][label]['delivered'] > 0, (mode, drive, label)
        assert run['topics']['ins/imu']['sent'] == run['topics']['ins/fix']['sent']
        assert run['cpu_s_per_sim_s'] is not None and run['cpu_s_per_sim_s'] > 0
        # One message per topic and frame: the per-message figures count those of the plain
        # topics, and a MB is the cloud and image payload sent.
        assert run['messages'] == sum(run['topics'][topic]['sent'] for topic in TOPICS)
        assert run['cpu_us_per_message'] > 0 and run['cpu_ms_per_mb'] > 0, mode
        assert run['payload_mb'] == round(sum(
            run['topics'][topic]['sent'] * size
            for topic, size in PAYLOAD_BYTES.items()) / 1e6, 1)
        assert run['rss_mb_max'] is not None and run['rss_mb_max'] > 0
    # The floor beside the bridge: clock, INS and barrier only, read on its own topics.
    for drive in ('play', 'lockstep'):
        beside = runs[('bridge', drive)]['floor_beside']['topics']
        assert set(label.partition('@')[0] for label in beside) == set(SMALL_TOPICS)
        for label, figures in beside.items():
            if label.startswith('step_barrier') and drive == 'play':
                assert figures['sent'] == 0, label
                continue
            assert figures['sent'] > 0 and figures['delivered'] > 0, (drive, label)
            assert figures['latency_p50_ms'] is not None, (drive, label)
        assert runs[('bridge', drive)]['vs_floor_beside']['/clock']['added_p50_ms'] is not None
        assert 'floor_beside' not in runs[('floor', drive)]
    lockstep = runs[('bridge', 'lockstep')]
    # One burst of the floor with each step request: as many barriers as the bridge's.
    assert (lockstep['floor_beside']['topics']['step_barrier']['sent']
            == lockstep['topics']['step_barrier']['sent'])
    bridge = runs[('bridge', 'play')]
    assert bridge['vs_floor']['lidar/points']['added_p50_ms'] is not None
    assert bridge['vs_floor']['cpu_per_message_ratio'] == round(
        bridge['cpu_us_per_message'] / runs[('floor', 'play')]['cpu_us_per_message'], 2)
    assert "the bridge's own settings" in bridge['dds_line']
    assert runs[('floor', 'play')]['dds_line'] is None
    assert result['machine']['cores'] == os.cpu_count()


def test_each_run_names_the_fast_dds_its_subscriber_loaded(report):
    result, _ = report
    for run in result['runs']:
        assert run['subscriber_fast_dds'].startswith('Fast DDS ')
        assert run['subscriber_fast_dds'] == run['fast_dds']


def test_host_b_can_run_from_another_distributions_prefix(monkeypatch, tmp_path):
    """Its processes then set up their own libraries, as a Python of that prefix does."""
    monkeypatch.setenv(WHEELS_BOOTSTRAPPED, '1')
    monkeypatch.setenv('LD_LIBRARY_PATH', os.path.join(sys.prefix, 'lib'))
    other = str(tmp_path / 'other-prefix')
    env_a, env_b = two_host_envs('own', 7, None, sys.prefix, str(tmp_path), prefix_b=other)
    assert env_a['LD_LIBRARY_PATH'] == os.path.join(sys.prefix, 'lib')
    assert 'LD_LIBRARY_PATH' not in env_b and WHEELS_BOOTSTRAPPED not in env_b
    for env in (env_a, env_b):
        assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'SUBNET' and env['ROS_DOMAIN_ID'] == '7'
    assert two_host_envs('own', 7, None, sys.prefix, str(tmp_path)) == (env_a, env_a)


def test_the_two_host_profile_can_be_host_bs_alone(tmp_path):
    """``two_hosts_profile_b``: the autonomy computer loads the profile, the simulator's not."""
    from acres_bridge.runtime import dds
    profile = os.path.join(paths.ROOT,
                           'config', 'fastdds_two_hosts.xml')
    for fast_dds, variable in ((dds.FastDds(2, 14, 'jazzy'), 'FASTRTPS_DEFAULT_PROFILES_FILE'),
                               (dds.FastDds(3, 2, 'kilted'), 'FASTDDS_DEFAULT_PROFILES_FILE')):
        env_a, env_b = two_host_envs('two_hosts_profile_b', 7, fast_dds, sys.prefix,
                                     str(tmp_path))
        assert env_b[variable] == profile and os.path.isfile(profile)
        assert not any(name in env_a for name in dds.PROFILE_VARIABLES.values())
    # On both hosts: the variable of this Python's Fast DDS, as every process of the run has.
    variable = dds.profile_variable(dds.find_fast_dds())
    both = two_host_envs('two_hosts_profile', 7, dds.find_fast_dds(), sys.prefix, str(tmp_path))
    assert all(env[variable] == profile for env in both)


def test_across_the_link_a_cloud_is_judged_by_when_the_subscriber_took_it():
    """Fast DDS 3.x stamps a fragmented cloud's reception at its first fragment, 2.x its last."""

    def run(hosts: int, stamped_ms: float, taken_ms: float) -> dict:
        cloud = {'sent': 100, 'delivered': 100, 'lost': 0, 'latency_p50_ms': stamped_ms,
                 'latency_p99_ms': stamped_ms, 'take_latency_p50_ms': taken_ms}
        return {'hosts': hosts, 'mode': 'bridge', 'config': 'own', 'rate': 1.0,
                'topics': {'lidar/points': cloud}}
    one_host, across = run(1, 2.0, 4.0), run(2, 3.0, 12.0)
    across['vs_one_host'] = compare_runs(across, one_host)
    [line] = two_host_comparison([across, one_host])
    assert across['vs_one_host']['lidar/points']['take_latency_p50_ratio'] == 3.0
    assert 'cloud p50 taken 12.0 ms, x3.0 the one-host' in line
    assert '(stamped 3.0 ms, x1.5)' in line
    floor = run(2, 1.0, 9.0)
    floor['mode'] = 'floor'
    across['vs_floor'] = compare_runs(across, floor)
    [line] = two_host_comparison([across, floor, one_host])
    assert 'cloud p50 taken 12.0 ms, +3.0 over the floor across the link, x3.0' in line


def test_the_report_is_written_as_json_markdown_and_png(report):
    result, work_dir = report
    base = os.path.join(work_dir, 'smoke')
    with open(base + '.json', 'w', encoding='utf-8') as stream:
        json.dump(result, stream)
    write_markdown(result, base + '.md', 'smoke.png')
    write_plot(result, base + '.png')
    with open(base + '.md', encoding='utf-8') as stream:
        text = stream.read()
    assert f"{result['machine']['cores']} cores" in text
    assert '| stock | play | 1 | bridge |' in text and '| stock | lockstep | 1 | bridge |' in text
    assert '## Stock against profile' in text
    # The headline: one row per pair of runs, the bridge's CPU per message over the floor's.
    bridge = next(run for run in result['runs'] if run['mode'] == 'bridge'
                  and run['drive'] == 'play')
    headline = text.split('## The bridge against the floor', 1)[1].split('## ', 1)[0]
    row = next(line for line in headline.splitlines() if line.startswith('| stock | play | 1 |'))
    assert f"| {bridge['vs_floor']['cpu_per_message_ratio']} |" in row, row
    assert '| lockstep | 1 | step_barrier | best effort 1 |' in text
    assert 'lidar/points' in text
    with open(base + '.png', 'rb') as stream:
        assert stream.read(8) == b'\x89PNG\r\n\x1a\n'
