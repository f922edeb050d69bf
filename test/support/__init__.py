# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What the tests alone share: helpers that test modules import (``from support import waiting``).

Fixtures are conftest.py's; this package holds plain functions and classes, and imports no
conftest.
"""
