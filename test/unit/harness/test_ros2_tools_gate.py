# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The one gate of the tests that need the ros2 tools (acres_devkit/ros2_tools.require_tooling).

A prefix without the tools skips them with one reason that names the fix; CI (``CI=true``), a
run that named the tools' folder and a prefix made with them fail instead, so that a missing
tool never hides as a skip where the tools belong. Runs on any prefix, tools or not.
"""

import os
from pathlib import Path
import subprocess
import sys

import pytest
from support.paths import ROOT

from acres_devkit import ros2_tools


@pytest.fixture
def bare_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the gate at a prefix without the tools, outside CI, with no folder named."""
    monkeypatch.setattr(ros2_tools, 'PREFIX', tmp_path)
    monkeypatch.setattr(ros2_tools, 'ENV_SCRIPT', tmp_path / 'setup.bash')
    monkeypatch.delenv('CI', raising=False)
    monkeypatch.delenv(ros2_tools.TOOLING_VARIABLE, raising=False)
    return tmp_path


def test_a_prefix_without_the_tools_skips_with_the_one_reason(bare_prefix: Path) -> None:
    with pytest.raises(pytest.skip.Exception) as skipped:
        ros2_tools.require_tooling()
    assert skipped.value.msg == ros2_tools.SKIP_REASON
    assert 'ACRES_ROS_TOOLING=DIR' in ros2_tools.SKIP_REASON


def test_every_ros2_command_goes_through_the_gate(bare_prefix: Path) -> None:
    for command in (['ros2', 'pkg', 'prefix', 'acres_bridge'], ['launch_test', 'x.py']):
        with pytest.raises(pytest.skip.Exception, match='ACRES_ROS_TOOLING'):
            ros2_tools.sourced(command)
    assert ros2_tools.sourced([sys.executable, '-V'])[-2:] == [sys.executable, '-V']


@pytest.mark.parametrize('ci', ['true', 'True', '1'])
def test_ci_fails_on_a_missing_tool(bare_prefix: Path, monkeypatch: pytest.MonkeyPatch,
                                    ci: str) -> None:
    monkeypatch.setenv('CI', ci)
    with pytest.raises(pytest.fail.Exception, match='CI=true: .ci/run sets ACRES_ROS_TOOLING'):
        ros2_tools.require_tooling()


def test_a_named_folder_or_a_prefix_made_with_the_tools_fails(
        bare_prefix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ros2_tools.TOOLING_VARIABLE, str(bare_prefix / 'wheels'))
    with pytest.raises(pytest.fail.Exception, match='is set: run tools/bootstrap.py'):
        ros2_tools.require_tooling()
    monkeypatch.delenv(ros2_tools.TOOLING_VARIABLE)
    (bare_prefix / '.acres-setup').mkdir()
    (bare_prefix / '.acres-setup' / 'tooling.stamp').write_text('')
    with pytest.raises(pytest.fail.Exception, match='bootstrap.py installed them'):
        ros2_tools.require_tooling()


def test_a_prefix_with_the_tools_passes(bare_prefix: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('CI', 'true')
    for path in (bare_prefix / 'setup.bash', bare_prefix / 'bin' / 'ros2',
                 bare_prefix / 'bin' / 'launch_test'):
        path.parent.mkdir(exist_ok=True)
        path.write_text('')
    ros2_tools.require_tooling()


def test_the_marker_skips_before_the_fixtures(tmp_path: Path) -> None:
    """conftest.py applies the gate to a marked test before any fixture of it runs."""
    probe = tmp_path / 'test_probe.py'
    probe.write_text('import pytest\n\n\n'
                     '@pytest.fixture\n'
                     'def started(tmp_path):\n'
                     f'    open({str(tmp_path / "fixture-ran")!r}, "w").close()\n\n\n'
                     '@pytest.mark.ros2_tools\n'
                     'def test_marked(started):\n'
                     '    pass\n')
    env = {key: value for key, value in os.environ.items()
           if key not in ('CI', ros2_tools.TOOLING_VARIABLE)}
    env['PYTHONPATH'] = str(ROOT / 'test')
    # The run's gate looks at an empty prefix; test/conftest.py is loaded as a plugin.
    script = ('import sys, pytest; from acres_devkit import ros2_tools; '
              f'ros2_tools.PREFIX = ros2_tools.Path({str(tmp_path)!r}); '
              'ros2_tools.ENV_SCRIPT = ros2_tools.PREFIX / "setup.bash"; '
              'sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "-p", "conftest", '
              '"-p", "no:launch_testing", "-p", "no:launch_ros", '      # as setup.cfg says
              f'{str(probe)!r}]))')
    result = subprocess.run([sys.executable, '-c', script], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '1 skipped' in result.stdout, result.stdout
    assert ' '.join(ros2_tools.SKIP_REASON.split()) in ' '.join(result.stdout.split()), (
        result.stdout)
    assert not (tmp_path / 'fixture-ran').exists(), 'the fixture ran before the gate'
