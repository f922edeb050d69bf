# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""launch_testing test of acres_session.launch.py, against the emulator: see session_checks."""

from session_checks import description
from session_checks import TestAfterShutdown  # noqa: F401 (run by launch_testing)
from session_checks import TestWhileRunning  # noqa: F401


def generate_test_description():
    """Start the emulator and the launch file with its control port."""
    return description('acres_session.launch.py', {'port': 'control_port'}, emulator=True,
                       nodes=['/acres_bridge', '/sim_control'])
