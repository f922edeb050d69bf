# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Clients a user could run, each a script started as a process of its own.

Tests and benchmarks start them by path (:data:`CLIENTS`), as a user's client is a process of
its own; a script imports only its siblings by their bare names, so it runs wherever its folder
is, with nothing of the development kit on the path. Tests also import a client's classes.
"""

from pathlib import Path

# The folder of the client scripts.
CLIENTS = Path(__file__).resolve().parent
