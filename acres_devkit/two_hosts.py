# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Two hosts on one machine: two network namespaces joined by a veth pair.

Host A runs the simulator (the emulator) and the bridge, host B the clients. Each namespace
has its own loopback and one end of the link, with a private address on the link only
(10.251.X.1/30 and .2/30). The veth ends are created inside the namespaces, so the machine's
own interfaces and routes are never touched, and removing a namespace removes its end.

Names carry the process id of the run (``acres2h-<pid>-<n>-a``): runs side by side do not
collide, and a namespace whose run is dead (a killed run) is removed by the next
:func:`remove_stale`. A process on a host is ``ip netns exec NAME ...`` with an environment of
its own: stock Fast DDS (no profile), discovery on the link's subnet
(``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET``, allowed only inside these namespaces) and the run's
ROS_DOMAIN_ID.
"""

from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import fcntl
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from acres_devkit.ros2_tools import Background

PREFIX = 'acres2h'
# The Fast DDS variables that would replace its stock configuration in a host's process.
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE',
                     'RMW_FASTRTPS_USE_QOS_FROM_XML', 'FASTDDS_BUILTIN_TRANSPORTS',
                     'ROS_LOCALHOST_ONLY', 'ROS_STATIC_PEERS')
IP_TIMEOUT_S = 30.0
STOP_S = 20.0
_pairs = itertools.count()


# One pair of hosts at a time on this machine, whichever run or lane made it.
LOCK_PATH = os.path.join(tempfile.gettempdir(), f'{PREFIX}.lock')


@contextlib.contextmanager
def one_pair_at_a_time() -> Iterator[None]:
    """
    Hold this machine's two-hosts lock for a test.

    Two hosts share the machine's two cores. tools/test's two lanes reach test_two_hosts at
    about the same time, and a second pair (its emulator, bridge and readers) beside the first
    starved host B's reader for more than the writers' 1 s of cloud and image history: what
    B then lost (5 clouds and 7 images with the two-host profile, CI of 2026-12-05) was the
    machine's load, not the link's. The lock keeps the test about two hosts.
    """
    with open(LOCK_PATH, 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def unavailable() -> str | None:
    """Say why this machine cannot make namespaces (None when it can)."""
    if shutil.which('ip') is None:
        return 'iproute2 is not installed (no ip command)'
    if os.geteuid() != 0:
        return 'network namespaces need root'
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=check,
                          timeout=IP_TIMEOUT_S)


def namespaces() -> list[str]:
    """Return the names of the machine's network namespaces."""
    listed = _ip('netns', 'list').stdout.splitlines()
    return [line.split()[0] for line in listed if line.strip()]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(name: str) -> int | None:
    """Return the pid in a name of this fixture (``acres2h-<pid>-...``), None for others."""
    parts = name.split('-')
    if len(parts) < 2 or parts[0] != PREFIX or not parts[1].isdigit():
        return None
    return int(parts[1])


def _kill_members(name: str) -> None:
    """Kill, by pid, the processes left in one of this fixture's namespaces."""
    pids = [int(pid) for pid in _ip('netns', 'pids', name, check=False).stdout.split()
            if pid.isdigit()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + STOP_S
    while any(_pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _delete(name: str) -> None:
    _kill_members(name)
    _ip('netns', 'delete', name, check=False)


def remove_stale() -> list[str]:
    """Remove the namespaces of runs that are dead; return their names."""
    stale = [name for name in namespaces()
             if (owner := _owner(name)) is not None and not _pid_alive(owner)]
    for name in stale:
        _delete(name)
    return stale


def leftovers(pid: int | None = None) -> list[str]:
    """Return the namespaces and links (of the machine's own namespace) of run ``pid``."""
    pid = os.getpid() if pid is None else pid
    names = [name for name in namespaces() if _owner(name) == pid]
    links = _ip('-o', 'link', 'show').stdout.splitlines()
    stem = _link_stem(pid)
    names += [line.split(':')[1].strip().split('@')[0] for line in links
              if line.count(':') >= 2 and line.split(':')[1].strip().startswith(stem)]
    return names


def _link_stem(pid: int) -> str:
    # Interface names have at most 15 characters: v<pid>x<n><side>.
    return f'v{pid}x'


class Host:
    """
    One host: a network namespace, its end of the link and its address on the link.

    :param name: the namespace.
    :param interface: its end of the veth pair.
    :param address: its address on the link (no prefix length).
    """

    def __init__(self, name: str, interface: str, address: str,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.interface = interface
        self.address = address
        self.env = dict(env or {})
        self.processes: list[Background] = []

    def environment(self, **extra: str) -> dict[str, str]:
        """
        Return the environment of a process on this host: the link's subnet, stock Fast DDS.

        The host's own variables (``env`` of :class:`TwoHosts`) come on top, then ``extra``.
        """
        env = {key: value for key, value in os.environ.items() if key not in PROFILE_VARIABLES}
        env.update(ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET', PYTHONUNBUFFERED='1',
                   ROS_DOMAIN_ID=os.environ['ROS_DOMAIN_ID'])
        env.update(self.env)
        env.update(extra)
        return env

    def start(self, args: Sequence[str], *, stdin: bool = False, **extra_env: str) -> Background:
        """Start a command on this host (after sourcing setup.bash); it is killed at removal."""
        process = Background(args, wrapper=('ip', 'netns', 'exec', self.name),
                             env=self.environment(**extra_env), stdin=stdin)
        self.processes.append(process)
        return process

    def run(self, args: Sequence[str], timeout_s: float = 60.0,
            **extra_env: str) -> tuple[int, str]:
        """Run a command on this host to its end; return its exit code and output."""
        process = self.start(args, **extra_env)
        code = process.wait(timeout_s)
        return code, process.output

    def receive_drops(self) -> dict[str, int]:
        """
        Return what this host's kernel dropped on receipt so far (its /proc/net/snmp).

        UDP datagrams that found their socket's buffer full, and IP datagrams whose fragments
        never all arrived.
        """
        done = subprocess.run(['ip', 'netns', 'exec', self.name, 'cat', '/proc/net/snmp'],
                              capture_output=True, text=True, timeout=30, check=False)
        if done.returncode != 0:
            raise RuntimeError(f'reading /proc/net/snmp on {self.name} failed: {done.stderr}')
        lines = done.stdout.splitlines()
        table = {}
        for names, values in zip(lines[::2], lines[1::2]):
            kind = names.split(':')[0]
            table.update({f'{kind}{name}': int(value) for name, value in
                          zip(names.split()[1:], values.split()[1:])})
        return {'udp_receive_buffer_errors': table['UdpRcvbufErrors'],
                'ip_reassembly_failures': table['IpReasmFails']}

    def stop(self) -> None:
        """Interrupt what still runs here (SIGINT), then kill what does not end."""
        for process in self.processes:
            if process.process.poll() is None:
                try:
                    os.killpg(process.process.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STOP_S
        for process in self.processes:
            try:
                process.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
            process.kill()


class TwoHosts:
    """
    Hosts ``a`` and ``b``, joined by one veth link; :meth:`remove` takes everything away.

    :param mtu: the link's MTU (None: the kernel's default, 1500).
    :param env: variables of every process on both hosts (e.g. a Fast DDS profile).
    """

    def __init__(self, mtu: int | None = None, env: dict[str, str] | None = None) -> None:
        pid = os.getpid()
        index = next(_pairs)
        subnet = f'10.251.{(pid + index) % 256}'
        stem = f'{PREFIX}-{pid}-{index}'
        self.a = Host(f'{stem}-a', f'{_link_stem(pid)}{index}a', f'{subnet}.1', env)
        self.b = Host(f'{stem}-b', f'{_link_stem(pid)}{index}b', f'{subnet}.2', env)
        self._created: list[Host] = []
        try:
            for host in (self.a, self.b):
                _ip('netns', 'add', host.name)
                self._created.append(host)
            _ip('link', 'add', self.a.interface, 'netns', self.a.name, 'type', 'veth',
                'peer', 'name', self.b.interface, 'netns', self.b.name)
            for host in (self.a, self.b):
                _ip('-n', host.name, 'address', 'add', f'{host.address}/30',
                    'dev', host.interface)
                if mtu is not None:
                    _ip('-n', host.name, 'link', 'set', host.interface, 'mtu', str(mtu))
                _ip('-n', host.name, 'link', 'set', 'lo', 'up')
            self.set_link(up=True)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            self.remove()
            detail = getattr(exc, 'stderr', '') or exc
            raise RuntimeError(f'cannot make two hosts: {detail}') from exc

    @property
    def hosts(self) -> Iterator[Host]:
        return iter((self.a, self.b))

    def set_link(self, *, up: bool) -> None:
        """
        Bring both ends of the link up or down (a cable plugged in or pulled).

        Up returns once both ends have their carrier (operational state UP): a Fast DDS
        participant created before that joins no multicast group on the link, and discovers
        nothing across it for as long as it lives.
        """
        for host in (self.a, self.b):
            _ip('-n', host.name, 'link', 'set', host.interface, 'up' if up else 'down')
        if not up:
            return
        deadline = time.monotonic() + IP_TIMEOUT_S
        while not all(self._operational(host) for host in (self.a, self.b)):
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(['ip', 'link', 'show'], IP_TIMEOUT_S)
            time.sleep(0.02)

    @staticmethod
    def _operational(host: Host) -> bool:
        fields = _ip('-n', host.name, '-o', 'link', 'show', host.interface).stdout.split()
        return 'state' in fields and fields[fields.index('state') + 1] == 'UP'

    def mtu(self) -> int:
        """Return the MTU of host A's end of the link."""
        fields = _ip('-n', self.a.name, '-o', 'link', 'show', self.a.interface).stdout.split()
        return int(fields[fields.index('mtu') + 1])

    def remove(self) -> None:
        """Stop every process of both hosts and delete both namespaces (with the link)."""
        for host in self._created:
            host.stop()
        for host in self._created:
            _delete(host.name)
        self._created = []


def start_bridge(host: Host, agent: str, *, emulator_options: Sequence[str] = (),
                 bridge_parameters: Sequence[str] = (), start_s: float = 120.0,
                 **env: str) -> tuple[Background, Background]:
    """
    Start the emulator of ``agent`` and the ``acres_bridge`` executable on a host.

    Returns (emulator, bridge) once the bridge has the agent's sensor stream. ``env`` goes to
    both processes; ``bridge_parameters`` are ``name:=value`` texts.
    """
    emulator = host.start([sys.executable, '-m', 'acres_bridge.emulator.server',
                           '--control-port', 'any', '--sensor-ports', '0', '--vehicles', agent,
                           *emulator_options], **env)
    port = emulator.wait_for(r'ACRES_SIM_EMULATOR_READY control=(\d+)', start_s).group(1)
    parameters = [item for text in (f'port:={port}', *bridge_parameters)
                  for item in ('-p', text)]
    bridge = host.start([sys.executable, '-m', 'acres_bridge.nodes.acres_bridge', '--ros-args',
                         *parameters], **env)
    bridge.wait_for(rf'sensor stream {agent}: hello from', start_s)
    return emulator, bridge


class ClientLog:
    """
    What a clients/two_host_client.py process printed: messages per topic, answers, readiness.

    ``messages[topic]`` is a list of (received_ns, stamp_ns, taken_ns); ``answers`` the answer
    objects in order. :meth:`update` reads the lines printed since the last call.
    """

    def __init__(self, process: Background) -> None:
        self.process = process
        self.messages: dict[str, list[tuple[int, int, int]]] = {}
        self.answers: list[dict] = []
        self.ready = False
        self._read = 0

    def update(self) -> 'ClientLog':
        lines = self.process.lines(self._read)
        self._read += len(lines)
        for line in lines:
            kind, _, rest = line.strip().partition(' ')
            if kind == 'msg':
                topic, received, stamp, taken = rest.split()
                self.messages.setdefault(topic, []).append(
                    (int(received), int(stamp), int(taken)))
            elif kind == 'answer':
                self.answers.append(json.loads(rest))
            elif kind == 'ready':
                self.ready = True
        return self

    def stamps(self, topic: str) -> list[int]:
        """Return the stamps received on a topic, in order of arrival."""
        return [stamp for _, stamp, _ in self.update().messages.get(topic, [])]
