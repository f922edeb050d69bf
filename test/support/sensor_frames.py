# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Decoded sensor stream frames for the conversion tests, built with the protocol encoders."""

import json
import math
import pathlib
from typing import Any

import numpy as np

from acres_bridge.protocol import frames
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.hello import Hello

DATA = pathlib.Path(__file__).parents[1] / 'data'


def polaris_hello_dict() -> dict[str, Any]:
    """Return the Hello object of the seed's Polaris."""
    return json.loads((DATA / 'hello_polaris.json').read_text())


def decode(frame_type: int, payload: bytes, *, stamp_s: float = 0.0, sequence: int = 1,
           hello: Hello | None = None) -> frames.Frame:
    """Return the decoded frame of a payload, as the reader would hand it out."""
    header = frames.FrameHeader(frame_type, 0, sequence, len(payload), stamp_s, 0.0)
    return frames.decode_payload(header, memoryview(bytearray(payload)), hello)


def hello_frame(hello: dict[str, Any] | None = None, *, stamp_s: float = 0.0) -> frames.HelloFrame:
    """Return a Hello frame (default: the Polaris of the seed)."""
    payload = encode_hello_payload(hello or polaris_hello_dict())
    return decode(FrameType.HELLO, payload, stamp_s=stamp_s)


def lidar_points(columns: int, rings: int, *, seed: int = 1, misses: float = 0.3) -> np.ndarray:
    """Return (columns, rings, 4) float32 points with NaN x, y, z and 0 intensity for misses."""
    rng = np.random.default_rng(seed)
    points = rng.uniform(-50.0, 50.0, (columns, rings, 4)).astype(np.float32)
    points[..., 3] = rng.integers(0, 256, (columns, rings))
    miss = rng.random((columns, rings)) < misses
    points[miss, :3] = np.nan
    points[miss, 3] = 0.0
    return points


def lidar_frame(points: np.ndarray, *, stamp_s: float = 1.25) -> frames.LidarFrame:
    """Return the decoded LiDAR frame of (columns, rings, 4) points."""
    return decode(FrameType.LIDAR, frames.encode_lidar_payload(points), stamp_s=stamp_s)


def camera_frame(pixels: np.ndarray, *, stamp_s: float = 1.25) -> frames.CameraFrame:
    """Return the decoded Camera frame of (height, width, 3) uint8 pixels."""
    return decode(FrameType.CAMERA, frames.encode_camera_payload(pixels), stamp_s=stamp_s)


def distinct_ins_values() -> list[float]:
    """Return 40 INS values that tell every index apart: value i is 1000 + i (status 2)."""
    values = [1000.0 + index for index in range(frames.INS_FIELD_COUNT)]
    values[frames.InsField.FIX_STATUS] = 2.0
    return values


def not_georeferenced(values: list[float]) -> list[float]:
    """Return INS values as the simulator sends them without a geographic reference."""
    values = list(values)
    for index in [*range(0, 7), *range(16, 22), 30, 31]:
        values[index] = math.nan
    values[frames.InsField.FIX_STATUS] = -1.0
    return values


def ins_frame(values: list[float], *, stamp_s: float = 2.5) -> frames.InsFrame:
    """Return the decoded INS frame of 40 values."""
    return decode(FrameType.INS, frames.encode_ins_payload(values), stamp_s=stamp_s)
