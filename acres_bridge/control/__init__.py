# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""sim_control: every op of the control channel as simulation_interfaces and acres services."""
