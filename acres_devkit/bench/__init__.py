# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The benchmarks: figures of the bridge against the DDS floor, not tests.

harness runs a benchmark's child processes (told what to do on their standard input) with one
DDS environment; the sensor benchmark (tools/benchmark.py) is split into topics, roles, report
and sensor; every other benchmark is a module of its own, run by its command line in tools/
(tools/bench_<module>.py) or as ``python -m acres_devkit.bench.<module>``.
"""
