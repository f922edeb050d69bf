# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A short run of tools/bench_lockstep.py's benchmark (acres_devkit.bench.lockstep): the simulator
alone, the bridge, the DDS floor and the call floor.

The harness, not the speed: no timing is asserted. Two agents, one subscriber process, ten
1-step service calls on each side, stock Fast DDS, on a DDS domain of this file's own.
"""

import pytest

from acres_devkit.environment import claim_domain_id

pytestmark = pytest.mark.ros


@pytest.fixture(scope='module')
def bench_lockstep():
    pytest.importorskip('rclpy')
    from acres_devkit.bench import lockstep
    return lockstep


def test_one_combination_measures_all_four_sides_and_where_the_time_goes(
        bench_lockstep, tmp_path):
    result = bench_lockstep.run_once(layout='in_process', agents=2, steps=1, subscribers=1,
                                     config='stock', call='service', count=10,
                                     domain_id=claim_domain_id(), log_dir=str(tmp_path))
    for side in ('raw', 'bridge', 'floor', 'call_floor'):
        figures = result[side]
        assert 0 < figures['p50_ms'] <= figures['p90_ms'], result
        assert figures['sim_s_per_s'] > 0, result
    # Every frame of both streams: a clock and a barrier per agent and call at least.
    assert result['raw']['frames'] >= 10 * 2 * 2, result
    phases = result['bridge']['phases_p50_ms']
    assert set(phases) == {*bench_lockstep.PHASES, 'answer'}, result
    assert all(phases[phase] >= 0 for phase in bench_lockstep.PHASES), result
    assert result['bridge']['late_steps'] == '0', result
    table = bench_lockstep.table([{'layout': 'in_process', 'agents': 2, 'steps': 1,
                                   'subscribers': 1, 'config': 'stock', 'call': 'service',
                                   **result}])
    assert table.count('\n') == 2 and '| in_process | 2 | 1 | 1 | stock | service | 1 |' in table
