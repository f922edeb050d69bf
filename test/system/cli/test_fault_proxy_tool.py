# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
``acres_fault_proxy``, the fault proxy as a user runs it: its fault specs, its errors and a run.

The run is ``ros2 run acres_bridge acres_fault_proxy`` in front of an emulator's sensor stream:
a client that connects to the proxy gets the Hello, then the bad frame the command line asked
for, and the proxy ends on Ctrl-C with exit 0.
"""

import socket

import pytest

from acres_bridge.emulator.fault_tool import parse_fault
from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.frame_reader import FrameReader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import HelloFrame
from acres_devkit.ros2_tools import assert_clean_exit
from acres_devkit.ros2_tools import Background
from acres_devkit.ros2_tools import PACKAGE
from acres_devkit.ros2_tools import run


def test_fault_specs_name_the_action_its_target_and_its_options():
    assert parse_fault('cut@lidar,keep=100', 'stream') == (
        'cut', {'frame_type': FrameType.LIDAR, 'keep': 100})
    assert parse_fault('stall', 'stream') == ('stall', {'duration_s': 2.0})
    assert parse_fault('stall@clock,duration_s=0.5', 'stream') == (
        'stall', {'duration_s': 0.5, 'frame_type': FrameType.CLOCK})
    assert parse_fault('replace@step,line=not json', 'control') == (
        'replace', {'op': 'step', 'line': b'not json'})
    assert parse_fault('drop', 'control') == ('drop', {})


@pytest.mark.parametrize('spec, protocol, error', [
    ('delay', 'stream', 'stream faults are bad_magic, cut, drop'),
    ('cut@hello', 'stream', "frame types are clock, ins, lidar, camera, barrier, not 'hello'"),
    ('cut,keep', 'stream', "fault option 'keep' is not KEY=VALUE"),
    ('stall', 'control', 'control faults are delay, drop, replace, rewrite_id, swallow'),
])
def test_a_bad_fault_spec_says_what_is_wrong(spec, protocol, error):
    with pytest.raises(ValueError, match=error):
        parse_fault(spec, protocol)


@pytest.mark.ros2_tools
def test_acres_fault_proxy_helps_and_refuses_a_bad_fault_with_one_line():
    helped = run(['ros2', 'run', PACKAGE, 'acres_fault_proxy', '--help'])
    assert helped.returncode == 0, helped.stdout
    assert '--upstream-port' in helped.stdout and 'huge_header' in helped.stdout
    refused = run(['ros2', 'run', PACKAGE, 'acres_fault_proxy', '--upstream-port', '5601',
                   '--fault', 'melt'])
    assert refused.returncode == 2, refused.stdout
    # ros2 run adds its own line on a failure: '[ros2run]: Process exited with failure 2'.
    lines = [line for line in refused.stdout.strip().splitlines()
             if not line.startswith('[ros2run]')]
    assert lines == ['acres_fault_proxy: stream faults are bad_magic, cut, drop, garbage, '
                     "huge_header, stall, unknown_type, not 'melt'"]


@pytest.mark.ros
@pytest.mark.ros2_tools
def test_acres_fault_proxy_breaks_the_stream_it_forwards_and_ends_on_ctrl_c(emulator_factory):
    emulator = emulator_factory(mode='core', drive='hold')
    proxy = Background(['ros2', 'run', PACKAGE, 'acres_fault_proxy', '--upstream-port',
                        str(emulator.sensor_ports[0]), '--fault', 'bad_magic@lidar',
                        '--interval-s', '0'])
    try:
        ready = proxy.wait_for(r'ACRES_FAULT_PROXY_READY port=(\d+) upstream=(\d+)')
        assert int(ready[2]) == emulator.sensor_ports[0]
        with socket.create_connection(('127.0.0.1', int(ready[1])), timeout=10.0) as sock:
            reader = FrameReader(sock)
            assert isinstance(reader.read_frame(), HelloFrame)
            kinds = []
            with pytest.raises(FrameError, match="bad magic b'XXXX'"):
                for _ in range(3000):     # 13 s of Core's stream; its LiDAR is at 10 Hz
                    kinds.append(reader.read_frame().header.frame_type)
            # Every frame before the LiDAR's came through as the emulator sent it.
            assert kinds and FrameType.LIDAR not in kinds
        proxy.wait_for(r'acres_fault_proxy: fault 1 fired: bad_magic@lidar')
        assert_clean_exit(proxy, proxy.interrupt())
    finally:
        proxy.kill()
