# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A stream's ``camera/image_raw/compressed``: images encoded and published on a thread of their own.

Encoding a camera image takes milliseconds (docs/benchmarks.md); on the stream's reader that
would hold back the raw image's successors, ``/clock`` and a lockstep answer. The reader asks
:meth:`ImageEncoder.wanted` (does the topic have a subscriber?) and only then hands over a copy
of the pixels; with no subscriber nothing is copied or encoded (``encoded`` stays 0). The
hand-off holds :data:`CAPACITY` images and drops the oldest when a new one comes: a viewer
wants the latest picture, and a slow encode must never make the reader wait. The thread
``sensor-enc:<name>`` encodes (conversions/compressed.py, which releases the GIL) and
publishes with ``publish_serialised``. Lockstep's barrier waits for :meth:`drain`, like the
outboxes', so a step's compressed images are out before its barrier.
"""

from collections.abc import Callable
import dataclasses
import time

import numpy as np
from rclpy.publisher import Publisher

from acres_bridge.conversions.compressed import compressed_format
from acres_bridge.conversions.compressed import compressed_image_cdr
from acres_bridge.conversions.compressed import encode_bgr8
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.sensors.outbox import SenderThread
from acres_bridge.sensors.rcl_publish import publish_serialised

# Images waiting to be encoded; the oldest goes when a new one comes. Eight ride out a stall
# of the encoder thread of most of a second at 10 Hz (a busy machine starves a thread that
# long), for 11 MB of pixel copies at the most.
CAPACITY = 8


@dataclasses.dataclass(frozen=True, slots=True)
class _Picture:
    """One image to encode: a copy of its pixels and what its message needs."""

    pixels: np.ndarray
    stamp_s: float
    frame_id: str
    image_format: str


class ImageEncoder(SenderThread[_Picture]):
    """
    Encode and publish compressed images in the order given, on a thread of their own.

    :param name: names the thread (``sensor-enc:<name>``).
    :param publisher: the CompressedImage publisher.
    :param image_format: ``jpeg`` or ``png``.
    :param on_error: called on that thread with the exception of an image that failed.
    """

    def __init__(self, name: str, publisher: Publisher, *, image_format: str, jpeg_quality: int,
                 png_level: int, on_error: Callable[[Exception], None],
                 capacity: int = CAPACITY) -> None:
        super().__init__(f'sensor-enc:{name}')
        self._publisher = publisher
        self._format = image_format
        self._jpeg_quality = jpeg_quality
        self._png_level = png_level
        self._on_error = on_error
        self._capacity = capacity
        self.encoded = 0
        self.dropped = 0
        self.failed = 0
        self.last_encode_ms: float | None = None

    def wanted(self) -> bool:
        """Return whether the compressed topic has a subscriber (the only time to encode)."""
        return self._publisher.get_subscription_count() > 0

    def put(self, frame: CameraFrame, frame_id: str) -> None:
        """Hand over a copy of a bgr8 frame's pixels; the oldest waiting image goes if full."""
        pixels = np.frombuffer(frame.pixels, dtype=np.uint8).reshape(
            frame.height, frame.row_step)[:, :frame.width * 3].reshape(
            frame.height, frame.width, 3).copy()
        picture = _Picture(pixels, frame.header.stamp_s, frame_id,
                           compressed_format(frame.encoding, self._format))
        with self._changed:
            if self._stopping:
                return
            if len(self._queue) >= self._capacity:
                self._queue.popleft()
                self.dropped += 1
            self._queue.append(picture)
            self._changed.notify_all()

    @property
    def stats(self) -> dict:
        """Return ``format encoded dropped failed last_encode_ms`` (a fresh dict)."""
        return {'format': self._format, 'encoded': self.encoded, 'dropped': self.dropped,
                'failed': self.failed, 'last_encode_ms': self.last_encode_ms}

    def _send(self, picture: _Picture) -> None:
        started = time.perf_counter()
        data = encode_bgr8(picture.pixels, image_format=self._format,
                           jpeg_quality=self._jpeg_quality, png_level=self._png_level)
        self.last_encode_ms = (time.perf_counter() - started) * 1e3
        self.encoded += 1
        publish_serialised(self._publisher, compressed_image_cdr(
            data, stamp_s=picture.stamp_s, frame_id=picture.frame_id,
            image_format=picture.image_format))

    def _failed(self, picture: _Picture, exc: Exception) -> None:
        self.failed += 1
        self._on_error(exc)
