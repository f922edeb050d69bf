# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The fixture of the lockstep delivery tests of this folder: sessions of the real executable.

In process (test_lockstep_delivery) and per agent (test_sensor_processes), the same session
(support/lockstep_delivery.py) checks the same rule; each session is closed after its test.
"""

from collections.abc import Callable
from collections.abc import Iterator

import pytest
from support.lockstep_delivery import AGENTS
from support.lockstep_delivery import Session


@pytest.fixture
def session_factory(ros_context, emulator_factory) -> Iterator[Callable[..., Session]]:
    """Give a function that starts a lockstep session of two agents; close them after."""
    sessions = []

    def start(ack_timeout_s: float = 5.0, bridge_environment=None,
              bridge_arguments: tuple[str, ...] = ()) -> Session:
        emulator = emulator_factory(vehicles=AGENTS, lockstep=True, drive='hold')
        session = Session(emulator, ros_context, ack_timeout_s, bridge_environment,
                          bridge_arguments)
        sessions.append(session)
        return session

    try:
        yield start
    finally:
        for session in sessions:
            session.close()
