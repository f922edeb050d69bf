# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What the tests share: helpers that test modules import (``from support.ports import free_port``).

Fixtures are conftest.py's; this package holds plain functions and classes, and imports no
conftest.
"""
