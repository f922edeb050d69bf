# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Tests of tools/bench_session.py's figures (acres_devkit.bench.session).

The floor beside a session and CPU per message.
"""

import pytest

from acres_devkit.bench import session


@pytest.fixture(scope='module')
def bench_session():
    return session


def test_the_floor_beside_is_matched_by_stamp_per_topic(bench_session):
    # The floor's records: (frame type, stamp key, publish time); two clock and one INS frame.
    sent = [[2, 1000, 10.0], [2, 2000, 11.0], [3, 1000, 10.0], [4, 1000, 10.0]]
    received = {'/floor/clock': [[1000, 10.002], [2001, 11.004]],
                '/floor/ins/fix': [[1000, 10.001]], '/floor/ins/imu': [[1000, 10.003]],
                '/floor/ins/odometry': [], '/floor/ground_truth/odometry': [[999, 10.001]],
                '/polaris/ins/fix': [[1000, 10.5]]}
    figures = bench_session.beside_figures(sent, received)
    # A stamp a microsecond off still matches (rounding on the two sides).
    assert figures['floor/clock']['sent'] == 2 and figures['floor/clock']['lost'] == 0
    assert figures['floor/clock']['p50_ms'] == 3.0
    assert figures['floor/ins']['sent'] == 4 and figures['floor/ins']['lost'] == 1
    assert set(figures) == {'floor/clock', 'floor/ins'}


def test_an_agents_message_whose_stamp_rounds_a_microsecond_off_is_delivered(bench_session):
    """Every 12.8 s of simulated time a /clock stamp rounds the other way in the subscriber."""
    # The emulator's records: (agent, frame type, stamp key, time queued).
    sent = [['polaris', 2, 54316669, 1.0], ['polaris', 2, 54325002, 1.1],
            ['polaris', 4, 54316669, 1.0]]
    received = {'/clock': [[54316670, 1.002], [54325002, 1.103]],
                '/polaris/lidar/points': [[54316669, 1.004]]}
    figures = bench_session.figures(['polaris'], sent, received)
    assert figures['clock']['sent'] == 2 and figures['clock']['lost'] == 0
    assert figures['clock']['p50_ms'] == 2.5
    assert figures['polaris/lidar']['lost'] == 0 and figures['polaris/ins']['lost'] == 0


def test_cpu_per_message_counts_the_bridge_processes_and_the_large_payloads(bench_session):
    result = {'clock': {'sent': 1200}, 'polaris/ins': {'sent': 4000},
              'polaris/lidar': {'sent': 100}, 'polaris/camera': {'sent': 200},
              'floor/clock': {'sent': 1200}, 'sim_s': 10.0}
    cpu = {'bridge0': {'cpu_core': 0.5}, 'bridge1': {'cpu_core': 0.25},
           'emulator': {'cpu_core': 1.0}, 'floor': {'cpu_core': 0.2}}
    figures = bench_session.cpu_per_message(result, cpu, wall_s=2.0)
    assert figures['messages'] == 5500
    assert figures['cpu_us_per_message'] == round(1e6 * 1.5 / 5500, 1)
    payload_mb = (100 * 1800 * 32 * 16 + 100 * 896 * 512 * 3) / 1e6
    assert figures['cpu_ms_per_mb'] == round(1e3 * 1.5 / payload_mb, 3)
