# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The Hello: the JSON sensor layout an agent's stream opens with, as typed data classes.

This module owns the Hello's schema: :class:`Hello` and its ``lidar``, ``camera`` and ``ins``
layouts, :func:`parse_hello` (UTF-8 JSON to a ``Hello``, every key type-checked and every size
bounded by :mod:`acres_bridge.protocol.limits`, errors naming the key path) and
:func:`encode_hello_payload`. The frame that carries it is :mod:`acres_bridge.protocol.frames`'s.
A key the JSON lacks takes its layout's default; a missing sensor is disabled.
"""

import dataclasses
import json
from typing import Any, TypeAlias

from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.limits import CAMERA_ENCODING_CODES
from acres_bridge.protocol.limits import MAX_CAMERA_PIXELS
from acres_bridge.protocol.limits import MAX_LIDAR_POINTS

SCHEMA = 'acres-sensor-stream-1'

Vector3: TypeAlias = tuple[float, float, float]
_ZERO3: Vector3 = (0.0, 0.0, 0.0)
_ZERO5 = (0.0, 0.0, 0.0, 0.0, 0.0)


@dataclasses.dataclass(frozen=True, slots=True)
class LidarLayout:
    """The ``lidar`` object of the Hello."""

    enabled: bool = False
    frame_id: str = 'lidar'
    hz: float = 0.0
    columns: int = 0
    rings: int = 0
    range_m: float = 0.0
    azimuth_order: str = 'cw'
    position_flu_m: Vector3 = _ZERO3
    rpy_deg: Vector3 = _ZERO3


@dataclasses.dataclass(frozen=True, slots=True)
class CameraLayout:
    """The ``camera`` object of the Hello."""

    enabled: bool = False
    hz: float = 0.0
    width: int = 0
    height: int = 0
    fx: float = 0.0
    fy: float = 0.0
    cx: float = 0.0
    cy: float = 0.0
    distortion_model: str = 'plumb_bob'
    d: tuple[float, ...] = _ZERO5
    encoding: str = 'bgr8'
    position_flu_m: Vector3 = _ZERO3
    rpy_deg: Vector3 = _ZERO3


@dataclasses.dataclass(frozen=True, slots=True)
class InsLayout:
    """The ``ins`` object of the Hello."""

    enabled: bool = False
    hz: float = 0.0
    position_flu_m: Vector3 = _ZERO3
    utm_zone: int = 0
    datum: str = ''
    imu_position_flu_m: Vector3 = _ZERO3
    gnss_antenna_flu_m: Vector3 = _ZERO3


@dataclasses.dataclass(frozen=True, slots=True)
class Hello:
    """
    The sensor layout of one agent, from the Hello frame.

    Keys the JSON lacks take the defaults of the layouts (a missing sensor is disabled);
    ``raw`` holds the whole object as parsed, including keys this schema does not name.
    """

    schema: str
    agent: str
    vehicle: str
    georeferenced: bool
    mount_convention: str
    body_origin_flu_m: Vector3
    lidar: LidarLayout
    camera: CameraLayout
    ins: InsLayout
    raw: dict[str, Any] = dataclasses.field(compare=False, repr=False)


def encode_hello_payload(hello: dict[str, Any]) -> bytes:
    """Return the UTF-8 JSON of a Hello object."""
    return json.dumps(hello, separators=(',', ':'), allow_nan=False).encode('utf-8')


_MAX_LIST = 16


class _Section:
    """Typed access to one JSON object of the Hello, naming the key path in errors."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise FrameError(f'Hello: {path or "the payload"} is not a JSON object')
        self._data = data
        self._path = path

    def _key(self, key: str) -> str:
        return f'{self._path}.{key}' if self._path else key

    def _value(self, key: str, default: Any) -> Any:
        value = self._data.get(key, default)
        return default if value is None else value

    def section(self, key: str) -> '_Section':
        return _Section(self._value(key, {}), self._key(key))

    def text(self, key: str, default: str = '') -> str:
        value = self._value(key, default)
        if not isinstance(value, str):
            raise FrameError(f'Hello: {self._key(key)} is not a string: {value!r}')
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self._value(key, default)
        if not isinstance(value, bool):
            raise FrameError(f'Hello: {self._key(key)} is not a boolean: {value!r}')
        return value

    def integer(self, key: str, default: int = 0, *, low: int = 0,
                high: int = 1 << 31) -> int:
        value = self._value(key, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise FrameError(
                f'Hello: {self._key(key)} is not an integer from {low} to {high}: {value!r}')
        return value

    def number(self, key: str, default: float = 0.0) -> float:
        value = self._value(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FrameError(f'Hello: {self._key(key)} is not a number: {value!r}')
        return float(value)

    def numbers(self, key: str, default: tuple[float, ...], *,
                any_length: bool = False) -> tuple[float, ...]:
        value = self._value(key, default)
        lengths = range(_MAX_LIST + 1) if any_length else (len(default),)
        if (not isinstance(value, list | tuple) or len(value) not in lengths
                or any(isinstance(item, bool) or not isinstance(item, int | float)
                       for item in value)):
            count = f'up to {_MAX_LIST}' if any_length else len(default)
            raise FrameError(
                f'Hello: {self._key(key)} is not a list of {count} numbers: {value!r}')
        return tuple(float(item) for item in value)


def _parse_lidar(section: _Section) -> LidarLayout:
    layout = LidarLayout(
        enabled=section.flag('enabled'),
        frame_id=section.text('frame_id', 'lidar'),
        hz=section.number('hz'),
        columns=section.integer('columns', high=MAX_LIDAR_POINTS),
        rings=section.integer('rings', high=MAX_LIDAR_POINTS),
        range_m=section.number('range_m'),
        azimuth_order=section.text('azimuth_order', 'cw'),
        position_flu_m=section.numbers('position_flu_m', _ZERO3),
        rpy_deg=section.numbers('rpy_deg', _ZERO3),
    )
    if layout.enabled and not 0 < layout.columns * layout.rings <= MAX_LIDAR_POINTS:
        raise FrameError(f'Hello: lidar of {layout.columns} x {layout.rings} points is not '
                         f'from 1 to {MAX_LIDAR_POINTS} points')
    if layout.azimuth_order not in ('cw', 'ccw'):
        raise FrameError(f'Hello: lidar.azimuth_order is {layout.azimuth_order!r}, '
                         'not cw or ccw')
    return layout


def _parse_camera(section: _Section) -> CameraLayout:
    layout = CameraLayout(
        enabled=section.flag('enabled'),
        hz=section.number('hz'),
        width=section.integer('width', high=MAX_CAMERA_PIXELS),
        height=section.integer('height', high=MAX_CAMERA_PIXELS),
        fx=section.number('fx'),
        fy=section.number('fy'),
        cx=section.number('cx'),
        cy=section.number('cy'),
        distortion_model=section.text('distortion_model', 'plumb_bob'),
        d=section.numbers('d', _ZERO5, any_length=True),
        encoding=section.text('encoding', 'bgr8'),
        position_flu_m=section.numbers('position_flu_m', _ZERO3),
        rpy_deg=section.numbers('rpy_deg', _ZERO3),
    )
    if layout.enabled:
        if layout.encoding not in CAMERA_ENCODING_CODES:
            raise FrameError(f'Hello: camera.encoding {layout.encoding!r} is not one of '
                             f'{sorted(CAMERA_ENCODING_CODES)}')
        if not 0 < layout.width * layout.height <= MAX_CAMERA_PIXELS:
            raise FrameError(f'Hello: camera of {layout.width} x {layout.height} pixels is '
                             f'not from 1 to {MAX_CAMERA_PIXELS} pixels')
    return layout


def _parse_ins(section: _Section) -> InsLayout:
    return InsLayout(
        enabled=section.flag('enabled'),
        hz=section.number('hz'),
        position_flu_m=section.numbers('position_flu_m', _ZERO3),
        utm_zone=section.integer('utm_zone', high=60),
        datum=section.text('datum'),
        imu_position_flu_m=section.numbers('imu_position_flu_m', _ZERO3),
        gnss_antenna_flu_m=section.numbers('gnss_antenna_flu_m', _ZERO3),
    )


def parse_hello(payload: bytes | bytearray | memoryview) -> Hello:
    """
    Parse the JSON payload of a Hello frame.

    :raises FrameError: when the payload is not UTF-8 JSON of an object or a key has the
        wrong type or an impossible size.
    """
    try:
        raw = json.loads(bytes(payload).decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameError(f'Hello: the payload is not UTF-8 JSON: {exc}') from exc
    root = _Section(raw, '')
    return Hello(
        schema=root.text('schema'),
        agent=root.text('agent'),
        vehicle=root.text('vehicle'),
        georeferenced=root.flag('georeferenced'),
        mount_convention=root.text('mount_convention'),
        body_origin_flu_m=root.numbers('body_origin_flu_m', _ZERO3),
        lidar=_parse_lidar(root.section('lidar')),
        camera=_parse_camera(root.section('camera')),
        ins=_parse_ins(root.section('ins')),
        raw=raw,
    )
