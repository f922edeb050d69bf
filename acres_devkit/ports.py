# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Loopback ports for tests that must name a port before the process that binds it starts."""

import random
import socket

from acres_bridge.protocol.sockets import require_loopback

EPHEMERAL_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range'


def free_port(host: str = '127.0.0.1') -> int:
    """Return a port that was free on a loopback address a moment ago (see free_ports)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = '127.0.0.1') -> list[int]:
    """
    Return ``count`` distinct ports that were free on a loopback address a moment ago.

    None is of the kernel's ephemeral range: until the caller binds it, such a port can become
    the local end of any outgoing connection on the machine (two CI runs side by side saw
    "Address already in use" from a launch given its ports seconds before it bound them); a
    port outside it is taken only by a process that asks for that very number.
    """
    address = require_loopback(host)
    candidates = list(unassigned_ports())
    random.shuffle(candidates)
    held: list[socket.socket] = []
    try:
        for port in candidates:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((address, port))
            except OSError:
                sock.close()
                continue
            held.append(sock)
            if len(held) == count:
                return [item.getsockname()[1] for item in held]
        raise OSError(f'fewer than {count} free ports outside the ephemeral range')
    finally:
        for item in held:
            item.close()


def unassigned_ports(range_file: str = EPHEMERAL_RANGE_FILE) -> range:
    """Return the ports above the ephemeral range, or below it when that is too narrow."""
    try:
        with open(range_file, encoding='ascii') as stream:
            low, high = (int(field) for field in stream.read().split())
    except (OSError, ValueError):
        low, high = 32768, 60999           # Linux's default
    if 65535 - high >= 1000:
        return range(high + 1, 65536)
    return range(max(1024, low - 8192), low)
