# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""A demo of the bridge as its users see it: a live viewer and the script that runs a session."""
