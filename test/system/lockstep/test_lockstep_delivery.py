# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Lockstep across processes: when a step answers, every reliable reader already has all of it.

The emulator runs two agents (Polaris, Maxxum) in lockstep; the session is the real
``acres_bridge`` executable in a process of its own, with the Fast DDS configuration of the
environment (stock by default); each subscriber is a separate process
(acres_devkit/clients/lockstep_subscriber.py) that prints when DDS received each message. This
process steps through ``step_simulation`` and ``simulate_steps`` and notes when each answer arrived
(support/lockstep_delivery.py: the session and its readers). For a message sent in fragments
(clouds, images) Fast DDS 2.x (Jazzy) stamps the reception when the last fragment arrives and 3.x
(Kilted) when the first does: the Jazzy run checks them whole, the Kilted run that they had begun
to arrive (test_lockstep_first_step and test_two_hosts check them whole on both, reading in the
stepping process).
"""

import signal
import statistics

from diagnostic_msgs.msg import DiagnosticStatus
import pytest
from simulation_interfaces.msg import Result
from support.lockstep_delivery import check_a_stalled_reader_costs_one_time_out
from support.lockstep_delivery import check_steps
from support.lockstep_delivery import SIZES
from support.lockstep_delivery import stock_heartbeat_environment

pytestmark = [pytest.mark.ros, pytest.mark.delivery]


def test_every_step_answers_after_every_reliable_reader_has_all_of_it(session_factory):
    session = session_factory()
    reader = session.add_reader('lockstep_reader')
    session.ready()
    waits = check_steps(session, reader, SIZES)
    status = session.lockstep_status(
        lambda status: status.message.startswith(f'{session.calls} steps delivered'))
    values = {value.key: value.value for value in status.values}
    assert values['late_steps'] == '0' and values['failed_steps'] == '0'
    print(f'\nlockstep: {len(SIZES)} calls, answer p50 {statistics.median(waits) * 1e3:.1f} ms '
          f'max {max(waits) * 1e3:.1f} ms; ack wait per step p50 {values["ack_wait_p50_ms"]} '
          f'ms max {values["ack_wait_max_ms"]} ms')


def test_the_answer_waits_for_acknowledgements_with_fast_dds_stock_heartbeats(
        session_factory, tmp_path):
    # A heartbeat the user's profile sets is kept: here Fast DDS's stock 3 s, so readers
    # acknowledge that late. Without the acknowledgement wait a step then answers before
    # some of its messages arrived.
    session = session_factory(bridge_environment=stock_heartbeat_environment(tmp_path))
    reader = session.add_reader('lockstep_reader')
    session.ready()
    check_steps(session, reader, SIZES[:6])


def test_a_best_effort_reader_is_not_waited_for(session_factory):
    session = session_factory()
    reliable = session.add_reader('lockstep_reader')
    stopped = session.add_reader('best_effort_reader', 'best_effort')
    session.ready()
    check_steps(session, reliable, (12,))
    # Every writer has matched the best-effort reader once it has all of that step. When it
    # has them nothing says: the answer waits for no acknowledgement of its.
    stopped.wait_counts(session.expected_by(stopped))
    stopped.process.send_signal(signal.SIGSTOP)     # it could never acknowledge anything
    for call, steps in enumerate((12, 24, 5)):
        at_ns, result, wait_s = session.step(steps, action=call == 1)
        assert result.result == Result.RESULT_OK and result.error_message == '', (
            result.error_message)
    status = session.lockstep_status(
        lambda status: status.message.startswith(f'{session.calls} steps delivered'))
    values = {value.key: value.value for value in status.values}
    assert (status.level, values['late_steps']) == (DiagnosticStatus.OK, '0')


def test_a_stalled_reader_costs_one_time_out_not_one_a_step(session_factory):
    session = session_factory(ack_timeout_s=2.0)
    check_a_stalled_reader_costs_one_time_out(session, 2.0)
