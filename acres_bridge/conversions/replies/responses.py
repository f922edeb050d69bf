# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
JSON replies of the control channel <-> ROS messages, by field name and type.

Pure functions: ``fill_message`` sets each field of a message from the reply key of the same
name, checking the value against the field's type (range of integers, finite floats, string,
bool, array sizes and bounds); ``message_fields`` is the way back. A value that does not fit
raises ``ReplyError``, whose text names the key; the node answers RESULT_OPERATION_FAILED
with it. ``installed_interface`` is the one place that looks up an interface type at run time
(a package or a type the installation may lack).
"""

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
import importlib
import re
from typing import Any

from acres_bridge.protocol.lines import is_int
from acres_bridge.protocol.lines import is_number

Reply = Mapping[str, Any]

_INT_RANGES = {
    'int8': (-(1 << 7), (1 << 7) - 1), 'uint8': (0, (1 << 8) - 1),
    'int16': (-(1 << 15), (1 << 15) - 1), 'uint16': (0, (1 << 16) - 1),
    'int32': (-(1 << 31), (1 << 31) - 1), 'uint32': (0, (1 << 32) - 1),
    'int64': (-(1 << 63), (1 << 63) - 1), 'uint64': (0, (1 << 64) - 1),
    'byte': (0, 255), 'octet': (0, 255),
}
_FLOAT_TYPES = ('double', 'float', 'long double')
_ARRAY = re.compile(r'^(?P<element>.+)\[(?P<size>\d+)\]$')
_SEQUENCE = re.compile(r'^sequence<(?P<element>[^,>]+)(?:, *(?P<bound>\d+))?>$')


class ReplyError(ValueError):
    """A reply that does not have the op's schema; the text names the key."""


def installed_interface(package: str, kind: str, name: str, part: str | None = None) -> Any:
    """
    Return an installed interface type, None when the package or the type is missing.

    :param kind: ``msg``, ``srv`` or ``action``.
    :param part: an attribute of the type (``Request``, ``Feedback``...), or the type itself.
    """
    try:
        module = importlib.import_module(f'{package}.{kind}')
    except ImportError:
        return None
    found = getattr(module, name, None)
    if found is not None and part is not None:
        found = getattr(found, part, None)
    return found


def has_field(message_type: type | None, name: str) -> bool:
    """Return whether a message type (None: not installed) has a field of that name."""
    return message_type is not None and name in message_type.get_fields_and_field_types()


def fill_message(message: Any, data: Reply, *, nested: Mapping[str, type] | None = None,
                 skip: Iterable[str] = (), key: str = '') -> Any:
    """
    Set each field of a message from the key of the same name, converting by field type.

    Keys the message lacks are ignored, fields the data lacks keep their defaults. Numbers
    must be JSON numbers in range (an integral float is taken for an integer field), strings
    strings, booleans booleans; a nested message field needs its class in ``nested``.

    :param key: the prefix of the key names in error texts.
    :return: the message.
    :raises ReplyError: naming the first key whose value does not fit.
    """
    nested = nested or {}
    skip = set(skip)
    for name, type_name in message.get_fields_and_field_types().items():
        if name in skip or name not in data:
            continue
        setattr(message, name, convert_value(data[name], type_name, f'{key}{name}',
                                             nested.get(name)))
    return message


def message_fields(message: Any) -> dict[str, Any]:
    """Return a message as JSON-ready fields: nested messages as objects, arrays as lists."""
    return {name: _to_json(getattr(message, name))
            for name in message.get_fields_and_field_types()}


def _to_json(value: Any) -> Any:
    if hasattr(value, 'get_fields_and_field_types'):
        return message_fields(value)
    if hasattr(value, 'tolist'):           # array.array and numpy arrays
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    return value


def convert_value(value: Any, type_name: str, key: str, nested: type | None = None) -> Any:
    """
    Return a JSON value converted for a field of a rosidl type (``uint16``, ``sequence<...>``).

    :raises ReplyError: naming the key when the value does not fit.
    """
    match = _SEQUENCE.match(type_name) or _ARRAY.match(type_name)
    if match is not None:
        if not isinstance(value, list):
            raise ReplyError(f'{key} must be a list')
        size = match.groupdict().get('size')
        if size is not None and len(value) != int(size):
            raise ReplyError(f'{key} must have {size} items, got {len(value)}')
        bound = match.groupdict().get('bound')
        if bound is not None and len(value) > int(bound):
            raise ReplyError(f'{key} must have at most {bound} items, got {len(value)}')
        element = match.group('element')
        return [convert_value(item, element, f'{key}[{index}]', nested)
                for index, item in enumerate(value)]
    if type_name in _FLOAT_TYPES:
        if not is_number(value):
            raise ReplyError(f'{key} must be a finite number, got {value!r}')
        return float(value)
    if type_name in _INT_RANGES:
        low, high = _INT_RANGES[type_name]
        if is_number(value) and float(value).is_integer():
            value = int(value)
        if not is_int(value) or not low <= value <= high:
            raise ReplyError(f'{key} must be an integer from {low} to {high}, got {value!r}')
        return value
    if type_name == 'boolean':
        if not isinstance(value, bool):
            raise ReplyError(f'{key} must be true or false, got {value!r}')
        return value
    if type_name.startswith(('string', 'wstring')):
        return string_value(value, key)
    if nested is None:
        raise ReplyError(f'{key}: no conversion for {type_name}')
    if not isinstance(value, Mapping):
        raise ReplyError(f'{key} must be an object')
    return fill_message(nested(), value, key=f'{key}.')


# --- value checks ----------------------------------------------------------------------------

def string_value(value: Any, key: str) -> str:
    """Return a JSON string; ReplyError naming the key for anything else."""
    if not isinstance(value, str):
        raise ReplyError(f'{key} must be a string, got {value!r}')
    return value


def strings_value(value: Any, key: str) -> list[str]:
    """Return a JSON list of strings; ReplyError naming the key for anything else."""
    if not isinstance(value, list):
        raise ReplyError(f'{key} must be a list of strings')
    return [string_value(item, f'{key}[{index}]') for index, item in enumerate(value)]


def reply_objects(reply: Reply, key: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Yield the key text and the object of each item of a reply's list of objects."""
    items = reply.get(key)
    if not isinstance(items, list):
        raise ReplyError(f'{key} must be a list')
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ReplyError(f'{key}[{index}] must be an object')
        yield f'{key}[{index}]', item
