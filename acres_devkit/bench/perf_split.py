# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A native CPU profile of one process, split by layer: kernel TCP, Fast DDS, rcl + rmw, Python.

:class:`PerfRecorder` attaches Linux ``perf record`` to a running process for a measured
window; :func:`split` reads the samples back with ``perf report --sort comm,dso,sym`` and sums
them into the layers below (a share of all samples of the process), over all threads and by
thread (the bridge names its own: ``sensor-rx:<agent>``, ``sensor-tx:<agent>``):

``kernel tcp``
    kernel symbols of the TCP/IP stack and sockets (``tcp_``, ``sock_``, ``skb_``, ``ip_`` ...)
``kernel other``
    every other kernel symbol: system-call entry, futexes, the scheduler, page faults, copies
``fast dds``
    libfastdds / libfastrtps / libfastcdr
``rcl + rmw``
    rcl, rmw, rmw_fastrtps, rcutils, the rosidl type support and rclpy's extension
``python``
    libpython and the interpreter's own extension modules
``libc``
    libc, libstdc++, libm, the loader (memcpy, malloc, locks: called by every layer above)
``other``
    the rest (numpy, ctypes' libffi, unknown)

Without Python frames (``-X perf`` needs Python 3.12), interpreted code shows as libpython.
"""

import os
import re
import shutil
import signal
import subprocess
from typing import Any

LAYERS = ('kernel tcp', 'kernel other', 'fast dds', 'rcl + rmw', 'python', 'libc', 'other')
SAMPLE_HZ = 499
# perf stat's events and the names the figures give them.
STAT_EVENTS = {'raw_syscalls:sys_enter': 'syscalls', 'syscalls:sys_enter_futex': 'futex',
               'syscalls:sys_enter_recvfrom': 'recvfrom', 'context-switches': 'context_switches'}
_KERNEL_NET = re.compile(
    r'^(tcp|__tcp|sock|__sock|sk_|__sk_|skb|__skb|kfree_skb|ip_|__ip_|inet|__inet|'
    r'__netif|netif|net_|__dev_queue|dev_|loopback|process_backlog|__napi|napi|'
    r'release_sock|lock_sock|__release_sock|_copy_to_iter|__skb_datagram_iter|'
    r'simple_copy_to_iter|skb_copy_datagram|__x64_sys_recv|__sys_recv|__x64_sys_send|'
    r'__sys_send|____sys_recvmsg|____sys_sendmsg|___sys_sendmsg|___sys_recvmsg|udp|__udp|'
    r'security_socket)')
# perf report --sort comm,dso,sym -n: percent, samples, thread name, shared object, [k] or [.],
# symbol. Thread names hold no blanks here (Fast DDS's, the bridge's own, the process's).
_LINE = re.compile(r'^\s*([\d.]+)%\s+(\d+)\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*)$')
# numpy's extension modules look like the standard library's (``_name.cpython-311-...so``).
_NUMPY_MODULES = ('_multiarray', '_umath', '_simd', '_pocketfft', '_bounded_integers')
_THREAD_NUMBERS = re.compile(r'\.\d+(\.\d+)?$')


def available() -> str | None:
    """Return the path of ``perf``, None when it is not installed."""
    return shutil.which('perf')


def layer_of(dso: str, symbol: str, kernel: bool) -> str:
    """Return the layer of one sample's shared object and symbol."""
    if kernel or dso.startswith('[kernel'):
        return 'kernel tcp' if _KERNEL_NET.match(symbol) else 'kernel other'
    name = os.path.basename(dso)
    if name.startswith(('libfastdds', 'libfastrtps', 'libfastcdr', 'libfoonathan')):
        return 'fast dds'
    if name.startswith(('librcl', 'librmw', 'librcutils', 'librosidl', 'libtracetools',
                        '_rclpy', 'librcpputils', 'libyaml')) or '__rosidl_' in name \
            or 'rosidl_typesupport' in name or '_s__rosidl' in name:
        return 'rcl + rmw'
    if name.startswith(_NUMPY_MODULES):
        return 'other'
    if name.startswith('libpython') or name == 'python' or name.startswith('python3') \
            or (name.startswith('_') and '.cpython-' in name):
        return 'python'
    if name.startswith(('libc.so', 'libc-', 'libstdc++', 'libm.so', 'ld-linux', 'libgcc',
                        'libpthread')):
        return 'libc'
    return 'other'


def thread_group(name: str) -> str:
    """Return a thread's group: its name without Fast DDS's port or index (``dds.shm``)."""
    return _THREAD_NUMBERS.sub('', name) if name.startswith('dds.') else name


def split_report(text: str) -> dict[str, Any]:
    """
    Sum ``perf report --sort comm,dso,sym -n --stdio --no-children`` lines into layers.

    :return: ``layers`` (percent of all samples by layer), ``threads`` (percent of all samples
        by thread group, each with its own layers), ``top`` (the 12 largest symbols with their
        layer) and ``samples``.
    """
    counts = dict.fromkeys(LAYERS, 0)
    threads: dict[str, dict[str, int]] = {}
    symbols: dict[tuple[str, str, str], int] = {}
    samples = 0
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        _, count, comm, dso, mark, symbol = match.groups()
        count = int(count)
        layer = layer_of(dso, symbol.strip(), mark == 'k')
        counts[layer] += count
        by_layer = threads.setdefault(thread_group(comm), dict.fromkeys(LAYERS, 0))
        by_layer[layer] += count
        key = (layer, os.path.basename(dso), symbol.strip())
        symbols[key] = symbols.get(key, 0) + count
        samples += count

    def percent(value: int) -> float:
        return round(100.0 * value / samples, 1) if samples else 0.0

    top = sorted(symbols.items(), key=lambda item: item[1], reverse=True)[:12]
    return {'layers': {name: percent(value) for name, value in counts.items()},
            'threads': {name: {'percent': percent(sum(by_layer.values())),
                               'layers': {layer: percent(value)
                                          for layer, value in by_layer.items() if value}}
                        for name, by_layer in sorted(threads.items(),
                                                     key=lambda item: -sum(item[1].values()))},
            'top': [{'percent': percent(count), 'layer': layer, 'dso': dso, 'symbol': symbol}
                    for (layer, dso, symbol), count in top],
            'samples': samples}


def split(data_path: str) -> dict[str, Any]:
    """Read a perf.data file back and split it by layer (see :func:`split_report`)."""
    report = subprocess.run(
        ['perf', 'report', '-i', data_path, '--sort', 'comm,dso,sym', '-n', '--stdio',
         '--no-children'],
        capture_output=True, text=True, check=False)
    if report.returncode != 0:
        raise RuntimeError(f'perf report failed: {report.stderr.strip()[-400:]}')
    return split_report(report.stdout)


def parse_stat(text: str) -> dict[str, int]:
    """Return the counts of ``perf stat -x,`` output by event name (``futex``, ...)."""
    counts = {}
    for line in text.splitlines():
        fields = line.split(',')
        if len(fields) >= 3 and fields[0].strip().isdigit():
            counts[STAT_EVENTS.get(fields[2], fields[2])] = int(fields[0])
    return counts


class PerfRecorder:
    """
    ``perf record`` and ``perf stat`` attached to a running process until :meth:`stop`.

    ``perf record`` samples every thread at SAMPLE_HZ; ``perf stat`` counts the system calls
    (all, futex, recvfrom) and the context switches of the process.

    :param pid: the process to sample.
    :param data_path: where the samples go.
    :param log_path: perf record's own output; perf stat's goes beside it (``.stat``).
    """

    def __init__(self, pid: int, data_path: str, log_path: str) -> None:
        self.data_path = data_path
        self._log = open(log_path, 'w', encoding='utf-8')
        self._stat_path = log_path + '.stat'
        self._process = subprocess.Popen(
            ['perf', 'record', '-F', str(SAMPLE_HZ), '-p', str(pid), '-o', data_path],
            stdout=self._log, stderr=subprocess.STDOUT)
        self._stat = subprocess.Popen(
            ['perf', 'stat', '-x,', '-o', self._stat_path, '-e', ','.join(STAT_EVENTS),
             '-p', str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self, timeout_s: float = 30.0) -> dict[str, Any] | None:
        """End both (SIGINT, as Ctrl-C) and return the split with ``counts``; None on failure."""
        for process in (self._stat, self._process):
            process.send_signal(signal.SIGINT)
        for process in (self._stat, self._process):
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._log.close()
        if not os.path.exists(self.data_path):
            return None
        try:
            result = split(self.data_path)
        except RuntimeError:
            return None
        try:
            with open(self._stat_path, encoding='utf-8') as stream:
                result['counts'] = parse_stat(stream.read())
        except OSError:
            result['counts'] = {}
        return result


def format_split(result: dict[str, Any]) -> str:
    """Return one line: the layers, then the threads, in percent of all samples."""
    layers = result['layers']
    threads = result.get('threads', {})
    return (', '.join(f'{name} {layers[name]:.1f} %' for name in LAYERS) + '; threads: '
            + ', '.join(f"{name} {figures['percent']:.1f} %"
                        for name, figures in list(threads.items())[:6]))
