# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Loopback only: every client, node, emulator and proxy refuses other hosts before any socket.

No test here sends a packet anywhere but 127.0.0.1: names that would resolve elsewhere are
resolved by a patched ``socket.getaddrinfo`` (no /etc/hosts change, no DNS), and the fixture
``guarded`` fails any connect or bind to a non-loopback address before it reaches the kernel,
and counts every connect and bind so the tests can show that none happened at all.
"""

import ipaddress
import os
import socket
import subprocess
import sys
import threading

import pytest
from support import paths

from acres_bridge.emulator import server as emulator_server
from acres_bridge.emulator.faults import FaultProxy
from acres_bridge.emulator.server import Emulator
from acres_bridge.emulator.stream_server import SensorStreamServer
from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.sockets import require_loopback
from acres_bridge.protocol.stream_client import SensorStreamClient

ROOT = str(paths.ROOT)
# Names a patched resolver maps elsewhere: no lookup ever leaves the process.
FAKE_NAMES = {
    'sim.example': ['192.168.1.5'],
    'split.example': ['127.0.0.1', '10.1.2.3'],
    'localhost.attacker.example': ['203.0.113.9'],
    'v6.example': ['2001:db8::5'],
}
BAD_HOSTS = ['10.1.2.3', '192.168.1.5', '0.0.0.0', '::', '8.8.8.8', '::ffff:127.0.0.1',
             '2001:db8::5', '', ' ', *FAKE_NAMES]


def _loopback(address: str) -> bool:
    return ipaddress.ip_address(address.split('%', 1)[0]).is_loopback


@pytest.fixture
def guarded(monkeypatch):
    """
    Resolve FAKE_NAMES without DNS; refuse connects and binds elsewhere, record the test's.

    Every thread is refused a non-loopback address. Recorded are the attempts of the test's
    own thread and of the threads it starts: a thread of an earlier test of this process
    that is still winding down (a client reconnecting to its emulator's port on a busy
    machine) is not the code under test.
    """
    attempts: list[tuple[str, object]] = []
    earlier_threads = [thread for thread in threading.enumerate()
                       if thread is not threading.current_thread()]
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_bind = socket.socket.bind

    def getaddrinfo(host, port, *args, **kwargs):
        if host in FAKE_NAMES:
            return [((socket.AF_INET6 if ':' in address else socket.AF_INET),
                     socket.SOCK_STREAM, 6, '', (address, port or 0))
                    for address in FAKE_NAMES[host]]
        return real_getaddrinfo(host, port, *args, **kwargs)

    def check(kind: str, real):
        def call(sock, address, *args):
            if not any(thread is threading.current_thread() for thread in earlier_threads):
                attempts.append((kind, address))
            if isinstance(address, tuple) and not _loopback(str(address[0]) or '0.0.0.0'):
                raise AssertionError(f'{kind} to a non-loopback address {address}')
            return real(sock, address, *args)
        return call

    monkeypatch.setattr(socket, 'getaddrinfo', getaddrinfo)
    monkeypatch.setattr(socket.socket, 'connect', check('connect', real_connect))
    monkeypatch.setattr(socket.socket, 'connect_ex', check('connect', real_connect_ex))
    monkeypatch.setattr(socket.socket, 'bind', check('bind', real_bind))
    return attempts


# --- the protocol clients --------------------------------------------------------------------

@pytest.mark.parametrize('host', BAD_HOSTS)
def test_require_loopback_refuses_other_hosts(guarded, host):
    with pytest.raises(TransportError, match='loopback|empty|127.0.0.1'):
        require_loopback(host)
    assert guarded == []


@pytest.mark.parametrize('host', ['127.0.0.1', '127.8.9.10', 'localhost', '::1', '[::1]'])
def test_loopback_hosts_pass(guarded, host):
    assert _loopback(require_loopback(host))


@pytest.mark.parametrize('host', BAD_HOSTS)
def test_clients_refuse_other_hosts_before_any_socket(guarded, host):
    with pytest.raises(TransportError):
        SensorStreamClient(host, 5601, name='evil', on_frame=print)
    with pytest.raises(TransportError):
        ControlClient(host, 5600)
    assert guarded == []


# --- the emulator and the fault proxy --------------------------------------------------------

@pytest.mark.parametrize('host', BAD_HOSTS)
def test_emulator_refuses_other_hosts_before_binding(guarded, host):
    with pytest.raises(TransportError):
        Emulator(host=host)
    with pytest.raises(TransportError):
        SensorStreamServer(agent='polaris', hello={}, time_s=float, host=host)
    with pytest.raises(TransportError):
        FaultProxy(5601, host=host)
    assert guarded == []


@pytest.mark.parametrize('host', ['10.1.2.3', '0.0.0.0', 'sim.example', '::'])
def test_emulator_cli_refuses_other_hosts_with_one_line(guarded, capsys, host):
    assert emulator_server.main(['--host', host, '--control-port', '0']) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith('acres_sim_emulator: host ') and '\n' not in error
    assert 'not a loopback address' in error
    assert guarded == []


def _listeners(pid: int | str = 'self') -> list[tuple[str, int]]:
    """Return (address, port) of every listening TCP socket the process holds."""
    inodes = set()
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            continue
        if target.startswith('socket:['):
            inodes.add(target[8:-1])
    found = []
    for table in ('tcp', 'tcp6'):
        with open(f'/proc/{pid}/net/{table}') as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != '0A' or inode not in inodes:
                    continue
                hex_address, hex_port = local.split(':')
                raw = bytes.fromhex(hex_address)
                # The kernel prints each 32-bit word in host (little-endian) order.
                raw = b''.join(raw[index:index + 4][::-1] for index in range(0, len(raw), 4))
                found.append((str(ipaddress.ip_address(raw)), int(hex_port, 16)))
    return found


def test_emulator_and_proxy_listen_on_127_0_0_1_only(emulator_factory):
    emulator = emulator_factory(vehicles=('polaris', 'maxxum'), drive='hold')
    proxy = FaultProxy(emulator.control_port, protocol='control').start()
    try:
        assert emulator.control._listener.getsockname()[0] == '127.0.0.1'
        for stream in emulator.streams:
            assert stream._listener.getsockname()[0] == '127.0.0.1'
        ports = {emulator.control_port, *emulator.sensor_ports, proxy.port}
        listeners = _listeners()
        assert ports <= {port for _, port in listeners}
        assert all(_loopback(address) for address, _ in listeners), listeners
    finally:
        proxy.stop()


def test_emulator_process_listens_on_its_reported_loopback_ports_only():
    process = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.emulator', '--control-port', '0',
         '--sensor-ports', '0,0', '--vehicles', 'polaris,maxxum', '--drive', 'hold'],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        line = process.stdout.readline().split()
        assert line and line[0] == 'ACRES_SIM_EMULATOR_READY', line
        fields = dict(item.split('=') for item in line[1:])
        reported = {int(fields['control']), *map(int, fields['sensors'].split(','))}
        listeners = _listeners(process.pid)
        assert sorted(listeners) == sorted(('127.0.0.1', port) for port in reported)
    finally:
        process.terminate()
        process.communicate(timeout=30)


# --- the nodes -------------------------------------------------------------------------------

@pytest.mark.parametrize('host', BAD_HOSTS)
def test_node_parameters_refuse_other_hosts(guarded, host):
    # A missing module is a failure, not a skip.
    from acres_bridge.control.parameters import sim_control_parameters_from_values
    from acres_bridge.runtime.parameters import ParameterError
    from acres_bridge.sensors.parameters import sensor_bridge_parameters_from_values
    from acres_bridge.session.parameters import bridge_parameters_from_values
    for validate in (sensor_bridge_parameters_from_values, sim_control_parameters_from_values,
                     bridge_parameters_from_values):
        with pytest.raises(ParameterError, match='^parameter host: '):
            validate({'host': host})
    assert guarded == []


@pytest.mark.parametrize('host', ['192.168.1.5', 'sim.example', '0.0.0.0'])
def test_sensor_bridge_node_refuses_other_hosts_before_connecting(guarded, ros_context, host):
    from rclpy.parameter import Parameter

    from acres_bridge.runtime.parameters import ParameterError
    from acres_bridge.sensors.sensor_node import SensorBridgeNode
    with pytest.raises(ParameterError, match='^parameter host: '):
        SensorBridgeNode(context=ros_context,
                         parameter_overrides=[Parameter('host', value=host)])
    assert [kind for kind, _ in guarded if kind == 'connect'] == []


@pytest.mark.parametrize('host', ['10.1.2.3', 'localhost.attacker.example'])
def test_sim_control_and_session_nodes_refuse_other_hosts_before_connecting(
        guarded, ros_context, host):
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from acres_bridge.control.sim_control_node import SimControlNode
    from acres_bridge.runtime.parameters import ParameterError
    from acres_bridge.session.bridge import SessionBridge
    overrides = [Parameter('host', value=host)]
    with pytest.raises(ParameterError, match='^parameter host: '):
        SimControlNode(context=ros_context, parameter_overrides=overrides)
    executor = SingleThreadedExecutor(context=ros_context)
    try:
        with pytest.raises(ParameterError, match='^parameter host: '):
            SessionBridge(executor, context=ros_context, parameter_overrides=overrides)
    finally:
        executor.shutdown()
    assert [kind for kind, _ in guarded if kind == 'connect'] == []


@pytest.mark.parametrize('name', ['sensor_bridge', 'sim_control', 'acres_bridge'])
def test_node_process_exits_with_one_line_for_another_host(name):
    # Each executable's main is acres_bridge.nodes.<its name>.
    result = subprocess.run(
        [sys.executable, '-m', f'acres_bridge.nodes.{name}', '--ros-args', '-p',
         'host:=10.1.2.3'], capture_output=True, text=True, timeout=60,
        env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"{name}: parameter host: host '10.1.2.3' resolves to 10.1.2.3, which "
                     'is not a loopback address: the simulator listens on 127.0.0.1 only']
