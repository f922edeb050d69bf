# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Payload bytes into ``uint8[]`` message fields with one copy.

rclpy's generated setters store an ``array.array('B')`` as it is only when they check fields
(always on Humble; on Jazzy and later only with ``check_fields=True`` or
``ROS_PYTHON_CHECK_FIELDS=1``); otherwise they copy it once more with ``array.array('B',
value)``. Anything but an array (a memoryview, a numpy array, bytes on Humble) goes element by
element, hundreds of times slower for an image (docs/benchmarks.md, "Figures behind choices in
the code"). So the bridge builds the array with
``frombytes`` (one memcpy from the reader's buffer) and creates the message with
:func:`keep_array_options`, which asks for checked fields where the message type knows them.
"""

import array
from typing import Any

import numpy as np


def uint8_array(data: Any) -> array.array:
    """Return an ``array('B')`` copy of any buffer (one memcpy)."""
    result = array.array('B')
    result.frombytes(data)
    return result


def keep_array_options(message_type: type) -> dict[str, Any]:
    """Return the constructor options under which ``message_type`` keeps an array as given."""
    return {'check_fields': True} if '_check_fields' in getattr(
        message_type, '__slots__', ()) else {}


def buffer_address(data: Any) -> int:
    """Return the address of a buffer's first byte (0 for an empty one): where it lives."""
    view = np.frombuffer(data, np.uint8)
    return view.ctypes.data if view.size else 0
