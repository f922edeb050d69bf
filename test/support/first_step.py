# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Fresh lockstep sessions, each with a new client that steps at once: what it had at the answer.

The session is the emulator with Polaris and Maxxum in lockstep and the real ``acres_bridge``
executable; the client is acres_devkit/clients/first_step_client.py, started beside it. Shared
by the in-process and the per-agent halves of the first-step test.
"""

import json
import signal
import subprocess
import sys
import tempfile

from support.lockstep_delivery import AGENTS
from support.lockstep_delivery import expected_counts

from acres_bridge.emulator.server import Emulator
from acres_devkit.clients import CLIENTS

FRESH_STARTS = 20
STEPS = 12
STOP_S = 30.0
CLIENT_S = 120.0


def first_step(layout: str, how: str) -> tuple[dict, dict[str, int], str]:
    """Start a session and a client together; return the client's report, the counts due."""
    emulator = Emulator(vehicles=AGENTS, lockstep=True, drive='hold').start()
    log = tempfile.TemporaryFile(mode='w+')
    bridge = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.nodes.acres_bridge', '--ros-args',
         '-p', f'port:={emulator.control_port}', '-p', f'sensor_processes:={layout}'],
        stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        expected = {topic: count for topic, count
                    in expected_counts(emulator, STEPS, 1).items() if count}
        client = subprocess.run(
            [sys.executable, str(CLIENTS / 'first_step_client.py'), how, str(STEPS),
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
