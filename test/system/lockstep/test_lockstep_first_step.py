# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Lockstep from the very first step: a new client that steps at once gets all of that step.

Twenty times over, a new session (the emulator with Polaris and Maxxum in lockstep, the real
``acres_bridge`` executable) and a new client process (acres_devkit/clients/first_step_client.py)
start side by side (support/first_step.py). The client waits only for what a client can see (the
service, the action server, a publisher for each of its readers) and steps once, by the service or
the action in turn. When the answer comes, DDS must already have delivered every message of that
step to the client's readers. The Fast DDS configuration is the environment's (stock by default;
tools/test runs the delivery tests once more with the shipped profile).

The sessions with a process per agent are test_lockstep_first_step_per_agent.py: a file runs
on one pytest-xdist worker, and the two halves, 35-50 s and 75-100 s, bounded each profile
stage of tools/test when they ran one after the other.
"""

import pytest
from support.first_step import assert_every_first_step_whole

pytestmark = [pytest.mark.ros, pytest.mark.delivery]


def test_a_new_client_gets_every_message_of_its_first_step_in_process():
    assert_every_first_step_whole('in_process')
