# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Where a cloud's and an image's time goes across the link, from a capture on host B's end.

Root, and tcpdump on the PATH (not part of the set-up: ``apt-get install tcpdump``). Two hosts
as tools/bench_two_hosts.py makes them: host A runs the emulator of one Polaris at 1x and the
``acres_bridge`` executable; host B runs a reader of the Polaris's clouds and images (this
file with ``--read``: raw, reliable, keep-last 100, in an rclpy executor) while tcpdump records
host B's end of the link: the first 256 bytes of each IP packet, enough for the RTPS
submessages at the head of a datagram's first IP fragment. A datagram is on the link when its
last IP fragment is.

Per message sent in fragments (DATA_FRAG) it rebuilds when each fragment first crossed the link
and when any crossed again (a repair after host B's kernel dropped it), and when host B's
reader sent a NACK_FRAG for it; the reader's lines give, for the same message (same stamp and
size), DDS's reception stamp and the time the reader took it. Printed per topic, p10 / p50 /
p90 in ms after the message's first fragment crossed:

* ``stamped``: DDS's reception stamp (``received_timestamp``);
* ``all once``: every fragment had crossed at least once;
* ``last crossing``: the last fragment crossed, repairs included;
* ``first NACK_FRAG``: the reader asked for lost fragments (messages that needed it);
* ``taken``: the reader had the message.

On Fast DDS 3.2 ``stamped`` sits just after the first fragment, on 2.14 at the last crossing.

    sudo .venv/bin/python tools/capture_two_hosts.py --seconds 10
    sudo .venv-jazzy/bin/python tools/capture_two_hosts.py --config two_hosts_profile_b
"""

import argparse
from collections.abc import Iterable
from collections.abc import Iterator
import dataclasses
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from acres_bridge.conversions.cdr import time_nanoseconds
from acres_devkit import two_hosts
from acres_devkit.bench import two_hosts as two_host_bench
from acres_devkit.bench.harness import percentile
from acres_devkit.environment import claim_domain_id

AGENT = 'polaris'
TOPICS = (f'/{AGENT}/lidar/points', f'/{AGENT}/camera/image_raw')
SNAP_BYTES = 256
START_S = 120.0
SETTLE_S = 3.0
PCAP_MAGIC_NS = 0xA1B23C4D
ETHERTYPE_IPV4 = 0x0800
UDP = 17
DATA_FRAG = 0x16
NACK_FRAG = 0x12


@dataclasses.dataclass
class Sample:
    """One message sent in fragments, as seen on the link (times in ns, system clock)."""

    size: int
    fragments: int
    first_crossed: dict[int, int] = dataclasses.field(default_factory=dict)
    last_crossing: int = 0
    repeats: int = 0
    stamp_ns: int | None = None
    nacks: list[int] = dataclasses.field(default_factory=list)

    @property
    def first(self) -> int:
        return min(self.first_crossed.values())

    @property
    def all_once(self) -> int | None:
        """When every fragment had crossed once (None: some never did in the capture)."""
        if len(self.first_crossed) < self.fragments:
            return None
        return max(self.first_crossed.values())


def pcap_packets(path: str) -> Iterator[tuple[int, bytes]]:
    """Yield (time in ns, captured bytes) per packet of a nanosecond pcap file."""
    with open(path, 'rb') as stream:
        header = stream.read(24)
        if len(header) < 24 or struct.unpack('<I', header[:4])[0] != PCAP_MAGIC_NS:
            raise ValueError(f'{path}: not a little-endian nanosecond pcap file')
        while len(record := stream.read(16)) == 16:
            seconds, nanoseconds, captured, _ = struct.unpack('<IIII', record)
            yield seconds * 1_000_000_000 + nanoseconds, stream.read(captured)


def udp_datagrams(packets: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, str, bytes]]:
    """
    Yield (time its last IP fragment crossed, source address, head of the UDP payload).

    The head is what the capture kept of the datagram's first IP fragment.
    """
    heads: dict[tuple[bytes, bytes, int], bytes] = {}
    for at, frame in packets:
        if len(frame) < 34 or struct.unpack_from('>H', frame, 12)[0] != ETHERTYPE_IPV4:
            continue
        ip = frame[14:]
        if ip[9] != UDP:
            continue
        header_bytes = (ip[0] & 0x0F) * 4
        flags_offset = struct.unpack_from('>H', ip, 6)[0]
        more, offset = flags_offset & 0x2000, (flags_offset & 0x1FFF) * 8
        key = (ip[12:16], ip[16:20], struct.unpack_from('>H', ip, 4)[0])
        if offset == 0:
            heads[key] = ip[header_bytes + 8:]
        if not more and key in heads:
            yield at, '.'.join(str(octet) for octet in ip[12:16]), heads.pop(key)


def rtps_submessages(payload: bytes) -> Iterator[tuple[int, int, str, bytes]]:
    """Yield (id, flags, struct byte order, body as captured) per submessage of an RTPS head."""
    if payload[:4] != b'RTPS':
        return
    index = 20
    while index + 4 <= len(payload):
        kind, flags = payload[index], payload[index + 1]
        order = '<' if flags & 1 else '>'
        length = struct.unpack_from(order + 'H', payload, index + 2)[0]
        body = payload[index + 4:index + 4 + length] if length else payload[index + 4:]
        yield kind, flags, order, body
        if length == 0 or index + 4 + length > len(payload):
            return
        index += 4 + length


def _sequence_number(order: str, body: bytes, offset: int) -> int:
    high, low = struct.unpack_from(order + 'iI', body, offset)
    return (high << 32) + low


def _cdr_stamp(order: str, body: bytes, flags: int) -> int | None:
    """Return the header stamp at the start of a first fragment's payload (None: not kept)."""
    offset = 4 + struct.unpack_from(order + 'H', body, 2)[0]
    if flags & 0x02:                                      # inline QoS: a parameter list
        while offset + 4 <= len(body):
            parameter, length = struct.unpack_from(order + 'HH', body, offset)
            offset += 4 + length
            if parameter == 1:                            # PID_SENTINEL
                break
    try:
        return time_nanoseconds(body[offset:offset + 12])
    except ValueError:                                    # cut short by the snapshot length
        return None


def sample_timelines(datagrams: Iterable[tuple[int, str, bytes]], publisher: str,
                     min_size: int = 65536) -> dict[tuple[bytes, int], Sample]:
    """
    Return the fragmented samples of ``publisher``'s writers, keyed (writer id, sequence).

    NACK_FRAGs from any other address count for the sample they name.
    """
    samples: dict[tuple[bytes, int], Sample] = {}
    nacks: list[tuple[tuple[bytes, int], int]] = []
    for at, source, payload in datagrams:
        for kind, flags, order, body in rtps_submessages(payload):
            if kind == DATA_FRAG and source == publisher and len(body) >= 32:
                start, count, fragment_size, size = struct.unpack_from(order + 'IHHI', body, 20)
                if size < min_size or fragment_size == 0:
                    continue
                key = (body[8:12], _sequence_number(order, body, 12))
                sample = samples.setdefault(key, Sample(size, -(-size // fragment_size)))
                for number in range(start, start + count):
                    if number in sample.first_crossed:
                        sample.repeats += 1
                    else:
                        sample.first_crossed[number] = at
                sample.last_crossing = max(sample.last_crossing, at)
                if start == 1 and sample.stamp_ns is None:
                    sample.stamp_ns = _cdr_stamp(order, body, flags)
            elif kind == NACK_FRAG and source != publisher and len(body) >= 16:
                nacks.append(((body[4:8], _sequence_number(order, body, 8)), at))
    for key, at in nacks:
        if key in samples:
            samples[key].nacks.append(at)
    return samples


def _percentiles(values: list[float]) -> str:
    if not values:
        return 'none'
    return ' / '.join(f'{percentile(values, share):.2f}' for share in (.1, .5, .9))


def report(samples: dict[tuple[bytes, int], Sample],
           read: dict[tuple[int, int], tuple[str, int, int]]) -> list[str]:
    """
    Lines per topic: where each step of a message falls after its first fragment crossed.

    ``read`` maps (stamp, size) to (topic, reception stamp, time taken) from the reader.
    """
    rows: dict[str, dict[str, list[float]]] = {}
    counts: dict[str, list[int]] = {}
    for sample in samples.values():
        found = read.get((sample.stamp_ns, sample.size))
        if found is None or sample.all_once is None:
            continue
        topic, received_ns, taken_ns = found
        first = sample.first
        row = rows.setdefault(topic, {name: [] for name in (
            'stamped', 'all once', 'last crossing', 'first NACK_FRAG', 'taken')})
        row['stamped'].append((received_ns - first) / 1e6)
        row['all once'].append((sample.all_once - first) / 1e6)
        row['last crossing'].append((sample.last_crossing - first) / 1e6)
        if sample.nacks:
            row['first NACK_FRAG'].append((min(sample.nacks) - first) / 1e6)
        row['taken'].append((taken_ns - first) / 1e6)
        tally = counts.setdefault(topic, [0, 0])
        tally[0] += 1
        tally[1] += bool(sample.repeats)
    lines = []
    for topic, row in sorted(rows.items()):
        total, repaired = counts[topic]
        lines.append(f'{topic}: {total} messages, {repaired} with fragments sent again; '
                     'ms after the first fragment crossed, p10 / p50 / p90:')
        lines += [f'  {name:16} {_percentiles(values)}' for name, values in row.items()]
    return lines


def read_messages() -> int:
    """Host B's reader: print ``ready``, then ``msg TOPIC SIZE STAMP RECEIVED TAKEN``."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from sensor_msgs.msg import Image
    from sensor_msgs.msg import PointCloud2

    rclpy.init()
    node = rclpy.create_node('capture_reader')
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                     reliability=ReliabilityPolicy.RELIABLE)

    def record(topic: str):
        def on_message(message: bytes, info) -> None:
            taken_ns = time.time_ns()
            print(f'msg {topic} {len(message)} {time_nanoseconds(message)} '
                  f'{info["received_timestamp"]} {taken_ns}', flush=True)
        return on_message
    readers = [node.create_subscription(kind, topic, record(topic), qos, raw=True)
               for kind, topic in zip((PointCloud2, Image), TOPICS)]
    while not all(reader.get_publisher_count() for reader in readers):
        rclpy.spin_once(node, timeout_sec=0.1)
    print('ready', flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    return 0


def capture(seconds: float, config: str, work_dir: str) -> list[str]:
    """Run both hosts, capture host B's end for ``seconds``; return the report's lines."""
    pair = two_hosts.TwoHosts()
    pcap = os.path.join(work_dir, 'host_b.pcap')
    try:
        two_hosts.start_bridge(pair.a, AGENT, emulator_options=['--rate', '1'],
                               start_s=START_S)
        reader = pair.b.start([sys.executable, '-m', 'acres_devkit.bench.capture_two_hosts',
                               '--read'],
                              **two_host_bench.reader_env(config))
        reader.wait_for(r'^ready$', START_S)
        time.sleep(SETTLE_S)      # past discovery's first repairs: the steady state is measured
        tcpdump = subprocess.Popen(
            ['ip', 'netns', 'exec', pair.b.name, 'tcpdump', '-i', pair.b.interface, '-s',
             str(SNAP_BYTES), '-B', '65536', '-Z', 'root', '--time-stamp-precision=nano',
             '-w', pcap, 'ip'], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(seconds)
        tcpdump.terminate()
        if tcpdump.wait(30) not in (0, -15):
            raise RuntimeError(f'tcpdump failed: {tcpdump.stderr.read().decode()}')
        time.sleep(1.0)           # what crossed last is taken too
        read = {}
        for line in reader.output.splitlines():
            parts = line.split()
            if len(parts) == 6 and parts[0] == 'msg':
                read[(int(parts[3]), int(parts[2]))] = (parts[1], int(parts[4]), int(parts[5]))
    finally:
        pair.remove()
    samples = sample_timelines(udp_datagrams(pcap_packets(pcap)), pair.a.address)
    return report(samples, read)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=10.0)
    parser.add_argument('--config', choices=('own', 'two_hosts_profile_b'), default='own',
                        help='host B stock, or with config/fastdds_two_hosts.xml')
    parser.add_argument('--read', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.read:
        return read_messages()
    reason = two_hosts.unavailable() or (
        None if shutil.which('tcpdump') else 'tcpdump is not installed (apt-get install tcpdump)')
    if reason:
        print(f'capture_two_hosts: {reason}', file=sys.stderr)
        return 2
    os.environ.setdefault('ROS_DOMAIN_ID', str(claim_domain_id()))
    two_hosts.remove_stale()
    with tempfile.TemporaryDirectory(prefix='acres-capture-') as work_dir:
        for line in capture(args.seconds, args.config, work_dir):
            print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
