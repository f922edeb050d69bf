# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The frames of the ACRES sensor stream (``-SensorStream=<port>``), encoded and decoded.

Every number is little-endian. A frame is a 32-byte header and a payload::

    offset  type      field
    0       char[4]   magic 'TSS1'
    4       uint16    frame type (FrameType, 1 to 6)
    6       uint16    flags, always 0
    8       uint32    sequence, one counter for all types of the stream
    12      uint32    payload bytes after the header
    16      float64   stamp: simulation (world) time of the data, s
    24      float64   publish time: CLOCK_MONOTONIC when the game queued the frame, s

Payloads by type:

* HELLO (1): one JSON object in UTF-8, the sensor layout of the agent (``Hello``,
  parsed by :mod:`acres_bridge.protocol.hello`).
* CLOCK (2): float64 vehicle time, s (the header stamp is the world time).
* INS (3): 40 float64, indexed by ``InsField``.
* LIDAR (4): uint32 columns, rings, point step (16), 0; then columns x rings points of
  float32 x, y, z, intensity in the LiDAR's FLU frame, m; cell (c, r) at index c * rings + r;
  NaN x, y, z and intensity 0 for a beam without a return.
* CAMERA (5): uint32 width, height, encoding (1 = bgr8), row step (3 x width); then
  height x row step bytes, top row first.
* BARRIER (6): uint64 step, the world physics step a lockstep request reached.

Decoding checks every length a header or sub-header claims against the limits of its type
under the current Hello (``max_payload_size``, the limits of
:mod:`acres_bridge.protocol.limits`) and against the bytes present before anything
is allocated or sliced. LiDAR points and camera pixels stay memoryviews of the payload given
to ``decode_payload``.
"""

import dataclasses
import enum
import struct
from typing import Sequence, TypeAlias

import numpy as np

from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.hello import parse_hello
from acres_bridge.protocol.limits import CAMERA_BYTES_PER_PIXEL
from acres_bridge.protocol.limits import CAMERA_ENCODING_CODES
from acres_bridge.protocol.limits import CAMERA_ENCODINGS
from acres_bridge.protocol.limits import LIDAR_POINT_STEP
from acres_bridge.protocol.limits import MAX_HELLO_PAYLOAD
from acres_bridge.protocol.limits import MAX_SENSOR_PAYLOAD
from acres_bridge.protocol.limits import SUB_HEADER
from acres_bridge.protocol.limits import SUB_HEADER_SIZE

MAGIC = b'TSS1'
HEADER = struct.Struct('<4sHHIIdd')
HEADER_SIZE = HEADER.size

_CLOCK = struct.Struct('<d')
_BARRIER = struct.Struct('<Q')


class FrameType(enum.IntEnum):
    """The frame type at offset 4 of the header."""

    HELLO = 1
    CLOCK = 2
    INS = 3
    LIDAR = 4
    CAMERA = 5
    BARRIER = 6


FRAME_NAMES = {
    FrameType.HELLO: 'hello',
    FrameType.CLOCK: 'clock',
    FrameType.INS: 'ins',
    FrameType.LIDAR: 'lidar',
    FrameType.CAMERA: 'camera',
    FrameType.BARRIER: 'barrier',
}


def frame_name(frame_type: int) -> str:
    """Return the name of a frame type in statistics ('lidar'), or its number as text."""
    return FRAME_NAMES.get(frame_type, str(frame_type))


class InsField(enum.IntEnum):
    """The index of each float64 of an INS payload."""

    UTM_E = 0
    UTM_N = 1
    UTM_H = 2
    UTM_QX = 3
    UTM_QY = 4
    UTM_QZ = 5
    UTM_QW = 6
    VEL_X = 7
    VEL_Y = 8
    VEL_Z = 9
    GYRO_X = 10
    GYRO_Y = 11
    GYRO_Z = 12
    ACCEL_X = 13
    ACCEL_Y = 14
    ACCEL_Z = 15
    LAT = 16
    LON = 17
    HEIGHT = 18
    COV_E = 19
    COV_N = 20
    COV_U = 21
    ENU_QX = 22
    ENU_QY = 23
    ENU_QZ = 24
    ENU_QW = 25
    ENU_X = 26
    ENU_Y = 27
    ENU_Z = 28
    FIX_STATUS = 29
    GRID_ROTATION_DEG = 30
    UTM_ZONE = 31
    TRUTH_X = 32
    TRUTH_Y = 33
    TRUTH_Z = 34
    TRUTH_QX = 35
    TRUTH_QY = 36
    TRUTH_QZ = 37
    TRUTH_QW = 38
    TRUTH_SPEED = 39


INS_FIELD_COUNT = 40
_INS = struct.Struct(f'<{INS_FIELD_COUNT}d')

_EXACT_PAYLOAD = {
    FrameType.CLOCK: _CLOCK.size,
    FrameType.INS: _INS.size,
    FrameType.BARRIER: _BARRIER.size,
}


@dataclasses.dataclass(frozen=True, slots=True)
class FrameHeader:
    """A decoded 32-byte frame header."""

    frame_type: int
    flags: int
    sequence: int
    payload_size: int
    stamp_s: float
    publish_s: float


@dataclasses.dataclass(frozen=True, slots=True)
class HelloFrame:
    """A Hello frame."""

    header: FrameHeader
    hello: Hello


@dataclasses.dataclass(frozen=True, slots=True)
class ClockFrame:
    """A Clock frame: the header stamp is world time, ``vehicle_time_s`` the agent's."""

    header: FrameHeader
    vehicle_time_s: float


@dataclasses.dataclass(frozen=True, slots=True)
class InsFrame:
    """An INS frame: 40 floats, index them with ``InsField``."""

    header: FrameHeader
    values: tuple[float, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class LidarFrame:
    """
    A LiDAR frame.

    ``points`` is a flat byte memoryview of columns x rings x point_step bytes (float32 x, y,
    z, intensity, little-endian) into the buffer the payload came from: valid until the reader
    reads the next frame.
    """

    header: FrameHeader
    columns: int
    rings: int
    point_step: int
    points: memoryview


@dataclasses.dataclass(frozen=True, slots=True)
class CameraFrame:
    """
    A Camera frame.

    ``pixels`` is a flat byte memoryview of height x row_step bytes, top row first, into the
    buffer the payload came from: valid until the reader reads the next frame.
    """

    header: FrameHeader
    width: int
    height: int
    encoding: str
    row_step: int
    pixels: memoryview


@dataclasses.dataclass(frozen=True, slots=True)
class BarrierFrame:
    """A Barrier frame: every frame of the lockstep steps up to ``step`` came before it."""

    header: FrameHeader
    step: int


Frame: TypeAlias = (HelloFrame | ClockFrame | InsFrame | LidarFrame | CameraFrame
                    | BarrierFrame)


# --- header ----------------------------------------------------------------------------------

def encode_header(frame_type: int, *, sequence: int, payload_size: int, stamp_s: float,
                  publish_s: float, flags: int = 0) -> bytes:
    """Return the 32-byte header of a frame."""
    return HEADER.pack(MAGIC, frame_type, flags, sequence, payload_size, stamp_s, publish_s)


def decode_header(data: bytes | bytearray | memoryview) -> FrameHeader:
    """
    Decode the first 32 bytes of ``data`` as a frame header.

    :raises FrameError: when fewer than 32 bytes are given or the magic is not TSS1.
    """
    if len(data) < HEADER_SIZE:
        raise FrameError(f'frame header needs {HEADER_SIZE} bytes, got {len(data)}')
    magic, frame_type, flags, sequence, size, stamp_s, publish_s = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise FrameError(f'bad magic {bytes(magic)!r}, expected {MAGIC!r}')
    return FrameHeader(frame_type, flags, sequence, size, stamp_s, publish_s)


def encode_frame(frame_type: int, payload: bytes | bytearray | memoryview, *, sequence: int,
                 stamp_s: float, publish_s: float) -> bytes:
    """Return the header and the payload of one frame as one bytes object."""
    header = encode_header(frame_type, sequence=sequence, payload_size=len(payload),
                           stamp_s=stamp_s, publish_s=publish_s)
    return b''.join((header, payload))


# --- payload encoders ------------------------------------------------------------------------

def encode_clock_payload(vehicle_time_s: float) -> bytes:
    """Return the Clock payload: the vehicle time as float64."""
    return _CLOCK.pack(vehicle_time_s)


def encode_ins_payload(values: Sequence[float] | np.ndarray) -> bytes:
    """
    Return the INS payload: 40 float64.

    :raises ValueError: unless exactly 40 values are given.
    """
    if len(values) != INS_FIELD_COUNT:
        raise ValueError(f'an INS payload has {INS_FIELD_COUNT} values, got {len(values)}')
    return _INS.pack(*(float(value) for value in values))


def encode_lidar_payload(points: np.ndarray) -> bytes:
    """
    Return the LiDAR payload of an organised cloud.

    :param points: shape (columns, rings, 4): x, y, z, intensity, converted to float32.
    :raises ValueError: for another shape.
    """
    if points.ndim != 3 or points.shape[2] != 4:
        raise ValueError(f'LiDAR points need shape (columns, rings, 4), got {points.shape}')
    columns, rings, _ = points.shape
    data = np.ascontiguousarray(points, dtype='<f4')
    return b''.join((SUB_HEADER.pack(columns, rings, LIDAR_POINT_STEP, 0), data.data))


def encode_camera_payload(pixels: np.ndarray, *, encoding: str = 'bgr8') -> bytes:
    """
    Return the Camera payload of an image.

    :param pixels: shape (height, width, 3), uint8, blue, green, red, top row first.
    :raises ValueError: for another shape, type or encoding.
    """
    if encoding not in CAMERA_ENCODING_CODES:
        raise ValueError(f'unknown camera encoding {encoding!r}')
    channels = CAMERA_BYTES_PER_PIXEL[encoding]
    if pixels.ndim != 3 or pixels.shape[2] != channels or pixels.dtype != np.uint8:
        raise ValueError(f'{encoding} pixels need shape (height, width, {channels}) uint8, '
                         f'got {pixels.shape} {pixels.dtype}')
    height, width, _ = pixels.shape
    data = np.ascontiguousarray(pixels)
    sub_header = SUB_HEADER.pack(width, height, CAMERA_ENCODING_CODES[encoding],
                                 width * channels)
    return b''.join((sub_header, data.data))


def encode_barrier_payload(step: int) -> bytes:
    """Return the Barrier payload: the step as uint64."""
    return _BARRIER.pack(step)


# --- payload decoders ------------------------------------------------------------------------

def lidar_payload_size(columns: int, rings: int) -> int:
    """Return the payload size of a LiDAR frame of columns x rings points."""
    return SUB_HEADER_SIZE + columns * rings * LIDAR_POINT_STEP


def camera_payload_size(width: int, height: int, encoding: str = 'bgr8') -> int:
    """Return the payload size of a Camera frame without row padding."""
    return SUB_HEADER_SIZE + width * height * CAMERA_BYTES_PER_PIXEL[encoding]


def max_payload_size(frame_type: int, hello: Hello | None) -> int:
    """
    Return the most payload bytes a header of this type may claim.

    Clock, INS and Barrier have fixed sizes. LiDAR and Camera frames have the exact size of
    the layout of ``hello`` when it enables the sensor, else ``MAX_SENSOR_PAYLOAD``. A Hello
    is at most ``MAX_HELLO_PAYLOAD``; an unknown type at most ``MAX_SENSOR_PAYLOAD``.
    """
    if frame_type in _EXACT_PAYLOAD:
        return _EXACT_PAYLOAD[frame_type]
    if frame_type == FrameType.HELLO:
        return MAX_HELLO_PAYLOAD
    if frame_type == FrameType.LIDAR and hello is not None and hello.lidar.enabled:
        return lidar_payload_size(hello.lidar.columns, hello.lidar.rings)
    if frame_type == FrameType.CAMERA and hello is not None and hello.camera.enabled:
        camera = hello.camera
        return camera_payload_size(camera.width, camera.height, camera.encoding)
    return MAX_SENSOR_PAYLOAD


def _decode_lidar(header: FrameHeader, payload: memoryview, hello: Hello | None) -> LidarFrame:
    columns, rings, point_step, _ = SUB_HEADER.unpack_from(payload)
    if point_step != LIDAR_POINT_STEP:
        raise FrameError(f'LiDAR point step {point_step}, expected {LIDAR_POINT_STEP}')
    if hello is not None and hello.lidar.enabled and (
            (columns, rings) != (hello.lidar.columns, hello.lidar.rings)):
        raise FrameError(f'LiDAR frame of {columns} x {rings} points, the Hello says '
                         f'{hello.lidar.columns} x {hello.lidar.rings}')
    size = lidar_payload_size(columns, rings)
    if size != len(payload):
        raise FrameError(f'LiDAR frame of {columns} x {rings} points needs {size} payload '
                         f'bytes, has {len(payload)}')
    return LidarFrame(header, columns, rings, point_step, payload[SUB_HEADER_SIZE:])


def _decode_camera(header: FrameHeader, payload: memoryview,
                   hello: Hello | None) -> CameraFrame:
    width, height, code, row_step = SUB_HEADER.unpack_from(payload)
    encoding = CAMERA_ENCODINGS.get(code)
    if encoding is None:
        raise FrameError(f'camera encoding {code} is unknown')
    if row_step < width * CAMERA_BYTES_PER_PIXEL[encoding]:
        raise FrameError(f'camera row step {row_step} is less than a {encoding} row of '
                         f'{width} pixels')
    if hello is not None and hello.camera.enabled and (
            (width, height) != (hello.camera.width, hello.camera.height)):
        raise FrameError(f'camera frame of {width} x {height} pixels, the Hello says '
                         f'{hello.camera.width} x {hello.camera.height}')
    size = SUB_HEADER_SIZE + height * row_step
    if size != len(payload):
        raise FrameError(f'camera frame of {height} rows of {row_step} bytes needs {size} '
                         f'payload bytes, has {len(payload)}')
    return CameraFrame(header, width, height, encoding, row_step, payload[SUB_HEADER_SIZE:])


def decode_payload(header: FrameHeader, payload: memoryview | bytes | bytearray,
                   hello: Hello | None) -> Frame:
    """
    Decode the payload of one frame of a known type.

    :param header: the decoded header; its payload size must match ``payload``.
    :param payload: exactly the payload bytes. LiDAR points and camera pixels of the result
        are memoryviews into it.
    :param hello: the current Hello of the connection, or None before the first one. With a
        Hello, LiDAR and camera frames must match its layout.
    :raises FrameError: for an unknown type or any length or field that breaks the layout.
    """
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast('B')
    size = len(view)
    kind = header.frame_type
    name = frame_name(kind)
    if size != header.payload_size:
        raise FrameError(f'{name} frame: header claims {header.payload_size} payload bytes, '
                         f'got {size}')
    if kind in _EXACT_PAYLOAD:
        if size != _EXACT_PAYLOAD[kind]:
            raise FrameError(f'{name} frame: payload of {size} bytes, expected '
                             f'{_EXACT_PAYLOAD[kind]}')
        if kind == FrameType.CLOCK:
            return ClockFrame(header, _CLOCK.unpack(view)[0])
        if kind == FrameType.INS:
            return InsFrame(header, _INS.unpack(view))
        return BarrierFrame(header, _BARRIER.unpack(view)[0])
    limit = max_payload_size(kind, hello)
    if size > limit:
        raise FrameError(f'{name} frame: payload of {size} bytes exceeds the limit of {limit}')
    if kind == FrameType.HELLO:
        return HelloFrame(header, parse_hello(view))
    if kind in (FrameType.LIDAR, FrameType.CAMERA):
        if size < SUB_HEADER_SIZE:
            raise FrameError(f'{name} frame: payload of {size} bytes has no sub-header')
        if kind == FrameType.LIDAR:
            return _decode_lidar(header, view, hello)
        return _decode_camera(header, view, hello)
    raise FrameError(f'unknown frame type {kind}')
