# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Tests of acres_devkit.bench.perf_split: a perf report split by layer and thread (no perf)."""

import pytest

from acres_devkit.bench import perf_split as perf_split_module

REPORT = '''\
# Samples: 1K of event 'cpu-clock:ppp'
#
# Overhead       Samples  Command          Shared Object                   Symbol
# ........  ............  ...............  ..............................  ......
#
    30.00%           300  sensor-rx:polar  libpython3.11.so.1.0            [.] _PyEval_EvalFrameDefault
    20.00%           200  sensor-tx:polar  libc.so.6                       [.] __memmove_avx_unaligned_erms
    10.00%           100  sensor-rx:polar  [kernel.kallsyms]               [k] _copy_to_iter
     8.00%            80  sensor-rx:polar  [kernel.kallsyms]               [k] tcp_recvmsg_locked
     7.00%            70  dds.ev.0         [kernel.kallsyms]               [k] finish_task_switch.isra.0
     6.00%            60  dds.shm.42663    libfastdds.so.3.2               [.] eprosima::fastdds::rtps::MessageReceiver::processCDRMsg
     5.00%            50  sensor-rx:polar  librmw_fastrtps_shared_cpp.so   [.] rmw_fastrtps_shared_cpp::__rmw_publish_serialized_message
     5.00%            50  sensor_bridge    _rclpy_pybind11.cpython-311-x86_64-linux-gnu.so  [.] rclpy::Publisher::publish_raw
     4.00%            40  dds.shm.7002     libfastcdr.so.2                 [.] eprosima::fastcdr::Cdr::serialize
     5.00%            50  sensor_bridge    _multiarray_umath.cpython-311-x86_64-linux-gnu.so  [.] PyArray_New
'''  # noqa: E501  (perf's own columns)


@pytest.fixture(scope='module')
def perf_split():
    return perf_split_module


def test_samples_are_summed_by_layer(perf_split):
    result = perf_split.split_report(REPORT)
    assert result['samples'] == 1000
    assert result['layers'] == {'kernel tcp': 18.0, 'kernel other': 7.0, 'fast dds': 10.0,
                                'rcl + rmw': 10.0, 'python': 30.0, 'libc': 20.0, 'other': 5.0}


def test_threads_are_grouped_without_fast_dds_ports(perf_split):
    threads = perf_split.split_report(REPORT)['threads']
    assert list(threads) == ['sensor-rx:polar', 'sensor-tx:polar', 'dds.shm', 'sensor_bridge',
                             'dds.ev']
    assert threads['dds.shm'] == {'percent': 10.0, 'layers': {'fast dds': 10.0}}
    assert threads['sensor-rx:polar']['layers'] == {'kernel tcp': 18.0, 'python': 30.0,
                                                    'rcl + rmw': 5.0}


def test_the_largest_symbols_come_first_with_their_layer(perf_split):
    top = perf_split.split_report(REPORT)['top']
    assert top[0] == {'percent': 30.0, 'layer': 'python', 'dso': 'libpython3.11.so.1.0',
                      'symbol': '_PyEval_EvalFrameDefault'}
    assert [entry['layer'] for entry in top[1:3]] == ['libc', 'kernel tcp']


def test_a_report_without_samples_splits_into_zeros(perf_split):
    result = perf_split.split_report('# nothing\n')
    assert result['samples'] == 0
    assert set(result['layers'].values()) == {0.0}


def test_perf_stat_counts_are_named(perf_split):
    text = ('# started on Thu Dec  3 17:42:06 2026\n\n'
            '131244,,raw_syscalls:sys_enter,8006600454,100.00,,\n'
            '121772,,syscalls:sys_enter_futex,8006600454,100.00,,\n'
            '<not counted>,,syscalls:sys_enter_recvfrom,0,100.00,,\n'
            '68030,,context-switches,8006600454,100.00,,\n')
    assert perf_split.parse_stat(text) == {'syscalls': 131244, 'futex': 121772,
                                           'context_switches': 68030}
