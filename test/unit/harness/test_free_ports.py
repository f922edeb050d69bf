# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Test ports: free, distinct, and never ones the kernel hands out by itself."""

import socket

from acres_devkit.ports import free_port
from acres_devkit.ports import free_ports
from acres_devkit.ports import unassigned_ports


def test_free_ports_are_distinct_bindable_and_above_the_ephemeral_range():
    with open('/proc/sys/net/ipv4/ip_local_port_range', encoding='ascii') as stream:
        low, high = (int(field) for field in stream.read().split())
    ports = free_ports(3) + [free_port()]
    assert len(set(ports[:3])) == 3
    assert all(not low <= port <= high for port in ports)
    for port in ports:
        with socket.create_server(('127.0.0.1', port)):
            pass


def test_a_port_in_use_is_never_given():
    used = [socket.create_server(('127.0.0.1', port)) for port in free_ports(2)]
    try:
        taken = {sock.getsockname()[1] for sock in used}
        for _ in range(20):
            assert not taken & set(free_ports(3))
    finally:
        for sock in used:
            sock.close()


def test_below_the_range_when_nothing_is_left_above_it(tmp_path):
    wide = tmp_path / 'ip_local_port_range'
    wide.write_text('32768\t65000\n')
    assert unassigned_ports(str(wide)) == range(24576, 32768)
    wide.write_text('32768\t60999\n')
    assert unassigned_ports(str(wide)) == range(61000, 65536)
    assert unassigned_ports(str(tmp_path / 'missing')) == range(61000, 65536)
