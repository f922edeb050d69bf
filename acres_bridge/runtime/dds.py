# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The Fast DDS settings of the bridge's own processes, chosen before ``rclpy.init``.

Fast DDS as it ships lets a reliable writer announce its samples with a heartbeat every 3 s,
so a reader acknowledges (and asks for a lost sample again) up to 3 s after the write, and
gives a participant a 512 KiB shared-memory segment, smaller than one cloud or image. The
bridge's processes therefore load an XML profile of their own, written here for the Fast DDS
version the process will load: prompt heartbeats and a segment that holds the largest
messages. It restricts nothing: every transport Fast DDS or rmw_fastrtps would add is still
added, so readers on other hosts work as before.

A profile the user gives (``FASTDDS_DEFAULT_PROFILES_FILE`` for Fast DDS 3,
``FASTRTPS_DEFAULT_PROFILES_FILE`` for 2.x, or the version's default file in the working
directory) stays in force with its transports, names and defaults. The bridge's process alone
loads a copy with the bridge's writer settings filled in where the file leaves them unset
(:mod:`acres_bridge.runtime.dds_profile`); a setting the file sets and that falls short is kept
and reported with its cost and its fix. Other processes never see the copy.

Fast DDS 3 renamed some tags of 2.x (``heartbeatPeriod`` became ``heartbeat_period``,
``publisher`` became ``data_writer``) and both versions reject a whole file for a tag they do
not know, without a word at the default log level. The tags are therefore spelled for the
version found. A user's profile with the other version's spelling, a file that is not
well-formed or not there is named in the log, with the fix; Fast DDS loads nothing of it in
any process, so the bridge applies its own settings as if none were given.

rmw_fastrtps (Jazzy 8.4, Kilted 9.x) sets three writer settings itself unless
``RMW_FASTRTPS_USE_QOS_FROM_XML=1``: synchronous publishing (or
``RMW_FASTRTPS_PUBLICATION_MODE``), history memory by reallocation, data sharing off. Those are
the bridge's choices, so the bridge never sets that variable; with it, the same three come
from the profile, where the bridge fills them in too. The heartbeat and the transports always
come from the profile.
"""

from collections.abc import Mapping
from collections.abc import MutableMapping
from collections.abc import Sequence
import dataclasses
import hashlib
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

from acres_bridge.runtime import dds_profile
from acres_bridge.runtime.dds_profile import HEARTBEAT_PERIOD_MS
from acres_bridge.runtime.dds_profile import NACK_RESPONSE_DELAY_MS
from acres_bridge.runtime.dds_profile import PROFILE_TAGS
from acres_bridge.runtime.dds_profile import RENAMED_TAGS
from acres_bridge.runtime.dds_profile import SHM_PORT_QUEUE_CAPACITY
from acres_bridge.runtime.dds_profile import SHM_SEGMENT_BYTES

# The environment variable each Fast DDS major version reads for its profile file, and the
# file it loads from the working directory unless SKIP_DEFAULT_XML_FILE=1.
PROFILE_VARIABLES = {2: 'FASTRTPS_DEFAULT_PROFILES_FILE', 3: 'FASTDDS_DEFAULT_PROFILES_FILE'}
DEFAULT_PROFILE_FILES = {2: 'DEFAULT_FASTRTPS_PROFILES.xml', 3: 'DEFAULT_FASTDDS_PROFILES.xml'}
FAST_DDS_RMWS = ('rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp')
# The package's opt-in single-host profile (config/), one file per Fast DDS major version.
SHIPPED_PROFILES = {2: 'fastdds2_large_data.xml', 3: 'fastdds_large_data.xml'}

_NEEDED = re.compile(rb'lib(fastdds|fastrtps)\.so\.(\d+)\.(\d+)')
_MAPPED = re.compile(r'/lib(fastdds|fastrtps)\.so\.(\d+)\.(\d+)')
_SEGMENT = re.compile(r'/dev/shm/fast(dds|rtps)_[0-9a-f]+')


@dataclasses.dataclass(frozen=True)
class FastDds:
    """A Fast DDS library: its version and the file that says so."""

    major: int
    minor: int
    source: str

    def __str__(self) -> str:
        return f'Fast DDS {self.major}.{self.minor}'


@dataclasses.dataclass(frozen=True)
class Configuration:
    """What :func:`configure` decided: the line for the log and what it set in the environment."""

    summary: str
    variable: str | None = None
    profile: str | None = None
    fast_dds: FastDds | None = None
    warnings: tuple[str, ...] = ()
    segment_size: int | None = None
    # Each variable set in the environment: its name, the value set and the one before.
    changes: tuple[tuple[str, str, str | None], ...] = ()


def library_dirs(environ: Mapping[str, str] = os.environ) -> list[str]:
    """
    Return the folders the rmw library is loaded from, in the order of the search.

    rmw_implementation looks in ``LD_LIBRARY_PATH`` first, then the linker finds it next to
    itself; ``AMENT_PREFIX_PATH`` lists the prefixes of a sourced distribution and
    ``sys.prefix`` is the PyPI prefix.
    """
    dirs = [item for item in environ.get('LD_LIBRARY_PATH', '').split(os.pathsep) if item]
    dirs += [os.path.join(prefix, 'lib')
             for prefix in environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if prefix]
    dirs.append(os.path.join(sys.prefix, 'lib'))
    unique = []
    for item in dirs:
        if item not in unique:
            unique.append(item)
    return unique


def find_fast_dds(dirs: Sequence[str] | None = None,
                  rmw: str = 'rmw_fastrtps_cpp') -> FastDds | None:
    """
    Return the Fast DDS that the rmw library links, read from the library's dependencies.

    ``librmw_fastrtps_cpp.so`` names ``libfastdds.so.3.2`` (Kilted) or ``libfastrtps.so.2.14``
    (Jazzy) among the libraries it needs, so the first rmw library of the search decides.
    None if there is none.
    """
    for folder in library_dirs() if dirs is None else dirs:
        path = os.path.join(folder, f'lib{rmw}.so')
        try:
            with open(path, 'rb') as stream:
                found = _NEEDED.search(stream.read())
        except OSError:
            continue
        if found:
            return FastDds(int(found.group(2)), int(found.group(3)), path)
    return None


def loaded_fast_dds(maps: str = '/proc/self/maps') -> FastDds | None:
    """Return the Fast DDS mapped into this process (Linux), None if none is."""
    try:
        with open(maps, encoding='utf-8', errors='replace') as stream:
            text = stream.read()
    except OSError:
        return None
    found = _MAPPED.search(text)
    if found is None:
        return None
    line = text[text.rfind('\n', 0, found.start()) + 1:text.find('\n', found.end())]
    return FastDds(int(found.group(2)), int(found.group(3)), line.split()[-1])


def _duration(tag: str, milliseconds: int) -> str:
    seconds, rest_ms = divmod(milliseconds, 1000)
    return f'<{tag}><sec>{seconds}</sec><nanosec>{rest_ms * 1_000_000}</nanosec></{tag}>'


def profile_xml(major: int, *, local_discovery: bool,
                heartbeat_period_ms: int | None = HEARTBEAT_PERIOD_MS,
                segment_size: int | None = SHM_SEGMENT_BYTES) -> str:
    """
    Return the bridge's profile for Fast DDS ``major`` (2 or 3).

    Writers: a heartbeat every ``heartbeat_period_ms``, requests for lost data answered after
    ``NACK_RESPONSE_DELAY_MS`` (at once); synchronous publishing, data sharing
    off and history memory that grows by reallocation, which rmw_fastrtps sets by itself unless
    ``RMW_FASTRTPS_USE_QOS_FROM_XML=1`` hands those choices to the XML. Participant: a
    shared-memory transport with a ``segment_size`` segment. With ``local_discovery``
    (:func:`rmw_adds_transports`) rmw_fastrtps adds its own shared-memory and UDPv4 transports
    after this one, so the profile adds only the segment; otherwise it also adds the UDPv4
    transport that replacing the built-in ones would drop. None leaves a setting as Fast DDS
    has it.
    """
    writer_tag, _ = PROFILE_TAGS[3 if major >= 3 else 2]
    heartbeat_tag = 'heartbeat_period' if major >= 3 else 'heartbeatPeriod'
    nack_tag = 'nack_response_delay' if major >= 3 else 'nackResponseDelay'
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<!-- Written by acres_bridge (acres_bridge/runtime/dds.py) for Fast DDS '
             f'{major}.x: the settings of the bridge\'s own processes. -->',
             '<dds xmlns="http://www.eprosima.com">', '  <profiles>']
    if segment_size is not None:
        lines += [
            '    <transport_descriptors>',
            '      <transport_descriptor>',
            '        <transport_id>acres_bridge_shm</transport_id>',
            '        <type>SHM</type>',
            f'        <segment_size>{segment_size}</segment_size>',
            f'        <port_queue_capacity>{SHM_PORT_QUEUE_CAPACITY}</port_queue_capacity>',
            f'        <maxMessageSize>{segment_size}</maxMessageSize>',
            '      </transport_descriptor>']
        if not local_discovery:
            lines += [
                '      <transport_descriptor>',
                '        <transport_id>acres_bridge_udp</transport_id>',
                '        <type>UDPv4</type>',
                '      </transport_descriptor>']
        lines += [
            '    </transport_descriptors>',
            '    <participant profile_name="acres_bridge_participant" is_default_profile="true">',
            '      <rtps>',
            '        <useBuiltinTransports>false</useBuiltinTransports>',
            '        <userTransports>',
            '          <transport_id>acres_bridge_shm</transport_id>']
        if not local_discovery:
            lines.append('          <transport_id>acres_bridge_udp</transport_id>')
        lines += ['        </userTransports>', '      </rtps>', '    </participant>']
    lines += [
        f'    <{writer_tag} profile_name="acres_bridge_writer" is_default_profile="true">',
        '      <qos>',
        '        <publishMode><kind>SYNCHRONOUS</kind></publishMode>',
        '        <data_sharing><kind>OFF</kind></data_sharing>',
        '      </qos>']
    lines += ['      <times>']
    if heartbeat_period_ms is not None:
        lines.append('        ' + _duration(heartbeat_tag, heartbeat_period_ms))
    lines += ['        ' + _duration(nack_tag, NACK_RESPONSE_DELAY_MS), '      </times>']
    lines += ['      <historyMemoryPolicy>PREALLOCATED_WITH_REALLOC</historyMemoryPolicy>',
              f'    </{writer_tag}>', '  </profiles>', '</dds>', '']
    return '\n'.join(lines)


def foreign_tags(path: str, major: int, minor: int = 14) -> list[str]:
    """
    Return the tags of the profile at ``path`` that only the other Fast DDS major version knows.

    Empty for a file that cannot be read or parsed (:func:`configure` reports those).
    """
    try:
        with open(path, encoding='utf-8', errors='replace') as stream:
            root = dds_profile.parse(stream.read())
    except (OSError, ElementTree.ParseError):
        return []
    return dds_profile.foreign_spelling(root, major, minor)


def profile_variable(fast_dds: FastDds) -> str:
    """Return the environment variable that names the profile file for ``fast_dds``."""
    return PROFILE_VARIABLES[3 if fast_dds.major >= 3 else 2]


def shipped_profile(fast_dds: FastDds) -> str:
    """
    Return the path of the package's single-host profile spelled for ``fast_dds``.

    The installed package's share folder if there is one (``ros2 pkg prefix``), else the
    source tree's ``config/``.
    """
    name = SHIPPED_PROFILES[3 if fast_dds.major >= 3 else 2]
    folders = []
    try:
        from ament_index_python.packages import get_package_share_directory
        from ament_index_python.packages import PackageNotFoundError
        try:
            folders.append(os.path.join(get_package_share_directory('acres_bridge'), 'config'))
        except (PackageNotFoundError, ValueError, OSError):   # OSError: AMENT_PREFIX_PATH unset
            pass
    except ImportError:
        pass
    folders.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), 'config'))
    for folder in folders:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f'{name} is in none of {", ".join(folders)}')


def rmw_adds_transports(environ: Mapping[str, str], fast_dds: FastDds) -> bool:
    """
    Whether rmw_fastrtps replaces the built-in transports with its own, for local discovery.

    It does so for ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` (Iron and later; Jazzy's rcl
    also turns ``ROS_LOCALHOST_ONLY=1`` into that range, Kilted's ignores the variable) and for
    Humble's ``ROS_LOCALHOST_ONLY=1`` (a UDPv4 transport on 127.0.0.1 only).
    """
    range_ = environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE', '')
    localhost_only = environ.get('ROS_LOCALHOST_ONLY', '') == '1'
    if fast_dds.major >= 3:
        return range_ == 'LOCALHOST'
    if fast_dds.minor >= 10:
        return localhost_only or range_ == 'LOCALHOST'
    return localhost_only


def _user_profile(environ: Mapping[str, str], fast_dds: FastDds,
                  cwd: str) -> tuple[str, str] | None:
    variable = profile_variable(fast_dds)
    if environ.get(variable):
        return variable, environ[variable]
    default_file = os.path.join(cwd, DEFAULT_PROFILE_FILES[3 if fast_dds.major >= 3 else 2])
    if environ.get('SKIP_DEFAULT_XML_FILE', '') != '1' and os.path.isfile(default_file):
        return 'the working directory', default_file
    return None


def _write_profile(text: str, major: int) -> str:
    """Write the profile where every process of this user finds the same file; return it."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    folder = os.path.join(tempfile.gettempdir(), f'acres_bridge-{os.getuid()}')
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, f'fastdds{major}-{digest}.xml')
    if not os.path.isfile(path):
        partial = f'{path}.{os.getpid()}'
        with open(partial, 'w', encoding='utf-8') as stream:
            stream.write(text)
        os.replace(partial, path)
    return path


def _set(environ: MutableMapping[str, str],
         values: dict[str, str]) -> tuple[tuple[str, str, str | None], ...]:
    changes = tuple((name, value, environ.get(name)) for name, value in values.items())
    environ.update(values)
    return changes


def _unusable(path: str, source: str, fast_dds: FastDds) -> str | None:
    """
    Return why Fast DDS loads nothing from the user's profile at ``path``, None if it can.

    Not there, not well-formed, or spelled for the other major version: Fast DDS then rejects
    the whole file in every process that loads it, without a word at the default log level.
    """
    fix = (f'Fix: {profile_variable(fast_dds)}={shipped_profile_or_name(fast_dds)} (the '
           f'package\'s profile for {fast_dds}), or correct the file')
    try:
        with open(path, encoding='utf-8', errors='replace') as stream:
            root = dds_profile.parse(stream.read())
    except OSError:
        return f'{path} ({source}) is not a file: Fast DDS loads nothing from it. {fix}'
    except ElementTree.ParseError as exc:
        return (f'{path} ({source}) is not well-formed XML ({exc}): {fast_dds} rejects the '
                f'whole file, in every process that loads it. {fix}')
    foreign = dds_profile.foreign_spelling(root, fast_dds.major, fast_dds.minor)
    if not foreign:
        return None
    other = 2 if fast_dds.major >= 3 else 3
    renames = {**RENAMED_TAGS, 'publisher': 'data_writer', 'subscriber': 'data_reader'}
    if other == 3:
        renames = {new: old for old, new in renames.items()}
    spelled = ', '.join(f'{name} -> {renames[name]}' if name in renames else name
                        for name in foreign)
    return (f'{path} ({source}) is a profile for Fast DDS {other}.x (its tags '
            f'{", ".join(foreign)}): {fast_dds} rejects the whole file, in every process that '
            'loads it, so those run with Fast DDS\'s defaults. '
            f'{fix} with the tags renamed ({spelled})')


def shipped_profile_or_name(fast_dds: FastDds) -> str:
    """Return the path of the package's profile for ``fast_dds``, or its name if not found."""
    try:
        return shipped_profile(fast_dds)
    except FileNotFoundError:
        return SHIPPED_PROFILES[3 if fast_dds.major >= 3 else 2]


def configure(environ: MutableMapping[str, str] = os.environ, *,
              dirs: Sequence[str] | None = None, cwd: str | None = None,
              maps: str = '/proc/self/maps') -> Configuration:
    """
    Give this process's Fast DDS the bridge's writer settings, within the user's profile if any.

    Call before ``rclpy.init``: Fast DDS reads its profiles once per process, when the first
    participant is created. Undo with :func:`restore` once the nodes exist.
    """
    rmw = environ.get('RMW_IMPLEMENTATION', '') or 'rmw_fastrtps_cpp'
    if rmw not in FAST_DDS_RMWS:
        return Configuration(f'DDS: {rmw}, its own configuration (the bridge sets Fast DDS '
                             'only)')
    fast_dds = find_fast_dds(dirs, rmw)
    if fast_dds is None:
        searched = os.pathsep.join(library_dirs(environ) if dirs is None else dirs)
        return Configuration(f'DDS: no lib{rmw}.so in {searched}; Fast DDS as it ships')
    variable = profile_variable(fast_dds)
    local = rmw_adds_transports(environ, fast_dds)
    builtin = environ.get('FASTDDS_BUILTIN_TRANSPORTS', '')
    warnings = _publication_mode_warnings(environ)
    given = _user_profile(environ, fast_dds, os.getcwd() if cwd is None else cwd)
    replaced = ''
    if given is not None:
        source, path = given
        problem = _unusable(path, source, fast_dds)
        if problem is None:
            return _merged(environ, fast_dds, source, path, local=local, builtin=builtin,
                           warnings=warnings)
        warnings.append(problem)
        replaced = f' in place of {path}, which {fast_dds} cannot load'
    segment_size = None if builtin else SHM_SEGMENT_BYTES
    text = profile_xml(fast_dds.major, local_discovery=local, segment_size=segment_size)
    try:
        profile = _write_profile(text, fast_dds.major)
    except OSError as exc:
        return Configuration(f'DDS: {fast_dds} as it ships: the bridge could not write its '
                             f'profile ({exc})', fast_dds=fast_dds, warnings=tuple(warnings))
    changes = _set(environ, {variable: profile})
    transports = (f'{SHM_SEGMENT_BYTES >> 20} MiB shared-memory segment' if segment_size
                  else f'the transports of FASTDDS_BUILTIN_TRANSPORTS={builtin}')
    advice = replaced or f'; set {variable} to use a profile of your own'
    return Configuration(
        f'DDS: {fast_dds}, the bridge\'s own settings (writer heartbeat every '
        f'{HEARTBEAT_PERIOD_MS} ms, NACK response delay {NACK_RESPONSE_DELAY_MS} ms, '
        f'{transports}, data sharing off) from {profile}{advice}',
        variable, profile, fast_dds, tuple(warnings), segment_size, changes)


def _merged(environ: MutableMapping[str, str], fast_dds: FastDds, source: str, path: str, *,
            local: bool, builtin: str, warnings: list[str]) -> Configuration:
    """Give this process the user's profile with the bridge's settings where it has none."""
    with open(path, encoding='utf-8', errors='replace') as stream:
        text = stream.read()
    merge = dds_profile.merge_profile(
        text, fast_dds.major, minor=fast_dds.minor, local_discovery=local,
        qos_from_xml=environ.get('RMW_FASTRTPS_USE_QOS_FROM_XML', '') == '1',
        builtin_transports=builtin, path=path)
    warnings += merge.shortfalls
    if merge.text is None:
        return Configuration(
            f'DDS: {fast_dds}, your profile {path} ({source}) as it is: it sets every writer '
            'setting the bridge needs', fast_dds=fast_dds, warnings=tuple(warnings))
    variable = profile_variable(fast_dds)
    try:
        merged = _write_profile(merge.text, fast_dds.major)
    except OSError as exc:
        warnings.append(f'the bridge could not write its copy of {path} ({exc}); its '
                        f'writers lack {", ".join(merge.added)}')
        return Configuration(f'DDS: {fast_dds}, your profile {path} ({source}) as it is',
                             fast_dds=fast_dds, warnings=tuple(warnings))
    values = {variable: merged}
    if source == 'the working directory':
        values['SKIP_DEFAULT_XML_FILE'] = '1'    # else Fast DDS loads the file itself too
    changes = _set(environ, values)
    return Configuration(
        f'DDS: {fast_dds}, your profile {path} ({source}) with the bridge\'s settings where it '
        f'sets none ({", ".join(merge.added)}), in the bridge\'s process only, from {merged}',
        variable, merged, fast_dds, tuple(warnings), merge.segment_size, changes)


def _publication_mode_warnings(environ: Mapping[str, str]) -> list[str]:
    mode = environ.get('RMW_FASTRTPS_PUBLICATION_MODE', '')
    if environ.get('RMW_FASTRTPS_USE_QOS_FROM_XML', '') == '1' or mode in ('', 'SYNCHRONOUS'):
        return []
    return [f'RMW_FASTRTPS_PUBLICATION_MODE={mode} is kept: each message waits for Fast '
            'DDS\'s sending thread, which a loaded machine delays. Fix: unset '
            'RMW_FASTRTPS_PUBLICATION_MODE (rmw_fastrtps then publishes synchronously)']


def restore(configuration: Configuration,
            environ: MutableMapping[str, str] = os.environ) -> None:
    """Undo what :func:`configure` set, so that processes started later inherit nothing."""
    for name, value, before in configuration.changes:
        if environ.get(name) != value:
            continue    # changed since by someone else: theirs
        if before is None:
            del environ[name]
        else:
            environ[name] = before


def shm_segments(maps: str = '/proc/self/maps') -> list[int]:
    """Return the sizes in bytes of the Fast DDS (2.x: fastrtps_*) shared-memory segments."""
    sizes = []
    try:
        with open(maps, encoding='utf-8', errors='replace') as stream:
            for line in stream:
                fields = line.split()
                if len(fields) >= 6 and _SEGMENT.fullmatch(fields[-1]):
                    low, high = fields[0].split('-')
                    sizes.append(int(high, 16) - int(low, 16))
    except OSError:
        pass
    return sizes


def check_loaded(configuration: Configuration, maps: str = '/proc/self/maps') -> str | None:
    """
    Return a warning if the configuration did not take effect in this process, else None.

    Call once the nodes exist. The Fast DDS now mapped must be the version the profile was
    spelled for, and the participant must map a shared-memory segment of the profile's size:
    Fast DDS reads its profiles once per process, so a participant created earlier in the same
    process (another rclpy context) leaves them unread.
    """
    expected = configuration.fast_dds
    loaded = loaded_fast_dds(maps)
    if expected is not None and loaded is not None and loaded.major != expected.major:
        return (f'DDS: the configuration was chosen for {expected} ({expected.source}) but this '
                f'process loaded {loaded} ({loaded.source})')
    segment_size = configuration.segment_size
    if segment_size is not None and os.path.exists(maps) and not any(
            size >= segment_size for size in shm_segments(maps)):
        return ('DDS: the bridge\'s Fast DDS settings did not take effect: Fast DDS had read its '
                'profiles before (a participant created earlier in this process)')
    return None
