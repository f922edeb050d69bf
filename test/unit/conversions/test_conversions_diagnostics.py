# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""A sensor stream's statistics as a diagnostic status."""

import copy

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus

from acres_bridge.conversions.diagnostics import diagnostic_array
from acres_bridge.conversions.diagnostics import format_value
from acres_bridge.conversions.diagnostics import FRAME_TYPES
from acres_bridge.conversions.diagnostics import stream_stats_to_status


def _stats(**changes) -> dict:
    by_type = {kind: {'frames': 0, 'bytes': 0, 'bad': 0, 'rate_hz': 0.0,
                      'latency_p50_ms': None, 'latency_max_ms': None, 'last_latency_ms': None,
                      'last_stamp_s': None, 'last_sequence': None, 'published': 0,
                      'dropped': 0} for kind in FRAME_TYPES}
    by_type['lidar'].update(frames=50, published=49, dropped=1, bad=2, rate_hz=10.0,
                            latency_p50_ms=0.41, latency_max_ms=1.33)
    stats = {'name': 'polaris', 'address': '127.0.0.1', 'port': 5601, 'connected': True,
             'reason': 'connected to 127.0.0.1:5601', 'connected_for_s': 5.0,
             'connections': 2, 'reconnects': 1, 'connect_failures': 3, 'disconnects': 1,
             'bad_frames': 2, 'last_bad_frame': 'bad magic', 'unknown_frames': 0,
             'sequence_gaps': 0, 'callback_errors': 0, 'frames': 50, 'bytes': 46000000,
             'published': 49, 'dropped': 1, 'window_s': 5.0, 'by_type': by_type}
    stats.update(changes)
    return stats


def _values(status: DiagnosticStatus) -> dict[str, str]:
    return {value.key: value.value for value in status.values}


def test_a_streaming_connection_is_ok_with_every_figure_by_type():
    stats = _stats()
    status = stream_stats_to_status(stats, name='sensor_bridge: polaris sensor stream',
                                    hardware_id='127.0.0.1:5601', previous=stats)
    assert status.level == DiagnosticStatus.OK
    assert status.message == 'streaming'
    assert (status.name, status.hardware_id) == ('sensor_bridge: polaris sensor stream',
                                                 '127.0.0.1:5601')
    values = _values(status)
    assert values['connected'] == 'true'
    assert values['reconnects'] == '1'
    assert values['last_bad_frame'] == 'bad magic'
    assert values['lidar.frames'] == '50'
    assert values['lidar.published'] == '49'
    assert values['lidar.dropped'] == '1'
    assert values['lidar.bad'] == '2'
    assert values['lidar.rate_hz'] == '10.000'
    assert values['lidar.latency_p50_ms'] == '0.410'
    assert values['lidar.latency_max_ms'] == '1.330'
    assert values['camera.latency_p50_ms'] == 'n/a'
    for kind in FRAME_TYPES:
        assert f'{kind}.rate_hz' in values


def test_a_disconnected_stream_is_an_error_with_the_reason():
    status = stream_stats_to_status(
        _stats(connected=False, reason='cannot connect to 127.0.0.1:5601: connection refused'),
        name='x')
    assert status.level == DiagnosticStatus.ERROR
    assert status.message == ('disconnected: cannot connect to 127.0.0.1:5601: '
                              'connection refused')


def test_new_bad_frames_or_drops_since_the_last_report_warn():
    previous = _stats()
    status = stream_stats_to_status(_stats(bad_frames=3), name='x', previous=previous)
    assert status.level == DiagnosticStatus.WARN
    assert 'bad frames' in status.message
    status = stream_stats_to_status(_stats(dropped=2, callback_errors=1), name='x',
                                    previous=previous)
    assert status.level == DiagnosticStatus.WARN
    assert 'dropped' in status.message and 'callback errors' in status.message
    # Without a previous report, old problems count as new.
    assert stream_stats_to_status(_stats(), name='x').level == DiagnosticStatus.WARN


def test_the_client_stats_alone_are_enough():
    stats = _stats()
    del stats['published'], stats['dropped']
    plain = copy.deepcopy(stats)
    for figures in plain['by_type'].values():
        del figures['published'], figures['dropped']
    values = _values(stream_stats_to_status(plain, name='x', previous=plain))
    assert values['published'] == 'n/a' and values['lidar.dropped'] == 'n/a'


def test_values_format_and_the_array_carries_the_stamp():
    assert [format_value(value) for value in (None, True, False, 3, 0.12345, 'x')] == [
        'n/a', 'true', 'false', '3', '0.123', 'x']
    stamp = Time(sec=5, nanosec=7)
    array = diagnostic_array([DiagnosticStatus(name='a')], stamp)
    assert array.header.stamp == stamp and [s.name for s in array.status] == ['a']


def test_a_connection_without_a_hello_warns_that_another_client_may_hold_the_stream():
    status = stream_stats_to_status(_stats(idle_s=3.0, last_frame=''), name='s')
    assert status.level == DiagnosticStatus.WARN
    assert 'no Hello' in status.message


def test_silence_after_data_warns_but_rest_after_a_barrier_or_hello_does_not():
    stalled = stream_stats_to_status(_stats(idle_s=4.0, last_frame='clock'), name='s')
    assert stalled.level == DiagnosticStatus.WARN
    assert 'no frame for 4 s after a clock frame' in stalled.message
    for resting in ('barrier', 'hello'):
        status = stream_stats_to_status(_stats(idle_s=60.0, last_frame=resting), name='s',
                                        previous=_stats())
        assert status.level == DiagnosticStatus.OK, resting
    busy = stream_stats_to_status(_stats(idle_s=0.01, last_frame='clock'), name='s',
                                  previous=_stats())
    assert busy.level == DiagnosticStatus.OK


def test_the_compressed_images_counters_appear_only_with_an_encoder():
    assert not any(key.startswith('compressed.')
                   for key in _values(stream_stats_to_status(_stats(), name='n')))
    values = _values(stream_stats_to_status(_stats(compressed={
        'format': 'jpeg', 'encoded': 0, 'dropped': 0, 'failed': 0, 'last_encode_ms': None}),
        name='n'))
    assert {key: value for key, value in values.items() if key.startswith('compressed.')} == {
        'compressed.format': 'jpeg', 'compressed.encoded': '0', 'compressed.dropped': '0',
        'compressed.failed': '0', 'compressed.last_encode_ms': 'n/a'}
