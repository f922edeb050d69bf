# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""A whole session in one process: every agent's sensor path, lockstep and sim_control."""
