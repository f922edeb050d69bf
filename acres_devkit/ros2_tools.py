# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Run the real ros2 commands and launch_test as a user does: in a shell that sourced setup.bash.

PyPI has no launch or ros2cli: tools/bootstrap.py installs their wheels from a folder the
user names (--ros-tooling, ACRES_ROS_TOOLING). Every test that needs them goes through
:func:`require_tooling` (the ``ros2_tools`` marker, which conftest.py applies before the
test's fixtures, and every command of :func:`run` and :class:`Background` named ``ros2`` or
``launch_test``): without them the test is skipped with one reason, :data:`SKIP_REASON`,
which names the fix. Under ``CI=true``, or when the prefix was made with the tools or the
variable is set, a missing tool is a failure instead. Every command gets
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and the run's ROS_DOMAIN_ID (set by conftest.py).
"""

from collections.abc import Iterable
from collections.abc import Sequence
import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from acres_devkit.environment import in_ci

ROOT = Path(__file__).resolve().parents[1]
PREFIX = Path(sys.prefix)
ENV_SCRIPT = PREFIX / 'setup.bash'
TOOLING_VARIABLE = 'ACRES_ROS_TOOLING'
TOOL_COMMANDS = frozenset(('ros2', 'launch_test'))
# The one reason of every skip for want of the tools (tools/bootstrap.py prints the same fix).
SKIP_REASON = ('ros2 launch and the ros2 command are not in this prefix: set '
               f'{TOOLING_VARIABLE}=DIR, a folder of the launch and ros2cli wheels, and run '
               'tools/bootstrap.py or tools/test again')
PACKAGE = 'acres_bridge'
# What a process prints when Python dies of an exception (a KeyboardInterrupt included).
TRACEBACK = 'Traceback (most recent call last)'
# Fast DDS prints its own log on the standard output of any process, coloured and dated: on a
# busy machine, for example, a shared-memory port it could not lock (it takes another). What a
# tool prints is read without those lines; run() keeps them in ``stderr``.
_FAST_DDS_LOG_LINE = re.compile(r'^\x1b\[[0-9;]*m\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ .*(?:\n|$)',
                                re.MULTILINE)


def require_tooling() -> None:
    """Skip the test when the prefix lacks the ros2 tools; fail when it should have them."""
    missing = [str(path) for path in (ENV_SCRIPT, PREFIX / 'bin' / 'ros2',
                                      PREFIX / 'bin' / 'launch_test') if not path.is_file()]
    if not missing:
        return
    message = f'the ros2 tools are missing from {PREFIX}: {", ".join(missing)}'
    if in_ci():
        pytest.fail(f'{message} (CI=true: .ci/run sets {TOOLING_VARIABLE} to the folder of '
                    'their wheels)')
    if os.environ.get(TOOLING_VARIABLE):
        pytest.fail(f'{message}, and {TOOLING_VARIABLE} is set: run tools/bootstrap.py')
    if (PREFIX / '.acres-setup' / 'tooling.stamp').is_file():
        pytest.fail(f'{message}, though tools/bootstrap.py installed them: run it again')
    pytest.skip(SKIP_REASON)


def environment(**extra: str) -> dict[str, str]:
    """Return the environment of a command: this run's graph, unbuffered Python output."""
    env = dict(os.environ)
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', PYTHONUNBUFFERED='1',
               ROS_DOMAIN_ID=os.environ['ROS_DOMAIN_ID'])
    env.update(extra)
    return env


def sourced(args: Sequence[str]) -> list[str]:
    """
    Return ``args`` as a command run by bash after ``source <prefix>/setup.bash``.

    A ``ros2`` or ``launch_test`` command goes through :func:`require_tooling` first.
    """
    if args and args[0] in TOOL_COMMANDS:
        require_tooling()
    return ['bash', '-c', 'source "$0" && exec "$@"', str(ENV_SCRIPT), *args]


def run(args: Sequence[str], timeout_s: float = 60.0, **extra_env: str) -> (
        subprocess.CompletedProcess):
    """
    Run a command to its end; its output (stdout and stderr) is in ``stdout``.

    Fast DDS's own log lines are taken out of ``stdout`` and kept in ``stderr``.
    """
    result = subprocess.run(sourced(args), env=environment(**extra_env), cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=timeout_s, check=False)
    result.stderr = ''.join(_FAST_DDS_LOG_LINE.findall(result.stdout))
    result.stdout = _FAST_DDS_LOG_LINE.sub('', result.stdout)
    return result


class Background:
    """
    A command in a process group of its own (as a terminal runs it), its output collected.

    :param args: the command (run after sourcing setup.bash).
    :param wrapper: what runs the shell (e.g. ``ip netns exec NAME``); nothing by default.
    :param env: the whole environment instead of :func:`environment`'s.
    :param stdin: give the command a pipe to write to (:meth:`send`).
    :param extra_env: more environment variables.
    """

    def __init__(self, args: Sequence[str], *, wrapper: Sequence[str] = (),
                 env: dict[str, str] | None = None, stdin: bool = False,
                 **extra_env: str) -> None:
        self.args = list(args)
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            [*wrapper, *sourced(args)], env=environment(**extra_env) if env is None else env,
            cwd=ROOT, text=True, errors='replace', stdin=subprocess.PIPE if stdin else None,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self._reader = threading.Thread(target=self._read, name='ros2-output', daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def send(self, line: str) -> None:
        """Write one line to the command's standard input (started with ``stdin=True``)."""
        self.process.stdin.write(line + '\n')
        self.process.stdin.flush()

    def lines(self, start: int = 0) -> list[str]:
        """Return the lines of output from index ``start`` on."""
        with self._changed:
            return self._lines[start:]

    @property
    def output(self) -> str:
        with self._changed:
            return ''.join(self._lines)

    def tail(self, lines: int = 40) -> str:
        with self._changed:
            return ''.join(self._lines[-lines:])

    def wait_for(self, pattern: str, timeout_s: float = 30.0,
                 give_up: str = r'process has died|Traceback') -> re.Match:
        """
        Wait for a line matching ``pattern``; fail with the output's tail.

        A line matching ``give_up`` (a process of the launch died) fails at once.
        """
        expression = re.compile(pattern)
        failure = re.compile(give_up) if give_up else None
        deadline = time.monotonic() + timeout_s
        checked = 0
        with self._changed:
            while True:
                for line in self._lines[checked:]:
                    match = expression.search(line)
                    if match:
                        return match
                    if failure is not None and failure.search(line):
                        deadline = 0.0
                checked = len(self._lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    break
                self._changed.wait(min(left, 0.5))
        pytest.fail(f'{" ".join(self.args)}: no line matching {pattern!r} within {timeout_s} s '
                    f'(exit code {self.process.poll()}); output:\n{self.tail()}')

    def descendants(self) -> list:
        """Return the psutil processes below the command, and the command itself."""
        import psutil
        try:
            top = psutil.Process(self.process.pid)
            return [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def interrupt(self, timeout_s: float = 30.0) -> int:
        """
        Send SIGINT to the process group, as Ctrl-C in a terminal does, and wait for the end.

        :return: the exit code of the command.
        :raises AssertionError: when a process of the command is still alive afterwards.
        """
        import psutil
        started = self.descendants()
        os.killpg(self.process.pid, signal.SIGINT)
        code = self.wait(timeout_s, 'after SIGINT')
        _, alive = psutil.wait_procs(started, timeout=5.0)
        assert not alive, f'left running after Ctrl-C: {[item.pid for item in alive]}'
        assert not _group_members(self.process.pid), 'a process of the group is left running'
        return code

    def wait(self, timeout_s: float = 60.0, after: str = '') -> int:
        """Wait for the command to end; return its exit code, or kill it and fail."""
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f'{" ".join(self.args)} still runs {timeout_s} s {after}; output:\n'
                        f'{self.tail()}')
        self._reader.join(timeout_s)
        return code

    def kill(self) -> None:
        """Kill the whole group (clean-up after a failure)."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(10.0)


def _group_members(group: int) -> list[int]:
    import psutil
    members = []
    for item in psutil.process_iter():
        try:
            if os.getpgid(item.pid) == group:
                members.append(item.pid)
        except (ProcessLookupError, PermissionError):
            pass
    return members


def assert_clean_exit(command: Background, code: int, processes: Iterable[str] = ()) -> None:
    """Exit 0, no traceback, and launch saw each named process finish cleanly."""
    output = command.output
    assert code == 0, f'exit code {code}; output:\n{command.tail()}'
    assert TRACEBACK not in output, output
    assert 'process has died' not in output, output
    for name in processes:
        assert re.search(rf'\[{re.escape(name)}-\d+\]: process has finished cleanly', output), (
            f'{name} did not finish cleanly; output:\n{command.tail()}')


def wait_for_nodes(names: Iterable[str], timeout_s: float = 60.0) -> list[str]:
    """
    Run ``ros2 node list`` until every name is listed, as a user would; return the listing.

    The commands ask the ros2 daemon (the tools' default; :func:`start_daemon`), which keeps
    the graph between commands, so a node shows as soon as the daemon has discovered it.
    """
    wanted = set(names)
    deadline = time.monotonic() + timeout_s
    listed: list[str] = []
    while time.monotonic() < deadline:
        result = run(['ros2', 'node', 'list'])
        listed = result.stdout.split()
        if wanted <= set(listed):
            return listed
    pytest.fail(f'ros2 node list shows {listed}, not {sorted(wanted)}, after {timeout_s} s')


def start_daemon() -> None:
    """Start the ros2 daemon of this domain, as the first ros2 command of a user's shell does."""
    result = run(['ros2', 'daemon', 'start'], timeout_s=30.0)
    assert result.returncode == 0, f'ros2 daemon start: exit {result.returncode}\n' + (
        result.stdout)


def stop_daemon() -> None:
    """Stop the ros2 daemon of this domain (any command without --no-daemon starts one)."""
    run(['ros2', 'daemon', 'stop'], timeout_s=30.0)


def param_list(node: str, timeout_s: float = 30.0) -> list[str]:
    """Return ``ros2 param list`` of a node; it has no --timeout, so retry while discovery lags."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = run(['ros2', 'param', 'list', node])
        if 'Node not found' not in result.stdout or time.monotonic() > deadline:
            break
    assert result.returncode == 0, f'ros2 param list {node}: exit {result.returncode}\n' + (
        result.stdout)
    return result.stdout.split()
