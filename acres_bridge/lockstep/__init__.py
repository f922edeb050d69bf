# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Lockstep: a step answers once every message of it has reached every reliable reader."""
