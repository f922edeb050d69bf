# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Lockstep from the very first step: a new client that steps at once gets all of that step.

Twenty times over, a new session (the emulator with Polaris and Maxxum in lockstep, the real
``acres_bridge`` executable) and a new client process (test/first_step_client.py) start side
by side. The client waits only for what a client can see (the service, the action server, a
publisher for each of its readers) and steps once, by the service or the action in turn.
When the answer comes, DDS must already have delivered every message of that step to the
client's readers. The Fast DDS configuration is the environment's (stock by default; tools/test
runs the delivery tests once more with the shipped profile).

The sessions with a process per agent are test_lockstep_first_step_per_agent.py: a file runs
on one pytest-xdist worker, and the two halves, 35-50 s and 75-100 s, bounded each profile
stage of tools/test when they ran one after the other.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile

import pytest
from test_lockstep_delivery import AGENTS
from test_lockstep_delivery import expected_counts

from acres_bridge.emulator.server import Emulator

pytestmark = [pytest.mark.ros, pytest.mark.delivery]
FRESH_STARTS = 20
STEPS = 12
STOP_S = 30.0
CLIENT_S = 120.0
HERE = os.path.dirname(os.path.abspath(__file__))


def first_step(layout: str, how: str) -> tuple[dict, dict[str, int], str]:
    """Start a session and a client together; return the client's report, the counts due."""
    emulator = Emulator(vehicles=AGENTS, lockstep=True, drive='hold').start()
    log = tempfile.TemporaryFile(mode='w+')
    bridge = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.nodes.bridge', '--ros-args',
         '-p', f'port:={emulator.control_port}', '-p', f'sensor_processes:={layout}'],
        stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        expected = {topic: count for topic, count
                    in expected_counts(emulator, STEPS, 1).items() if count}
        client = subprocess.run(
            [sys.executable, os.path.join(HERE, 'first_step_client.py'), how, str(STEPS),
             json.dumps(expected), *AGENTS],
            capture_output=True, text=True, timeout=CLIENT_S)
        lines = client.stdout.strip().splitlines()
        report = json.loads(lines[-1]) if lines else {'error': client.stderr[-2000:]}
    finally:
        bridge.send_signal(signal.SIGINT)
        try:
            bridge.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            bridge.kill()
            bridge.wait()
        emulator.stop()
        log.seek(0)
        output = log.read()
        log.close()
    return report, expected, output


def assert_every_first_step_whole(layout: str) -> None:
    """Start FRESH_STARTS sessions of ``layout``, each with a new client: none may lose a thing."""
    failures = []
    for start in range(FRESH_STARTS):
        how = 'action' if start % 2 else 'service'
        report, expected, output = first_step(layout, how)
        if 'error' in report:
            failures.append(f'start {start + 1} ({how}): {report["error"]}\n{output}')
            continue
        missing = {topic: f'{report["at_answer"].get(topic, 0)} of {count}'
                   for topic, count in expected.items()
                   if report['at_answer'].get(topic, 0) != count}
        if report['result'] != 1 or report['message'] or missing:
            failures.append(f'start {start + 1} ({how}): result {report["result"]} '
                            f'{report["message"]!r}, at the answer the client had {missing}'
                            f'\n{output}')
    assert not failures, (f'{len(failures)} of {FRESH_STARTS} fresh starts lost part of the '
                          f'first step:\n' + '\n'.join(failures[:3]))


def test_a_new_client_gets_every_message_of_its_first_step_in_process():
    assert_every_first_step_whole('in_process')
