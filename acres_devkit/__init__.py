# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The development kit of acres_bridge's tests, benchmarks and demo: what tools/ and test/ share.

A domain ID of a run's own, DDS discovery kept on this host, free ports, commands run as a user
runs them, two hosts in network namespaces, launch stops, and the benchmark package
(:mod:`acres_devkit.bench`). It sits beside the package, not in it: setup.py leaves it out and
colcon does not install it; tools/bootstrap.py makes it importable from the prefix.
"""
