# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Control-channel replies -> service responses: pure functions, by field name, both shapes."""
