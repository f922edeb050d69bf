# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""What a sensor stream's status says of its Hello: the geographic reference and the datum."""

from support.sensor_frames import hello_frame
from support.sensor_frames import polaris_hello_dict

from acres_bridge.conversions.diagnostics import HELLO_KEYS
from acres_bridge.conversions.diagnostics import stream_stats_to_status
from acres_bridge.protocol.stream_client import SensorStreamClient


def _stats() -> dict:
    return SensorStreamClient('127.0.0.1', 1, name='test', on_frame=print).stats


def _values(status) -> dict[str, str]:
    return {value.key: value.value for value in status.values}


def test_the_status_names_the_datum_of_the_fix():
    values = _values(stream_stats_to_status(_stats(), name='s', hello=hello_frame().hello))
    assert (values['georeferenced'], values['ins.datum']) == ('true', 'nad83_2011')
    other = polaris_hello_dict()
    other['ins']['datum'] = 'wgs84_g2139'
    other['georeferenced'] = False
    values = _values(stream_stats_to_status(_stats(), name='s', hello=hello_frame(other).hello))
    assert (values['georeferenced'], values['ins.datum']) == ('false', 'wgs84_g2139')


def test_before_a_hello_the_datum_is_not_known():
    values = _values(stream_stats_to_status(_stats(), name='s'))
    assert [values[key] for key in HELLO_KEYS] == ['n/a', 'n/a']
