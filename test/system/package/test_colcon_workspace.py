# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A ROS user's colcon workspace of the repository, on top of this prefix as its underlay.

The workspace holds the repository's files as a clone has them (the tracked files, and new
ones not yet committed) in ``src/acres_bridge``. In a shell that sourced the prefix's
setup.bash, the README's own ``colcon build`` line builds both packages (colcon from PyPI,
tools/requirements.txt). Then, with ``install/setup.bash`` sourced on top: the overlay wins
(``ros2 pkg prefix``, ``ros2 pkg executables``, both Python packages import from the
workspace); ``ros2 launch acres_bridge emulator_session.launch.py`` from the overlay gives
a subscriber of this test clouds at 10 Hz and ends cleanly on Ctrl-C; and
``colcon test --packages-select acres_bridge`` runs pytest (setup.py's ``test`` extra) over
:data:`QUICK_TESTS`, whose results ``colcon test-result`` finds clean.

tools/test runs this module in each distribution's suite (Kilted on .venv, Jazzy on
.venv-jazzy). The build is the slow part: a few minutes on a busy machine (the README's
line builds acres_interfaces with cmake).
"""

from collections.abc import Iterator
import dataclasses
from pathlib import Path
import shutil
import subprocess
import threading
import xml.etree.ElementTree as ElementTree

import pytest
from support.paths import ROOT
from support.readme import readme_command

from acres_devkit.ports import free_ports
from acres_devkit.ros2_tools import assert_clean_exit
from acres_devkit.ros2_tools import Background
from acres_devkit.ros2_tools import run

pytestmark = [pytest.mark.ros, pytest.mark.ros2_tools, pytest.mark.colcon,
              pytest.mark.timeout(1200)]
# What `colcon test` runs here: the conversions (every message the bridge publishes, built
# from the simulator's frames, with acres_interfaces of the overlay) and the frame parsing.
# A few seconds; the whole suite is tools/test's.
QUICK_TESTS = sorted(str(path.relative_to(ROOT)) for path in
                     (ROOT / 'test' / 'unit' / 'conversions').glob('test_conversions_*.py')
                     ) + ['test/unit/protocol/test_frames.py']
AGENT = 'polaris'
CLOUDS = 21
BUILD_S = 900.0


@dataclasses.dataclass(frozen=True)
class Workspace:
    """A built colcon workspace: its root and the output of the build."""

    root: Path
    build_output: str

    def shell(self, *command: str) -> list[str]:
        """Return ``command`` run in the workspace after ``source install/setup.bash``."""
        return ['bash', '-c', 'cd "$0" && source install/setup.bash && exec "$@"',
                str(self.root), *command]


def _copy_clone(destination: Path) -> None:
    """Copy the files a clone of the working tree has (tracked and new, not ignored)."""
    listed = subprocess.run(['git', '-C', str(ROOT), 'ls-files', '-z', '--cached', '--others',
                             '--exclude-standard'], capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.fail(f'{ROOT} is not a git clone: {listed.stderr.decode(errors="replace")}')
    for name in sorted(set(listed.stdout.decode().split('\0')) - {''}):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue                                   # deleted, not yet committed
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)


@pytest.fixture(scope='module')
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """Lay out the workspace and run the README's colcon build line in it."""
    root = tmp_path_factory.mktemp('acres_ws')
    _copy_clone(root / 'src' / 'acres_bridge')
    line = readme_command('colcon build')
    # COLCON_HOME of its own: no defaults.yaml of this machine's user changes the build.
    built = run(['bash', '-c', f'cd "$0" && {line}', str(root)], timeout_s=BUILD_S,
                COLCON_HOME=str(root / '.colcon'))
    assert built.returncode == 0, f'{line}: exit {built.returncode}\n{built.stdout[-6000:]}'
    assert 'Summary: 2 packages finished' in built.stdout, built.stdout[-3000:]
    yield Workspace(root, built.stdout)


def _ok(workspace: Workspace, *command: str, timeout_s: float = 120.0) -> str:
    result = run(workspace.shell(*command), timeout_s=timeout_s)
    assert result.returncode == 0, f'{" ".join(command)}: exit {result.returncode}\n' + (
        result.stdout[-6000:])
    return result.stdout


def test_the_overlay_wins_over_the_prefix(workspace: Workspace) -> None:
    install = workspace.root / 'install'
    for package in ('acres_bridge', 'acres_interfaces'):
        assert _ok(workspace, 'ros2', 'pkg', 'prefix', package).strip() == str(
            install / package)
    listed = _ok(workspace, 'ros2', 'pkg', 'executables', 'acres_bridge').split()
    scripts = sorted(path.name for path in (install / 'acres_bridge' / 'lib' / 'acres_bridge')
                     .iterdir())
    assert len(scripts) >= 6 and sorted(listed[1::2]) == scripts, (listed, scripts)
    where = _ok(workspace, 'python3', '-c', 'import acres_bridge, acres_interfaces; '
                'print(acres_bridge.__file__); print(acres_interfaces.__file__)').split()
    bridge, interfaces = (Path(path) for path in where[-2:])
    # --symlink-install: acres_bridge runs from build/ (links into src/), as colcon lays it.
    assert workspace.root in bridge.parents and workspace.root / 'src' in bridge.resolve(
        ).parents, bridge
    assert install / 'acres_interfaces' in interfaces.parents, interfaces


def test_ros2_launch_from_the_overlay_gives_clouds_at_10_hz(
        workspace: Workspace, spinning: object) -> None:
    import rclpy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from sensor_msgs.msg import PointCloud2

    stamps: list[float] = []
    arrived = threading.Condition()

    def take(message: PointCloud2) -> None:
        with arrived:
            stamps.append(message.header.stamp.sec + message.header.stamp.nanosec * 1e-9)
            arrived.notify_all()

    node = spinning.add(rclpy.create_node('colcon_overlay_reader',
                                          context=spinning.executor.context))
    node.create_subscription(PointCloud2, f'/{AGENT}/lidar/points', take,
                             QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    control, sensor = free_ports(2)
    launch = Background(workspace.shell('ros2', 'launch', 'acres_bridge',
                                        'emulator_session.launch.py', f'port:={control}',
                                        f'sensor_ports:={sensor}'))
    try:
        with arrived:
            assert arrived.wait_for(lambda: len(stamps) >= CLOUDS or launch.process.poll()
                                    is not None, timeout=120.0), (
                f'{len(stamps)} clouds in 120 s; launch output:\n{launch.tail()}')
            received = list(stamps)
        assert len(received) >= CLOUDS, f'launch ended:\n{launch.tail()}'
        started = {Path(part) for process in launch.descendants()
                   for part in _command_line(process)}
        bridge = workspace.root / 'install' / 'acres_bridge' / 'lib' / 'acres_bridge'
        assert bridge / 'acres_bridge' in started and bridge / 'acres_sim_emulator' in started, (
            sorted(map(str, started)))
        code = launch.interrupt()
        assert_clean_exit(launch, code, ['acres_sim_emulator', 'acres_bridge'])
    finally:
        launch.kill()
    window = received[:CLOUDS]
    rate_hz = (len(window) - 1) / (window[-1] - window[0])
    # Simulation time (the clouds' stamps): every frame the emulator made, however far a busy
    # machine lets it fall behind real time.
    assert 9.0 <= rate_hz <= 11.0, f'{rate_hz:.2f} Hz over {len(window)} clouds: {window}'


def _command_line(process: object) -> list[str]:
    try:
        return process.cmdline()
    except Exception:                                   # the process ended meanwhile
        return []


def test_colcon_test_runs_pytest_and_test_result_is_clean(workspace: Workspace) -> None:
    result_file = workspace.root / 'build' / 'acres_bridge' / 'pytest.xml'
    _ok(workspace, 'colcon', 'test', '--packages-select', 'acres_bridge', '--pytest-args',
        *QUICK_TESTS, timeout_s=600.0)
    suite = ElementTree.parse(result_file).getroot()
    suite = suite if suite.tag == 'testsuite' else suite.find('testsuite')
    counts = {name: int(suite.get(name, '0')) for name in ('tests', 'failures', 'errors',
                                                           'skipped')}
    cases = suite.findall('testcase')
    assert counts['tests'] == len(cases) > 100, counts
    assert counts['failures'] == counts['errors'] == counts['skipped'] == 0, counts
    assert {case.get('name') for case in cases} != {'pytest.missing_result'}, counts
    files = {next(part for part in case.get('classname', '').split('.')
                  if part.startswith('test_')) for case in cases}
    assert files == {Path(name).stem for name in QUICK_TESTS}, files
    summary = _ok(workspace, 'colcon', 'test-result', '--verbose')
    assert f'Summary: {counts["tests"]} tests, 0 errors, 0 failures, 0 skipped' in summary, (
        summary)
