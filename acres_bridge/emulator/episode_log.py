# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The episode log of the emulator: an MCAP file of JSON messages.

The file has no chunk compression (the game's replay refuses compressed chunks). Its topics:
``/acres/session`` (the hello object), ``/acres/episode``, ``/acres/conditions`` and
``/acres/vehicle_shifts`` once at the start, ``/acres/agent_state`` once for each agent and
physics step, and ``/acres/farm_event`` when the world changes the farm. The log time of a
message is its simulation time in nanoseconds.

The writer is the Python package ``mcap``, which rosdep has no key for: a ROS distribution's
user installs it with pip. Without it only recording is refused (:data:`NO_MCAP`); the
emulator and the bridge need nothing of it.
"""

import json
import os
from typing import Any

NO_MCAP = ('recording needs the Python package mcap, which rosdep cannot install: '
           'pip install mcap')
_TOPICS = ('/acres/session', '/acres/episode', '/acres/conditions', '/acres/vehicle_shifts',
           '/acres/agent_state', '/acres/farm_event')


class EpisodeLogUnavailable(RuntimeError):
    """The MCAP writer is not installed; the message says how to install it."""


class EpisodeLog:
    """One MCAP file that is being written."""

    def __init__(self, path: str) -> None:
        try:
            from mcap.writer import CompressionType
            from mcap.writer import Writer
        except ImportError as exc:
            raise EpisodeLogUnavailable(NO_MCAP) from exc
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.path = path
        self.messages = 0
        self.first_time_s: float | None = None
        self.last_time_s: float | None = None
        self._file = open(path, 'wb')
        self._writer = Writer(self._file, compression=CompressionType.NONE)
        self._writer.start(profile='', library='acres_sim_emulator')
        schema = self._writer.register_schema(name='acres_json', encoding='jsonschema',
                                              data=b'{"type": "object"}')
        self._channels = {topic: self._writer.register_channel(topic, 'json', schema)
                          for topic in _TOPICS}

    def write(self, topic: str, time_s: float, message: dict[str, Any]) -> None:
        """Append one message at the simulation time ``time_s``."""
        stamp_ns = max(0, round(time_s * 1e9))
        data = json.dumps(message, separators=(',', ':')).encode('utf-8')
        self._writer.add_message(self._channels[topic], log_time=stamp_ns, data=data,
                                 publish_time=stamp_ns, sequence=self.messages)
        self.messages += 1
        if self.first_time_s is None:
            self.first_time_s = time_s
        self.last_time_s = time_s

    @property
    def duration_s(self) -> float:
        """The simulation time between the first and the last message."""
        if self.first_time_s is None:
            return 0.0
        return self.last_time_s - self.first_time_s

    def close(self) -> None:
        """Write the summary and close the file."""
        self._writer.finish()
        self._file.close()
