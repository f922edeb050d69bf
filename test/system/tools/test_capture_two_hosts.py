# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
tools/capture_two_hosts.py (acres_devkit.bench.capture_two_hosts) reads a capture of host B's
end of the link: RTPS fragments in IP fragments, repairs, NACK_FRAGs, and the header stamp of
a message's first fragment.

The capture here is written by the test (a nanosecond pcap, 256 bytes kept per packet, as the
tool's tcpdump keeps), so every time in it is known.
"""

import struct

import pytest

from acres_devkit.bench import capture_two_hosts

WRITER = bytes.fromhex('00006b03')
READER = bytes.fromhex('00006b04')
PUBLISHER, SUBSCRIBER = '10.251.7.1', '10.251.7.2'
FRAGMENT = 60_000
SIZE = 150_000                     # three fragments
STAMP_NS = 2_100_000_110


def _tool():
    return capture_two_hosts


def _rtps(*submessages: bytes) -> bytes:
    return b'RTPS' + bytes([2, 3, 1, 15]) + bytes(12) + b''.join(submessages)


def _submessage(kind: int, body: bytes, flags: int = 0x01) -> bytes:
    return struct.pack('<BBH', kind, flags, len(body)) + body


def _data_frag(sequence: int, number: int) -> bytes:
    head = struct.pack('<HH4s4siIIHHI', 0, 28, READER, WRITER, 0, sequence, number, 1,
                       FRAGMENT, SIZE)
    payload = b'\x00\x01\x00\x00' + struct.pack('<iI', *divmod(STAMP_NS, 1_000_000_000))
    return _submessage(0x16, head + payload + bytes(FRAGMENT - len(payload)))


def _nack_frag(sequence: int) -> bytes:
    return _submessage(0x12, struct.pack('<4s4siIIII', READER, WRITER, 0, sequence, 2, 1,
                                         1 << 31) + struct.pack('<I', 1))


def _ip_packets(source: str, ident: int, datagram: bytes, mtu_payload: int = 1480) -> list:
    """The IP fragments of one UDP datagram, as Ethernet frames."""
    udp = struct.pack('>HHHH', 7411, 7413, 8 + len(datagram), 0) + datagram
    address = bytes(int(octet) for octet in source.split('.'))
    other = PUBLISHER if source == SUBSCRIBER else SUBSCRIBER
    destination = bytes(int(octet) for octet in other.split('.'))
    frames = []
    for offset in range(0, len(udp), mtu_payload):
        piece = udp[offset:offset + mtu_payload]
        more = 0x2000 if offset + mtu_payload < len(udp) else 0
        ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(piece), ident, more | offset // 8,
                         64, 17, 0, address, destination) + piece
        frames.append(bytes(12) + b'\x08\x00' + ip)
    return frames


def _write_capture(path, packets: list[tuple[int, bytes]]) -> None:
    with open(path, 'wb') as stream:
        stream.write(struct.pack('<IHHiIII', 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for at, frame in packets:
            kept = frame[:256]
            stream.write(struct.pack('<IIII', at // 1_000_000_000, at % 1_000_000_000,
                                     len(kept), len(frame)) + kept)


def _datagram_at(start_ns: int, source: str, ident: int, datagram: bytes) -> list:
    """The datagram's IP fragments 1 us apart from ``start_ns``: it crossed with the last."""
    return [(start_ns + 1000 * index, frame)
            for index, frame in enumerate(_ip_packets(source, ident, datagram))]


def test_a_repaired_message_is_timed_from_its_first_fragment_to_its_last_crossing(tmp_path):
    tool = _tool()
    t0 = 1_796_549_194_000_000_000
    packets = []
    packets += _datagram_at(t0, PUBLISHER, 1, _rtps(_data_frag(7, 1)))
    packets += _datagram_at(t0 + 1_000_000, PUBLISHER, 2, _rtps(_data_frag(7, 2)))
    packets += _datagram_at(t0 + 2_000_000, PUBLISHER, 3, _rtps(_data_frag(7, 3)))
    packets += _datagram_at(t0 + 6_000_000, SUBSCRIBER, 9, _rtps(_nack_frag(7)))
    packets += _datagram_at(t0 + 6_500_000, PUBLISHER, 4, _rtps(_data_frag(7, 2)))
    path = str(tmp_path / 'host_b.pcap')
    _write_capture(path, packets)

    datagrams = list(tool.udp_datagrams(tool.pcap_packets(path)))
    assert [source for _, source, _ in datagrams] == [PUBLISHER] * 3 + [SUBSCRIBER, PUBLISHER]
    samples = tool.sample_timelines(datagrams, PUBLISHER)
    [(key, sample)] = samples.items()
    assert key == (WRITER, 7)
    assert (sample.size, sample.fragments, sample.stamp_ns) == (SIZE, 3, STAMP_NS)
    # Each datagram crossed when its last IP fragment did: 41 fragments, 1 us apart.
    crossed = 40_000
    assert sample.first == t0 + crossed
    assert sample.all_once == t0 + 2_000_000 + crossed
    assert sample.last_crossing == t0 + 6_500_000 + crossed and sample.repeats == 1
    assert sample.nacks == [t0 + 6_000_000]

    read = {(STAMP_NS, SIZE): ('/polaris/lidar/points', t0 + 6_600_000, t0 + 7_040_000)}
    lines = tool.report(samples, read)
    assert lines[0] == ('/polaris/lidar/points: 1 messages, 1 with fragments sent again; ms '
                        'after the first fragment crossed, p10 / p50 / p90:')
    assert '  stamped          6.56 / 6.56 / 6.56' in lines
    assert '  all once         2.00 / 2.00 / 2.00' in lines
    assert '  last crossing    6.50 / 6.50 / 6.50' in lines
    assert '  first NACK_FRAG  5.96 / 5.96 / 5.96' in lines
    assert '  taken            7.00 / 7.00 / 7.00' in lines


def test_a_message_missing_a_fragment_or_small_is_left_out(tmp_path):
    tool = _tool()
    t0 = 1_796_549_194_000_000_000
    small = _submessage(0x16, struct.pack('<HH4s4siIIHHI', 0, 28, READER, WRITER, 0, 8, 1, 1,
                                          1000, 1000) + bytes(1000))
    packets = _datagram_at(t0, PUBLISHER, 1, _rtps(_data_frag(7, 1)))
    packets += _datagram_at(t0 + 10_000_000, PUBLISHER, 2, _rtps(small))
    path = str(tmp_path / 'host_b.pcap')
    _write_capture(path, packets)
    samples = tool.sample_timelines(tool.udp_datagrams(tool.pcap_packets(path)), PUBLISHER)
    assert list(samples) == [(WRITER, 7)] and samples[(WRITER, 7)].all_once is None
    read = {(STAMP_NS, SIZE): ('/polaris/lidar/points', t0, t0)}
    assert tool.report(samples, read) == []


def test_a_file_that_is_not_a_nanosecond_capture_is_refused(tmp_path):
    tool = _tool()
    path = tmp_path / 'other.pcap'
    path.write_bytes(struct.pack('<I', 0xA1B2C3D4) + bytes(20))
    with pytest.raises(ValueError, match='not a little-endian nanosecond pcap file'):
        list(tool.pcap_packets(str(path)))
