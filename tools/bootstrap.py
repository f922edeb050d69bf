# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Make a ROS 2 prefix in a virtual environment, from PyPI, without a ROS distribution.

Steps, each skipped when its inputs have not changed since the last run (a stamp per step
under <venv>/.acres-setup/):

1. the venv itself, with the running python3 (3.11 to 3.13);
2. the distribution's ROS wheels and build tools (tools/requirements-ros.txt for Kilted,
   tools/requirements-ros-jazzy.txt for Jazzy) and tools/requirements.txt (numpy, the test
   tools...);
3. the wheels' CMake files name their build machine's Python (/opt/python/cp3XX-cp3XX/...):
   those paths are rewritten to this interpreter's include directory and numpy's;
4. the interface packages PyPI lacks, built with cmake against the venv and installed into it:
   tf2_msgs, composition_interfaces and simulation_interfaces (shape 1.x or 2.x) from
   tools/interfaces/, and the project's acres_interfaces from msg/. A build is cached under
   ~/.cache/acres_bridge/interfaces/, keyed by its definitions, the Python version and the
   ROS requirements, so a warm machine restores it in a second;
5. the launch, launch_ros, launch_testing and ros2cli wheels of a folder the user names
   (--ros-tooling DIR, or the environment variable ACRES_ROS_TOOLING), with --no-deps, plus
   tools/requirements-tooling.txt. PyPI has none of them; without the folder the prefix has
   no `ros2` command and no launch, and the set-up says so in one line;
6. acres_bridge itself, editable, laid out as colcon lays out a package (run every time, it
   is cheap): setup.py's console scripts in lib/acres_bridge/, its data files linked file by
   file into share/, and <venv>/setup.bash, which sets the environment of the ros2 commands;
   and acres_devkit/ (the development kit of the tests, benchmarks and demo, which setup.py
   does not install) linked into the venv's site-packages, so that tools/' scripts import it
   from any directory.

Run as `python3 tools/bootstrap.py [--distro kilted|jazzy] [--venv DIR]
[--simulation-interfaces 1|2] [--ros-tooling DIR]`. It stops at the first failing step with
the step's name, the distribution and the tail of its log.
"""

import argparse
from dataclasses import dataclass
import fcntl
import hashlib
import json
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
import time

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / 'tools' / 'requirements.txt'
TOOLING_VARIABLE = 'ACRES_ROS_TOOLING'
TOOLING_REQUIREMENTS = ROOT / 'tools' / 'requirements-tooling.txt'
PACKAGE = 'acres_bridge'
DEVKIT = 'acres_devkit'
CACHE = Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'acres_bridge'
WHEEL_PYTHON = re.compile(rb'/opt/python/cp3\d+-cp3\d+')
SUPPORTED_PYTHONS = ((3, 11), (3, 12), (3, 13))


@dataclass(frozen=True)
class Distro:
    """A ROS 2 distribution the set-up can make a prefix of."""

    name: str
    title: str
    requirements: Path
    default_venv: str


DISTROS = {
    'kilted': Distro('kilted', 'Kilted', ROOT / 'tools' / 'requirements-ros.txt', '.venv'),
    'jazzy': Distro('jazzy', 'Jazzy', ROOT / 'tools' / 'requirements-ros-jazzy.txt',
                    '.venv-jazzy'),
}


# What the set-up says when no folder of ROS tools is named (one line: tools/test shows it).
NO_TOOLING = ('ros2 launch and the ros2 command are not installed (PyPI has no launch or '
              f'ros2cli): give --ros-tooling DIR or set {TOOLING_VARIABLE}=DIR, a folder of '
              'their wheels; with a ROS 2 distribution, source its setup.bash instead')


class SetupError(RuntimeError):
    """A step failed; the message names it."""


def log(message: str) -> None:
    print(f'[setup] {message}', flush=True)


def digest(*parts: bytes | str | Path) -> str:
    """Hash strings, bytes, files and whole directories (names and contents) together."""
    sha = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            files = [part] if part.is_file() else sorted(p for p in part.rglob('*') if p.is_file())
            for path in files:
                sha.update(str(path.relative_to(part if part.is_dir() else part.parent)).encode())
                sha.update(path.read_bytes())
        else:
            sha.update(part.encode() if isinstance(part, str) else part)
        sha.update(b'\0')
    return sha.hexdigest()[:20]


def run(step: str, args: list[str], *, env: dict | None = None, log_path: Path | None = None,
        cwd: Path | None = None) -> None:
    """Run a command; on failure raise SetupError with the tail of its output."""
    if log_path is None:
        result = subprocess.run(args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        output = result.stdout
    else:
        with open(log_path, 'w') as out:
            result = subprocess.run(args, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        output = log_path.read_text(errors='replace')
    if result.returncode != 0:
        tail = '\n'.join(output.splitlines()[-40:])
        where = f' (full log: {log_path})' if log_path else ''
        raise SetupError(f'step "{step}" failed: {" ".join(map(str, args))}{where}\n{tail}')


class Prefix:
    """A venv that is also a ROS 2 prefix."""

    def __init__(self, venv: Path, python: str, distro: Distro):
        self.venv = venv
        self.distro = distro
        self.base_python = python
        self.python = venv / 'bin' / 'python'
        self.stamps = venv / '.acres-setup'

    def stamp_matches(self, step: str, key: str) -> bool:
        path = self.stamps / f'{step}.stamp'
        return path.is_file() and path.read_text().strip() == key

    def write_stamp(self, step: str, key: str) -> None:
        self.stamps.mkdir(parents=True, exist_ok=True)
        (self.stamps / f'{step}.stamp').write_text(key + '\n')

    def python_version(self) -> str:
        out = subprocess.run([str(self.python), '-c',
                              'import sys; print("%d.%d" % sys.version_info[:2])'],
                             capture_output=True, text=True, env=self.plain_env())
        return out.stdout.strip()

    def plain_env(self) -> dict:
        env = dict(os.environ)
        for name in ('_ROS_WHEELS_BOOTSTRAP_COMPLETE', 'PYTHONPATH', 'AMENT_PREFIX_PATH',
                     'CMAKE_PREFIX_PATH', 'PYTHONHOME'):
            env.pop(name, None)
        return env

    def build_env(self) -> dict:
        env = self.plain_env()
        env['PATH'] = f'{self.venv / "bin"}{os.pathsep}{env.get("PATH", "")}'
        env['AMENT_PREFIX_PATH'] = str(self.venv)
        env['CMAKE_PREFIX_PATH'] = str(self.venv)
        env['VIRTUAL_ENV'] = str(self.venv)
        return env

    def lock(self) -> None:
        """Wait until no other set-up works on this venv (two tools/test runs at once)."""
        self.venv.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(self.venv, os.O_RDONLY)  # held until this process ends
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f'waiting for another set-up of {self.venv} to finish')
            fcntl.flock(self._lock, fcntl.LOCK_EX)

    # --- steps -----------------------------------------------------------------------------

    def ensure_venv(self) -> None:
        marker = self.stamps / 'distro'
        if self.python.exists():
            # A prefix made before --distro existed is a Kilted one.
            made_for = marker.read_text().strip() if marker.is_file() else 'kilted'
            if made_for != self.distro.name:
                raise SetupError(f'{self.venv} is a ROS 2 {DISTROS[made_for].title} prefix; '
                                 f'give --venv another directory for {self.distro.title}')
            if not marker.is_file():
                self.stamps.mkdir(parents=True, exist_ok=True)
                marker.write_text(self.distro.name + '\n')
            return
        log(f'creating {self.venv} with {self.base_python}')
        run('venv', [self.base_python, '-m', 'venv', str(self.venv)])
        self.stamps.mkdir(parents=True, exist_ok=True)
        marker.write_text(self.distro.name + '\n')
        run('venv', [str(self.python), '-m', 'pip', 'install', '-q', '--upgrade', 'pip'],
            env=self.plain_env())

    def ensure_requirements(self) -> str:
        """Install the requirements; return the key of the ROS part, which builds depend on."""
        ros_requirements = self.distro.requirements
        key = digest(REQUIREMENTS, ros_requirements, self.python_version())
        ros_key = digest(ros_requirements, self.python_version())
        if self.stamp_matches('requirements', key):
            return ros_key
        log(f'installing {ros_requirements.relative_to(ROOT)} and '
            f'{REQUIREMENTS.relative_to(ROOT)} (ROS 2 {self.distro.title} wheels, numpy, tools)')
        self.stamps.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        run('requirements', [str(self.python), '-m', 'pip', 'install', '-q',
                             '--disable-pip-version-check', '-r', str(ros_requirements),
                             '-r', str(REQUIREMENTS)],
            env=self.plain_env(), log_path=self.stamps / 'pip.log')
        log(f'requirements installed in {time.monotonic() - started:.0f} s')
        self.rewrite_wheel_cmake_paths()
        self.write_stamp('requirements', key)
        return ros_key

    def rewrite_wheel_cmake_paths(self) -> None:
        """Point the wheels' CMake exports at this interpreter instead of their build machine's."""
        probe = ('import sysconfig, numpy; '
                 'print(sysconfig.get_paths()["include"]); print(numpy.get_include())')
        out = subprocess.run([str(self.python), '-c', probe], capture_output=True, text=True,
                             env=self.plain_env())
        if out.returncode != 0:
            raise SetupError(f'step "cmake paths" failed: {out.stderr.strip()}')
        python_include, numpy_include = out.stdout.split()
        patterns = [
            (re.compile(rb'/opt/python/cp3\d+-cp3\d+/lib/python3\.\d+/site-packages/numpy/_core/'
                        rb'include'), numpy_include.encode()),
            (re.compile(rb'/opt/python/cp3\d+-cp3\d+/include/python3\.\d+'),
             python_include.encode()),
        ]
        changed = 0
        for path in self.venv.rglob('*.cmake'):
            data = path.read_bytes()
            if not WHEEL_PYTHON.search(data):
                continue
            for pattern, replacement in patterns:
                data = pattern.sub(replacement, data)
            path.write_bytes(data)
            changed += 1
        if changed:
            log(f'pointed {changed} CMake files of the wheels at this Python')

    def ensure_interface(self, name: str, source: Path, requirements_key: str,
                         extra_key: str = '') -> str:
        key = digest(source, self.python_version(), requirements_key, extra_key, name)
        if self.stamp_matches(f'interface-{name}', key):
            return key
        cached = CACHE / 'interfaces' / f'{name}-{key}'
        cached.parent.mkdir(parents=True, exist_ok=True)
        # Prefixes made side by side (tools/test makes .venv and .venv-simif2 at once) share
        # builds: one builds an entry while the other waits, then restores it.
        with open(cached.parent / f'{cached.name}.lock', 'w') as entry_lock:
            fcntl.flock(entry_lock, fcntl.LOCK_EX)
            if not (cached / 'done').is_file():
                self.build_interface(name, source, cached)
            else:
                log(f'{name}: restoring the cached build')
            self.install_cached(cached)
        self.write_stamp(f'interface-{name}', key)
        return key

    def build_interface(self, name: str, source: Path, cached: Path) -> None:
        for tool in ('cmake', 'make', 'c++'):
            if shutil.which(tool) is None:
                raise SetupError(f'step "{name}" needs {tool}; install it '
                                 f'(Debian: apt-get install cmake make g++)')
        build = CACHE / 'build' / f'{name}-{self.venv.name}-{os.getpid()}'
        shutil.rmtree(build, ignore_errors=True)
        shutil.rmtree(cached, ignore_errors=True)
        build.mkdir(parents=True)
        started = time.monotonic()
        log(f'{name}: building from {source.relative_to(ROOT)} against ROS 2 '
            f'{self.distro.title} (cmake, a minute or two)')
        env = self.build_env()
        run(name, ['cmake', '-S', str(source), '-B', str(build),
                   f'-DCMAKE_INSTALL_PREFIX={self.venv}', f'-DPython3_EXECUTABLE={self.python}',
                   '-DBUILD_TESTING=OFF', '-DCMAKE_BUILD_TYPE=Release'],
            env=env, log_path=build / 'configure.log')
        run(name, ['cmake', '--build', str(build), '--parallel', str(os.cpu_count() or 2)],
            env=env, log_path=build / 'build.log')
        staging = cached / 'tree'
        install_env = dict(env, DESTDIR=str(staging))
        run(name, ['cmake', '--install', str(build)], env=install_env,
            log_path=build / 'install.log')
        (cached / 'prefix').write_text(str(self.venv))
        (cached / 'done').write_text(f'{time.monotonic() - started:.0f} s\n')
        shutil.rmtree(build, ignore_errors=True)
        log(f'{name}: built in {time.monotonic() - started:.0f} s')

    def install_cached(self, cached: Path) -> None:
        """Copy a staged install into the venv, moving its prefix if it was built elsewhere."""
        old_prefix = (cached / 'prefix').read_text().strip()
        staged = cached / 'tree' / old_prefix.lstrip('/')
        if not staged.is_dir():
            raise SetupError(f'the cached build {cached} is incomplete; delete it and run again')
        for path in staged.rglob('*'):
            if path.is_dir():
                continue
            target = self.venv / path.relative_to(staged)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if old_prefix != str(self.venv) and b'\0' not in data[:8192]:
                data = data.replace(old_prefix.encode(), str(self.venv).encode())
            if target.exists() or target.is_symlink():
                target.unlink()
            target.write_bytes(data)
            shutil.copymode(path, target)

    def ensure_tooling(self, folder: Path | None) -> None:
        """Install the launch and ros2cli wheels of ``folder``; say in one line when none."""
        if folder is None:
            if (self.venv / 'bin' / 'ros2').is_file():
                log('no --ros-tooling folder: the ros2 tools installed earlier are kept')
            else:
                log(NO_TOOLING)
            return
        wheels = sorted(folder.glob('*.whl')) if folder.is_dir() else []
        if not wheels:
            raise SetupError(f'step "tooling" failed: no wheels in {folder} (named by '
                             f'--ros-tooling or {TOOLING_VARIABLE})')
        key = digest(TOOLING_REQUIREMENTS, *wheels, self.python_version())
        if self.stamp_matches('tooling', key):
            return
        log(f'installing the {len(wheels)} wheels of {folder} (launch, ros2cli)')
        # --no-deps: they name ament_index_python, which the prefix has as
        # ros-ament-index-python; what else they need is in the requirements file.
        run('tooling', [str(self.python), '-m', 'pip', 'install', '-q', '--no-deps',
                        '--force-reinstall', *map(str, wheels)],
            env=self.plain_env(), log_path=self.stamps / 'tooling.log')
        run('tooling', [str(self.python), '-m', 'pip', 'install', '-q', '-r',
                        str(TOOLING_REQUIREMENTS)],
            env=self.plain_env(), log_path=self.stamps / 'tooling-requirements.log')
        self.write_stamp('tooling', key)

    def ensure_project(self, requirements_key: str) -> None:
        key = digest(ROOT / 'setup.py', ROOT / 'setup.cfg', ROOT / 'package.xml',
                     requirements_key, str(ROOT))
        if not self.stamp_matches('project', key):
            log(f'installing {PACKAGE} (editable)')
            run('project', [str(self.python), '-m', 'pip', 'install', '-q', '--no-deps',
                            '--no-build-isolation', '--disable-pip-version-check', '-e',
                            str(ROOT)],
                env=self.plain_env(), log_path=self.stamps / 'project.log')
            self.write_stamp('project', key)
        package = self.read_setup_py()
        self.write_executables(package['console_scripts'])
        self.link_data_files(package['data_files'])
        self.link_devkit()
        self.write_environment_script()

    def read_setup_py(self) -> dict:
        """Return setup.py's console scripts and data files, as its setup() call gets them."""
        probe = (
            'import json, sys, setuptools\n'
            'seen = {}\n'
            'setuptools.setup = lambda **kwargs: seen.update(kwargs)\n'
            'sys.argv = ["setup.py"]\n'
            'exec(compile(open("setup.py").read(), "setup.py", "exec"),\n'
            '     {"__name__": "__main__"})\n'
            'print(json.dumps({"console_scripts": seen.get("entry_points", {})'
            '.get("console_scripts", []), "data_files": seen.get("data_files", [])}))\n')
        out = subprocess.run([str(self.python), '-c', probe], cwd=ROOT, capture_output=True,
                             text=True, env=self.plain_env())
        if out.returncode != 0:
            raise SetupError(f'step "layout" failed: reading setup.py: {out.stderr.strip()}')
        return json.loads(out.stdout.strip().splitlines()[-1])

    def write_executables(self, console_scripts: list[str]) -> None:
        """
        Write each console script into lib/acres_bridge/, where colcon puts them.

        `ros2 run` and launch_ros's Node(executable=...) look there; an editable pip install
        only writes bin/. Scripts of entry points that setup.py no longer has are removed.
        """
        lib = self.venv / 'lib' / PACKAGE
        lib.mkdir(parents=True, exist_ok=True)
        wanted = {}
        for entry in console_scripts:
            name, _, target = (part.strip() for part in entry.partition('='))
            module, _, function = target.partition(':')
            wanted[name] = (
                f'#!{self.python}\n'
                f'# {SCRIPT_MARK} from the entry point {name} = {target}\n'
                'import sys\n\n'
                f'from {module} import {function.split(".")[0]}\n\n'
                "if __name__ == '__main__':\n"
                f'    sys.exit({function}())\n')
        for path in lib.iterdir():
            if path.name not in wanted and SCRIPT_MARK in path.read_text(errors='replace'):
                path.unlink()
        for name, text in wanted.items():
            write_if_changed(lib / name, text, mode=0o755)

    def link_data_files(self, data_files: list) -> None:
        """
        Link setup.py's data files into the prefix one by one, as colcon's --symlink-install.

        An editable pip install leaves data_files out, but ament_index (and so
        `ros2 launch acres_bridge ...` and the tests of the launch files) looks for them there.
        The directories are real ones, which os.walk enters (it does not follow a directory
        symlink); links to source files that setup.py no longer names are removed.
        """
        for destination, files in data_files:
            directory = self.venv / destination
            if directory.is_symlink():
                # An older set-up linked the whole directory: put a real one in its place.
                fresh = directory.with_name(directory.name + f'.new-{os.getpid()}')
                fresh.mkdir(parents=True)
                stale = directory.with_name(directory.name + f'.old-{os.getpid()}')
                directory.rename(stale)
                fresh.rename(directory)
                stale.unlink()
            directory.mkdir(parents=True, exist_ok=True)
            wanted = {Path(name).name: (ROOT / name).resolve() for name in files}
            for path in directory.iterdir():
                if path.is_symlink() and path.name not in wanted:
                    target = Path(os.readlink(path))
                    if not path.exists() or ROOT in target.parents:
                        path.unlink()
            for name, source in wanted.items():
                link = directory / name
                if link.is_symlink() and Path(os.readlink(link)) == source:
                    continue
                temporary = directory / f'.{name}.{os.getpid()}'
                temporary.symlink_to(source)
                temporary.replace(link)

    def link_devkit(self) -> None:
        """
        Link acres_devkit/ into the venv's site-packages (tools/ and test/ import it).

        setup.py leaves it out, so that neither pip nor colcon installs it; the link makes it
        importable by this prefix's Python from anywhere, the repository root staying off
        sys.path.
        """
        out = subprocess.run([str(self.python), '-c',
                              'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                             capture_output=True, text=True, env=self.plain_env())
        if out.returncode != 0:
            raise SetupError(f'step "devkit" failed: {out.stderr.strip()}')
        link = Path(out.stdout.strip()) / DEVKIT
        source = ROOT / DEVKIT
        if link.is_symlink() and Path(os.readlink(link)) == source:
            return
        temporary = link.with_name(f'.{DEVKIT}.{os.getpid()}')
        temporary.symlink_to(source)
        temporary.replace(link)

    def write_environment_script(self) -> None:
        """Write <venv>/setup.bash, the environment of the ros2 commands for this prefix."""
        text = ENVIRONMENT_SCRIPT.format(prefix=self.venv, distro=self.distro.name,
                                         title=self.distro.title)
        write_if_changed(self.venv / 'setup.bash', text, mode=0o644)


SCRIPT_MARK = 'written by tools/bootstrap.py'

ENVIRONMENT_SCRIPT = '''\
# The environment of the ros2 commands for this ROS 2 {title} prefix, as a distribution's
# setup.bash sets it: `source {prefix}/setup.bash` (bash, zsh or sh). Written by
# tools/bootstrap.py. Sourcing another prefix made by it replaces this one.
_acres_strip() {{
  printf '%s' ":$1:" | sed -e "s|:$2:|:|g" -e 's|^:*||' -e 's|:*$||'
}}
_acres_prepend() {{
  _acres_rest=$(_acres_strip "$1" "{prefix}$2")
  if [ -n "${{ACRES_PREFIX:-}}" ]; then
    _acres_rest=$(_acres_strip "$_acres_rest" "$ACRES_PREFIX$2")
  fi
  printf '%s' "{prefix}$2${{_acres_rest:+:$_acres_rest}}"
}}
AMENT_PREFIX_PATH=$(_acres_prepend "${{AMENT_PREFIX_PATH:-}}" "")
CMAKE_PREFIX_PATH=$(_acres_prepend "${{CMAKE_PREFIX_PATH:-}}" "")
PATH=$(_acres_prepend "${{PATH:-}}" /bin)
export AMENT_PREFIX_PATH CMAKE_PREFIX_PATH PATH
export ROS_DISTRO={distro} ROS_VERSION=2 ROS_PYTHON_VERSION=3
export ACRES_PREFIX={prefix}
unset -f _acres_strip _acres_prepend
unset _acres_rest
'''


def write_if_changed(path: Path, text: str, *, mode: int) -> None:
    """Write a file whole (by a rename: no reader sees half of it) unless it holds text."""
    if path.is_file() and not path.is_symlink() and path.read_text() == text:
        return
    temporary = path.with_name(f'.{path.name}.{os.getpid()}')
    temporary.write_text(text)
    temporary.chmod(mode)
    temporary.replace(path)


def choose_python(distro: Distro) -> str:
    version = sys.version_info[:2]
    if version not in SUPPORTED_PYTHONS:
        raise SetupError(f'step "python" failed: Python {version[0]}.{version[1]} has no ROS 2 '
                         f'{distro.title} wheels; run this with Python 3.11, 3.12 or 3.13')
    return sys.executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--distro', choices=sorted(DISTROS), default='kilted',
                        help='the ROS 2 distribution of the prefix (default: kilted)')
    parser.add_argument('--venv', type=Path,
                        help='the prefix to make (default: .venv for kilted, .venv-jazzy for '
                             'jazzy)')
    parser.add_argument('--simulation-interfaces', choices=('1', '2'), default='1',
                        help='the shape of simulation_interfaces: 1 (1.6.1, Humble to Kilted) '
                             'or 2 (2.1.0)')
    parser.add_argument('--ros-tooling', type=Path, metavar='DIR',
                        default=os.environ.get(TOOLING_VARIABLE) or None,
                        help='a folder of the launch, launch_ros, launch_testing and ros2cli '
                             f'wheels to install (default: ${TOOLING_VARIABLE}; without it '
                             'the prefix has no ros2 command)')
    args = parser.parse_args(argv)
    distro = DISTROS[args.distro]
    venv = args.venv or ROOT / distro.default_venv
    started = time.monotonic()
    try:
        prefix = Prefix(venv.resolve(), choose_python(distro), distro)
        prefix.lock()
        prefix.ensure_venv()
        requirements_key = prefix.ensure_requirements()
        interfaces = ROOT / 'tools' / 'interfaces'
        prefix.ensure_interface('tf2_msgs', interfaces / 'tf2_msgs', requirements_key)
        simif_key = prefix.ensure_interface(
            'simulation_interfaces',
            interfaces / f'simulation_interfaces-{args.simulation_interfaces}',
            requirements_key)
        prefix.ensure_interface('acres_interfaces', ROOT / 'msg', requirements_key, simif_key)
        prefix.ensure_interface('composition_interfaces', interfaces / 'composition_interfaces',
                                requirements_key)
        tooling = args.ros_tooling.resolve() if args.ros_tooling else None
        prefix.ensure_tooling(tooling)
        prefix.ensure_project(requirements_key)
    except SetupError as exc:
        print(f'[setup] FAILED (ROS 2 {distro.title}, {venv}): {exc}', file=sys.stderr,
              flush=True)
        return 1
    log(f'{venv} ready: ROS 2 {distro.title}, simulation_interfaces '
        f'{args.simulation_interfaces}.x ({time.monotonic() - started:.1f} s); '
        f'source {prefix.venv}/setup.bash for the ros2 commands')
    return 0


if __name__ == '__main__':
    sys.exit(main())
