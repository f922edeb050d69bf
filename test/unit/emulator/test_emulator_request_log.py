# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The emulator's log of control requests: bounded in a soak, and never read in part.

The control server counts every request and keeps only the recent ones, so that a long soak
does not grow it; a reader that asks for requests already dropped is refused, not given the
rest.
"""

import json
import threading

import pytest
from support.emulator_probe import JsonChannel

from acres_bridge.emulator.control_server import KEPT_REQUESTS
from acres_bridge.emulator.control_server import RequestLog
from acres_bridge.emulator.server import Emulator

WAIT_S = 30.0


def _logged(count: int, keep: int) -> RequestLog:
    log = RequestLog(keep=keep)
    for request_id in range(count):
        log.append({'id': request_id, 'op': 'get_state'})
    return log


def test_the_log_counts_every_request_and_keeps_the_last_ones():
    log = _logged(100, keep=8)
    assert log.count == 100
    assert [request['id'] for request in log.since(92)] == list(range(92, 100))
    assert log.since(100) == []
    assert log.last() == {'id': 99, 'op': 'get_state'}


def test_requests_already_dropped_are_refused_not_skipped():
    log = _logged(100, keep=8)
    with pytest.raises(LookupError, match='requests 0 to 91 were dropped'):
        log.since()
    with pytest.raises(LookupError, match='requests 91 to 91 were dropped'):
        log.since(91)


def test_what_a_reader_is_given_are_copies():
    log = _logged(2, keep=8)
    for request in log.since():
        request.pop('id')
    log.last()['op'] = 'step'
    assert log.since() == [{'id': 0, 'op': 'get_state'}, {'id': 1, 'op': 'get_state'}]


def test_an_empty_log_has_no_last_request_and_refuses_a_size_of_nothing():
    with pytest.raises(IndexError):
        RequestLog().last()
    with pytest.raises(ValueError, match='keep must be 1 or more'):
        RequestLog(keep=0)


def test_a_waiter_wakes_when_the_count_is_reached():
    log = RequestLog(keep=8)
    assert log.wait_for_count(0, timeout_s=0.0)
    assert not log.wait_for_count(1, timeout_s=0.01)
    arrived = []
    waiter = threading.Thread(target=lambda: arrived.append(log.wait_for_count(3, WAIT_S)))
    waiter.start()
    for request_id in range(3):
        log.append({'id': request_id, 'op': 'get_state'})
    waiter.join(WAIT_S)
    assert arrived == [True]


def test_a_soak_of_the_control_channel_keeps_the_log_bounded():
    sent = KEPT_REQUESTS + 100
    with Emulator(lockstep=True).start() as emulator:
        channel = JsonChannel(emulator.control_port)
        try:
            channel.sock.sendall(b''.join(
                json.dumps({'id': request_id, 'op': 'get_state'}).encode() + b'\n'
                for request_id in range(sent)))
            assert emulator.requests.wait_for_count(sent, WAIT_S), emulator.requests.count
        finally:
            channel.close()
        kept = emulator.requests.since(sent - KEPT_REQUESTS)
        assert [request['id'] for request in kept] == list(range(100, sent))
        with pytest.raises(LookupError):
            emulator.requests.since(sent - KEPT_REQUESTS - 1)
