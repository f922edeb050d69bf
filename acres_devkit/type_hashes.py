# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Type hashes (RIHS01) and constants of ROS interface packages, and their comparison.

A package directory is read in one of two forms:

- an installed share directory (``<prefix>/share/<package>``): the build wrote
  ``{msg,srv,action}/<Name>.json`` with a ``type_hashes`` list (the type itself first, then
  every type it refers to) next to the ``.msg``/``.srv``/``.action`` files;
- a source directory (``package.xml`` plus ``msg/``, ``srv/``, ``action/``): the hashes are
  computed in a temporary directory with the rosidl translators and
  rosidl_generator_type_description, against the interface packages installed in the ROS
  prefixes (``AMENT_PREFIX_PATH``, else this interpreter's prefix), as a cmake build would.

A type hash covers the names, types, array and string bounds and nested types of the fields,
but neither default values, constants nor comments: defaults (from the JSON type descriptions)
and constants (from the definition files) are read and compared on their own.

Usage::

    python -m acres_devkit.type_hashes DIR            # the hash of every interface
    python -m acres_devkit.type_hashes DIR --compare OTHER_DIR
    python -m acres_devkit.type_hashes msg --prefix PREFIX_WITH_SIMULATION_INTERFACES

``--compare`` exits with 1 when any type hash, default value or constant differs.
"""

import argparse
import contextlib
import io
import json
import logging
import os
from pathlib import Path
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

from rosidl_adapter.parser import parse_action_file
from rosidl_adapter.parser import parse_message_file
from rosidl_adapter.parser import parse_service_file
from rosidl_cli.command.hash.api import generate_type_hashes
from rosidl_cli.command.translate.api import translate

INTERFACE_KINDS = ('msg', 'srv', 'action')

Constants = dict[str, dict[str, tuple[str, object]]]
Defaults = dict[str, dict[str, str]]


def package_name(package_dir: Path) -> str:
    """Return the <name> of a package's package.xml."""
    name = ElementTree.parse(package_dir / 'package.xml').getroot().findtext('name')
    if not name:
        raise ValueError(f'{package_dir / "package.xml"} has no <name>')
    return name.strip()


def interface_files(package_dir: Path) -> list[Path]:
    """Return the definition files of a package, relative to its directory, sorted."""
    return sorted(
        path.relative_to(package_dir)
        for kind in INTERFACE_KINDS
        for path in (package_dir / kind).glob(f'*.{kind}'))


def interface_types(package_dir: Path, package: str) -> list[str]:
    """Return the type names ('pkg/msg/Name') of the interfaces a package defines."""
    return [f'{package}/{path.parent}/{path.stem}' for path in interface_files(package_dir)]


def read_type_hashes(share_dir: Path, package: str) -> dict[str, str]:
    """
    Return every type hash of one package that the JSON files of a build hold.

    Besides each interface, this includes the types rosidl derives from it (``_Request``,
    ``_Response``, ``_Event``, ``_Goal``, ``_FeedbackMessage``, ...).

    :raises ValueError: when two files disagree about a type
    """
    hashes: dict[str, str] = {}
    for kind in INTERFACE_KINDS:
        for path in sorted((share_dir / kind).glob('*.json')):
            for entry in json.loads(path.read_text(encoding='utf-8'))['type_hashes']:
                name, value = entry['type_name'], entry['hash_string']
                if not name.startswith(f'{package}/'):
                    continue
                if hashes.setdefault(name, value) != value:
                    raise ValueError(f'{share_dir}: two hashes for {name}')
    return hashes


def read_defaults(share_dir: Path, package: str) -> Defaults:
    """Return {type name: {field: default value as text}} for the fields that have one."""
    defaults: Defaults = {}
    for kind in INTERFACE_KINDS:
        for path in sorted((share_dir / kind).glob('*.json')):
            description = json.loads(path.read_text(encoding='utf-8'))['type_description_msg']
            for described in [description['type_description'],
                              *description['referenced_type_descriptions']]:
                fields = {field['name']: field['default_value'] for field in described['fields']
                          if field['default_value']}
                if fields and described['type_name'].startswith(f'{package}/'):
                    defaults[described['type_name']] = fields
    return defaults


def read_constants(package_dir: Path, package: str) -> Constants:
    """Return {type name: {constant: (type, value)}} from the definition files."""
    constants: Constants = {}
    for relative in interface_files(package_dir):
        path = str(package_dir / relative)
        kind = relative.parent.name
        if kind == 'msg':
            specs = [parse_message_file(package, path)]
        elif kind == 'srv':
            service = parse_service_file(package, path)
            specs = [service.request, service.response]
        else:
            action = parse_action_file(package, path)
            specs = [action.goal, action.result, action.feedback]
        for spec in specs:
            if spec.constants:
                constants[f'{package}/{kind}/{spec.msg_name}'] = {
                    constant.name: (constant.type, constant.value) for constant in spec.constants}
    return constants


def default_prefixes() -> list[Path]:
    """Return the ROS prefixes of this process: AMENT_PREFIX_PATH, else sys.prefix."""
    value = os.environ.get('AMENT_PREFIX_PATH', '')
    return [Path(part) for part in value.split(os.pathsep) if part] or [Path(sys.prefix)]


def _has_files(package_dir: Path, pattern: str) -> bool:
    return any(next((package_dir / kind).glob(pattern), None) for kind in INTERFACE_KINDS)


def _dependency_share_dirs(prefixes: list[Path], package: str) -> list[Path]:
    """Return the share directory of every installed interface package except `package`."""
    found: dict[str, Path] = {}
    for prefix in prefixes:
        for share in sorted((prefix / 'share').glob('*')):
            if share.name == package or share.name in found:
                continue
            if _has_files(share, '*.idl'):
                found[share.name] = share
    return list(found.values())


def generate(source_dir: Path, output_dir: Path, *, prefixes: list[Path]) -> Path:
    """
    Translate a source package to IDL and compute its type hashes into `output_dir`.

    The result has the layout of an installed share directory, so `read_type_hashes` and
    `read_constants` read it the same way.

    :return: `output_dir`
    """
    # rosidl looks its own templates up through the ament index.
    os.environ.setdefault('AMENT_PREFIX_PATH', os.pathsep.join(map(str, prefixes)))
    # Wheels that ship both egg-info and dist-info make rosidl_cli warn about every extension.
    logging.getLogger('rosidl_cli').setLevel(logging.ERROR)

    source_dir, output_dir = source_dir.resolve(), output_dir.resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    package = package_name(source_dir)
    includes = _dependency_share_dirs(prefixes, package)
    sources = interface_files(source_dir)
    with contextlib.redirect_stdout(io.StringIO()):
        translate(package_name=package,
                  interface_files=[f'{source_dir}:{path}' for path in sources],
                  include_paths=[str(path) for path in includes],
                  output_format='idl', output_path=output_dir)
        generate_type_hashes(
            package_name=package,
            interface_files=[f'{output_dir}:{path.with_suffix(".idl")}' for path in sources],
            include_paths=[str(path) for path in includes], output_path=output_dir)
    for path in sources:
        (output_dir / path).write_bytes((source_dir / path).read_bytes())
    (output_dir / 'package.xml').write_bytes((source_dir / 'package.xml').read_bytes())
    return output_dir


def is_built(package_dir: Path) -> bool:
    """Tell whether a directory holds a build's JSON files (else it is a source package)."""
    return _has_files(package_dir, '*.json')


def describe(package_dir: Path, work_dir: Path, *, prefixes: list[Path]
             ) -> tuple[str, list[str], dict[str, str], Defaults, Constants]:
    """Return the name, interfaces, type hashes, defaults and constants of a package."""
    if not is_built(package_dir):
        package_dir = generate(package_dir, work_dir, prefixes=prefixes)
    package = package_name(package_dir)
    types = interface_types(package_dir, package)
    hashes = read_type_hashes(package_dir, package)
    missing = [name for name in types if name not in hashes]
    if missing:
        raise ValueError(f'{package_dir}: no type hash for {", ".join(missing)}')
    return (package, types, hashes, read_defaults(package_dir, package),
            read_constants(package_dir, package))


def compare(left: Path, right: Path, *, prefixes: list[Path]) -> tuple[list[str], list[str]]:
    """
    Compare two package directories.

    :return: (a table row for every interface, a line for every difference)
    """
    with tempfile.TemporaryDirectory() as work:
        name_l, types_l, hashes_l, defaults_l, constants_l = describe(
            left, Path(work) / 'left', prefixes=prefixes)
        name_r, types_r, hashes_r, defaults_r, constants_r = describe(
            right, Path(work) / 'right', prefixes=prefixes)
    problems = []
    if name_l != name_r:
        problems.append(f'package names differ: {name_l} != {name_r}')
    for name in sorted(set(types_l) ^ set(types_r)):
        problems.append(f'{name}: only in {left if name in types_l else right}')
    for name in sorted(set(hashes_l) | set(hashes_r)):
        if hashes_l.get(name) != hashes_r.get(name):
            problems.append(f'{name}: {hashes_l.get(name)} != {hashes_r.get(name)}')
    for what, map_l, map_r in (('defaults', defaults_l, defaults_r),
                               ('constants', constants_l, constants_r)):
        for name in sorted(set(map_l) | set(map_r)):
            if map_l.get(name) != map_r.get(name):
                problems.append(f'{name}: {what} {map_l.get(name)} != {map_r.get(name)}')
    rows = [f'{name} {hashes_l.get(name, "-")} '
            f'{"==" if hashes_l.get(name) == hashes_r.get(name) else "!="}'
            for name in sorted(set(types_l) | set(types_r))]
    return rows, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('package_dir', type=Path,
                        help='a source package or an installed share/<package> directory')
    parser.add_argument('--compare', type=Path, metavar='OTHER_DIR',
                        help='compare hashes and constants with another package directory')
    parser.add_argument('--prefix', type=Path, action='append', default=[],
                        help='a ROS prefix to search first for dependencies (repeatable)')
    parser.add_argument('--json', action='store_true',
                        help='print {type name: hash} of the interfaces as JSON')
    args = parser.parse_args(argv)
    prefixes = [*args.prefix, *default_prefixes()]
    if args.compare is not None:
        rows, problems = compare(args.package_dir, args.compare, prefixes=prefixes)
        print('\n'.join(rows))
        for problem in problems:
            print(f'DIFFERENT {problem}', file=sys.stderr)
        print(f'{len(rows)} interfaces, {len(problems)} differences')
        return 1 if problems else 0
    with tempfile.TemporaryDirectory() as work:
        _, types, hashes, _, _ = describe(args.package_dir, Path(work), prefixes=prefixes)
    if args.json:
        print(json.dumps({name: hashes[name] for name in types}, indent=4))
    else:
        print('\n'.join(f'{name} {hashes[name]}' for name in types))
    return 0


if __name__ == '__main__':
    sys.exit(main())
