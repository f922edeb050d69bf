# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
A short run of tools/benchmark.py: it produces figures, and nothing is lost at real time.

The harness, not the speed: no timing is asserted. Emulator, sensor_bridge, floor publisher
and subscriber each run in their own process on a DDS domain of this file's own.
"""

import importlib.util
import json
import os
import sys

import pytest

pytestmark = pytest.mark.ros

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOMAIN_ID = 46


def _benchmark_module():
    spec = importlib.util.spec_from_file_location(
        'acres_benchmark', os.path.join(ROOT, 'tools', 'benchmark.py'))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def report(tmp_path_factory):
    pytest.importorskip('rclpy')
    pytest.importorskip('psutil')
    pytest.importorskip('acres_bridge.nodes.sensor_bridge')
    benchmark = _benchmark_module()
    work_dir = tmp_path_factory.mktemp('benchmark')
    result = benchmark.run_benchmark(rates=[1.0], configs=['xml'], seconds=2.0,
                                     domain_id=DOMAIN_ID, work_dir=str(work_dir),
                                     log=lambda text: None)
    return benchmark, result, work_dir


def test_cdr_stamp_key_reads_the_header_stamp_of_a_serialised_message():
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Imu
    benchmark = _benchmark_module()
    message = Imu()
    message.header.stamp.sec, message.header.stamp.nanosec = 12, 341_666_667
    message.header.frame_id = 'base_footprint'
    assert benchmark.cdr_stamp_key(serialize_message(message)) == benchmark.stamp_key(
        12.341666667)


def test_a_short_run_at_real_time_delivers_every_frame_of_both_publishers(report):
    benchmark, result, _ = report
    runs = {run['mode']: run for run in result['runs']}
    assert set(runs) == {'bridge', 'floor'}
    for mode, run in runs.items():
        for topic, figures in run['topics'].items():
            assert figures['sent'] > 0, (mode, topic)
            assert figures['lost'] == 0, (mode, topic, figures)
            assert figures['delivered'] == figures['sent'], (mode, topic)
            assert figures['unmatched'] == 0, (mode, topic)
            assert figures['latency_p50_ms'] is not None, (mode, topic)
        assert run['topics']['ins/imu']['sent'] == run['topics']['ins/fix']['sent']
        assert run['cpu_s_per_sim_s'] is not None and run['cpu_s_per_sim_s'] > 0
        assert run['rss_mb_max'] is not None and run['rss_mb_max'] > 0
    assert runs['bridge']['vs_floor']['lidar/points']['added_p50_ms'] is not None
    assert result['machine']['cores'] == os.cpu_count()


def test_the_report_is_written_as_json_markdown_and_png(report):
    benchmark, result, work_dir = report
    base = os.path.join(work_dir, 'smoke')
    with open(base + '.json', 'w', encoding='utf-8') as stream:
        json.dump(result, stream)
    benchmark.write_markdown(result, base + '.md', 'smoke.png')
    benchmark.write_plot(result, base + '.png')
    with open(base + '.md', encoding='utf-8') as stream:
        text = stream.read()
    assert f"{result['machine']['cores']} cores" in text
    assert '| xml | 1 | bridge |' in text
    assert 'lidar/points' in text
    with open(base + '.png', 'rb') as stream:
        assert stream.read(8) == b'\x89PNG\r\n\x1a\n'
