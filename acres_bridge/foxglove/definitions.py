# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Full ROS 2 message definitions in the ``ros2msg`` form that Foxglove (and MCAP) parse.

A type's definition is its own ``.msg`` text followed, for every type it uses (depth first,
each once), by a line of 80 ``=``, a line ``MSG: pkg/Type`` and that type's ``.msg`` text::

    builtin_interfaces/Time stamp
    string frame_id
    ================================================================================
    MSG: builtin_interfaces/Time
    int32 sec
    uint32 nanosec

The texts are the installed interface files, ``<prefix>/share/<pkg>/msg/<Type>.msg``, found
through the ament index. A service's request and response are the two halves of its ``.srv``
file (split at the line ``---``), each with its own dependencies.
"""

from collections.abc import Callable
import os
import sys

from ament_index_python.packages import get_package_share_directory
from ament_index_python.packages import PackageNotFoundError

SEPARATOR = '=' * 80
PRIMITIVE_TYPES = frozenset((
    'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16', 'int32',
    'uint32', 'int64', 'uint64', 'string', 'wstring'))
KINDS = ('msg', 'srv', 'action')


class DefinitionError(LookupError):
    """A type whose definition cannot be built: unknown package or file, or a bad name."""


def split_type_name(type_name: str) -> tuple[str, str, str]:
    """
    Return the package, kind and name of ``pkg/msg/Type`` (``pkg/Type`` means a message).

    :raises DefinitionError: for a name of another shape.
    """
    parts = type_name.split('/')
    if len(parts) == 2:
        parts.insert(1, 'msg')
    if len(parts) != 3 or parts[1] not in KINDS or not all(parts):
        raise DefinitionError(f'{type_name!r} is not a ROS 2 interface type name')
    return parts[0], parts[1], parts[2]


def used_types(text: str, package: str) -> list[str]:
    """
    Return the message types (``pkg/Type``) the fields of a ``.msg`` text use, in order.

    Constants have primitive types and add nothing. A bare name is a type of ``package``.
    """
    used = []
    for line in text.splitlines():
        words = line.split('#', 1)[0].split()
        if not words:
            continue
        base = words[0].split('[', 1)[0].split('<=', 1)[0]
        if base in PRIMITIVE_TYPES:
            continue
        name = base if '/' in base else f'{package}/{base}'
        if name not in used:
            used.append(name)
    return used


def read_installed(package: str, kind: str, name: str) -> str:
    """
    Return the text of ``<share of package>/<kind>/<name>.<kind>``.

    Without an ament index in the environment (``AMENT_PREFIX_PATH`` unset: a PyPI prefix whose
    setup.bash was not sourced), the share folder is the one of this Python's prefix.

    :raises DefinitionError: when the package or the file is not installed.
    """
    try:
        share = get_package_share_directory(package)
    except OSError:
        share = os.path.join(sys.prefix, 'share', package)
    except (PackageNotFoundError, ValueError) as exc:
        raise DefinitionError(f'package {package!r} is not installed') from exc
    path = os.path.join(share, kind, f'{name}.{kind}')
    try:
        with open(path, encoding='utf-8') as file:
            return file.read()
    except OSError as exc:
        raise DefinitionError(f'no interface file {path}') from exc


class DefinitionLibrary:
    """
    Build and cache full definitions of message and service types.

    :param read: returns the text of an interface file from (package, kind, name); by default
        the installed file (:func:`read_installed`).
    """

    def __init__(self, read: Callable[[str, str, str], str] = read_installed) -> None:
        self._read = read
        self._texts: dict[tuple[str, str, str], str] = {}

    def message(self, type_name: str) -> str:
        """
        Return the full definition of a message type (``sensor_msgs/msg/Image``).

        :raises DefinitionError: for a type that is not a message or is not installed.
        """
        package, kind, name = split_type_name(type_name)
        if kind != 'msg':
            raise DefinitionError(f'{type_name} is not a message type')
        return self._with_dependencies(self._text(package, 'msg', name), package)

    def service(self, type_name: str) -> tuple[str, str]:
        """
        Return the full definitions of a service type's request and response.

        :raises DefinitionError: for a type that is not a service or is not installed.
        """
        package, kind, name = split_type_name(type_name)
        if kind != 'srv':
            raise DefinitionError(f'{type_name} is not a service type')
        halves = _split_halves(self._text(package, 'srv', name))
        if len(halves) != 2:
            raise DefinitionError(f'{type_name}: a .srv file has two parts, not {len(halves)}')
        request, response = halves
        return (self._with_dependencies(request, package),
                self._with_dependencies(response, package))

    def _text(self, package: str, kind: str, name: str) -> str:
        key = (package, kind, name)
        if key not in self._texts:
            self._texts[key] = self._read(package, kind, name)
        return self._texts[key]

    def _with_dependencies(self, text: str, package: str) -> str:
        parts = [text.rstrip('\n')]
        seen: set[str] = set()
        pending = used_types(text, package)
        while pending:
            used = pending.pop(0)
            if used in seen:
                continue
            seen.add(used)
            used_package, _, used_name = split_type_name(used)
            used_text = self._text(used_package, 'msg', used_name)
            parts += [SEPARATOR, f'MSG: {used}', used_text.rstrip('\n')]
            pending = used_types(used_text, used_package) + pending
        return '\n'.join(parts) + '\n'


def _split_halves(text: str) -> list[str]:
    """Return the parts of a .srv (or .action) text between the lines ``---``."""
    halves = [[]]
    for line in text.splitlines():
        if line.strip() == '---':
            halves.append([])
        else:
            halves[-1].append(line)
    return ['\n'.join(lines) for lines in halves]
