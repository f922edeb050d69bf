# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The harness of the benchmarks: child processes driven by lines, their DDS environment, CPU.

A :class:`Child` is one process of a run, told what to do on its standard input and answering
on its standard output (:class:`Commands` and :func:`say` are its side); :func:`dds_env` gives
every process of a run the same local graph and Fast DDS configuration.
"""

from collections.abc import Sequence
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from acres_bridge.runtime import dds
from acres_devkit import dds_environment

# The repository: acres_devkit sits at its root, beside acres_bridge.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
DISTRO_PREFIXES = {'kilted': '.venv', 'jazzy': '.venv-jazzy'}
WHEELS_BOOTSTRAPPED = '_ROS_WHEELS_BOOTSTRAP_COMPLETE'
START_TIMEOUT_S = 60.0


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Return the value at ``fraction`` of the sorted values (index ``int(n * fraction)``)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else None


class Commands:
    """Read command lines from stdin on a thread (the harness drives its children this way)."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, name='stdin', daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            self.lines.put(line.strip())
        self.lines.put('stop')

    def get(self, timeout_s: float | None = None) -> str | None:
        try:
            return self.lines.get(timeout=timeout_s)
        except queue.Empty:
            return None


def say(text: str) -> None:
    print(text, flush=True)


class RemoteControl:
    """The harness's end of :func:`role_control`: ``request`` as ControlClient has it."""

    def __init__(self, child: 'Child') -> None:
        self.child = child

    def request(self, op: str, *, timeout_s: float = 30.0, **fields: Any) -> dict[str, Any]:
        answer = self.child.ask(f'{op} {json.dumps(fields)}', ('REPLY',), timeout_s + 5.0)
        return json.loads(answer.partition(' ')[2])

    def stop(self) -> None:
        pass   # the child ends with the run's other children


class Child:
    """A child process of the harness, driven by stdin lines and answering on stdout lines."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str],
                 log_dir: str, *, interrupt: bool = False,
                 wrapper: Sequence[str] = ()) -> None:
        self.name = name
        self.interrupt = interrupt
        self.lines: queue.Queue[str] = queue.Queue()
        self._stderr = open(os.path.join(log_dir, f'{name}.log'), 'w', encoding='utf-8')
        # ``ip netns exec`` executes the command in place: the pid stays the command's.
        self.process = subprocess.Popen(
            [*wrapper, *argv], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, text=True, bufsize=1)
        threading.Thread(target=self._read, name=f'{name}-out', daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.strip())

    def send(self, line: str) -> None:
        try:
            self.process.stdin.write(line + '\n')
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def expect(self, prefix: str, timeout_s: float) -> str:
        """Return the next line that starts with ``prefix``; RuntimeError after the time-out."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.process.poll() is not None and self.lines.empty():
                raise RuntimeError(f'{self.name}: no {prefix!r} within {timeout_s} s '
                                   f'(exit code {self.process.poll()}, see {self._stderr.name})')
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line.startswith(prefix):
                return line

    def ask(self, command: str, prefixes: tuple[str, ...], timeout_s: float = 20.0) -> str:
        self.send(command)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line.startswith(prefixes):
                return line
        raise RuntimeError(f'{self.name}: no answer to {command!r}')

    def finish(self, timeout_s: float = 20.0) -> None:
        """Ask the child to stop (a line, or SIGINT for a ROS node), and end it if it does not."""
        if self.interrupt:
            self.process.send_signal(signal.SIGINT)
        else:
            self.send('stop')
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()


def prefix_python(prefix: str) -> str:
    """Return the Python of a prefix (a venv made by tools/bootstrap.py)."""
    return os.path.join(prefix, 'bin', 'python')


def dds_env(config: str, domain_id: int, fast_dds: dds.FastDds | None,
            prefix: str = sys.prefix, profile_file: str | None = None) -> dict[str, str]:
    """
    Return the environment of every process of one run: a local-only graph of its own.

    ``stock``: no Fast DDS variable at all, as a new user has it. ``profile``: the package's
    profile spelled for ``fast_dds``, the Fast DDS of the prefix, or ``profile_file`` (a
    user's own, the other version's), each with ``RMW_FASTRTPS_USE_QOS_FROM_XML=1``.
    """
    env = {name: value for name, value in os.environ.items()
           if name not in dds_environment.USER_VARIABLES}
    if prefix != sys.prefix and env.pop(WHEELS_BOOTSTRAPPED, None):
        # The PyPI wheels' Python sets LD_LIBRARY_PATH to its own prefix and re-executes
        # itself once; a child of another prefix must do that again for its own.
        env.pop('LD_LIBRARY_PATH', None)
    dds_environment.keep_discovery_local(env, fast_dds)
    env.update(ROS_DOMAIN_ID=str(domain_id), RCUTILS_LOGGING_SEVERITY_THRESHOLD='WARN',
               PYTHONUNBUFFERED='1')
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    if config == 'profile':
        if fast_dds is None:
            raise ValueError('the profile configuration needs the Fast DDS of the prefix')
        env.update(dds_environment.shipped_profile_environment(fast_dds))
        if profile_file is not None:
            env[dds.profile_variable(fast_dds)] = os.path.abspath(profile_file)
    elif config != 'stock':
        raise ValueError(f'unknown DDS configuration {config!r}')
    return env


class Sampler:
    """Sample a process's resident memory and CPU time on a thread."""

    def __init__(self, pid: int, period_s: float = 0.5) -> None:
        import psutil
        self.process = psutil.Process(pid)
        self.period_s = period_s
        self.samples: list[tuple[float, float, float]] = []   # (t, rss MB, cpu s)
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, name='sampler', daemon=True)
        self._thread.start()

    def cpu_s(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def _run(self) -> None:
        import psutil
        while not self._stop.wait(self.period_s):
            try:
                rss = self.process.memory_info().rss / 1e6
                self.samples.append((time.monotonic() - self._start, rss, self.cpu_s()))
            except psutil.Error:
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
