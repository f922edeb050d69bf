# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The parameters of foxglove_view: validated values, and the executable's one-line refusal."""

import subprocess
import sys

import pytest

from acres_bridge.foxglove.parameters import foxglove_view_parameters_from_values
from acres_bridge.runtime.parameters import ParameterError


def test_the_defaults_listen_on_loopback_8765_and_serve_every_topic():
    settings = foxglove_view_parameters_from_values({})
    assert (settings.address, settings.port, settings.client_queue) == ('127.0.0.1', 8765, 32)
    assert settings.loopback and settings.serves('/polaris/lidar/points')


def test_include_and_exclude_pick_the_topics():
    settings = foxglove_view_parameters_from_values(
        {'include': '^/polaris/', 'exclude': 'camera'})
    assert settings.serves('/polaris/lidar/points')
    assert not settings.serves('/polaris/camera/image_raw')
    assert not settings.serves('/clock')


@pytest.mark.parametrize('address, loopback', [
    ('127.0.0.1', True), ('::1', True), ('localhost', True), ('0.0.0.0', False),
    ('192.168.1.20', False)])
def test_only_a_loopback_address_keeps_the_view_on_this_machine(address, loopback):
    assert foxglove_view_parameters_from_values({'address': address}).loopback is loopback


@pytest.mark.parametrize('values, words', [
    ({'include': '(unclosed'}, 'parameter include'),
    ({'exclude': '*'}, 'parameter exclude'),
    ({'address': 'farm.example'}, 'parameter address'),
    ({'port': 70000}, 'parameter port'),
    ({'client_queue': 1}, 'parameter client_queue'),
    ({'port': '8765'}, 'parameter port'),
    ({'colour': 'red'}, 'unknown parameters: colour')])
def test_a_bad_value_is_refused_with_its_name(values, words):
    with pytest.raises(ParameterError, match=words):
        foxglove_view_parameters_from_values(values)


@pytest.mark.ros
def test_the_executable_refuses_a_bad_pattern_with_one_line():
    result = subprocess.run(
        [sys.executable, '-m', 'acres_bridge.nodes.foxglove_view', '--ros-args',
         '-p', 'include:=(unclosed', '-p', 'port:=0'],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith('foxglove_view:')]
    assert len(lines) == 1 and 'parameter include' in lines[0], result.stderr
    assert 'Traceback' not in result.stderr
