# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What every executable stands on: the process, parameters, futures, cores, heap, logs and DDS.

Knows no sensor, service or step; the wings above import it, never the other way.
"""
