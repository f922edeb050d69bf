# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Lockstep from the very first step, with a process per agent (``sensor_processes:=per_agent``).

The same twenty fresh sessions and clients as test_lockstep_first_step.py, in a file of its
own so that pytest-xdist runs it beside the in-process half.
"""

import pytest
from support.first_step import assert_every_first_step_whole

pytestmark = [pytest.mark.ros, pytest.mark.delivery]


def test_a_new_client_gets_every_message_of_its_first_step_per_agent():
    assert_every_first_step_whole('per_agent')
