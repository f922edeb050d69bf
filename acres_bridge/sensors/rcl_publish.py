# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Publish a serialised message from any buffer, without a copy and without the GIL.

``Publisher.publish(bytes)`` holds the GIL while rmw sends a cloud, after a ``bytes()`` copy
of it, and no other thread of the process runs meanwhile (docs/benchmarks.md, "What the two
missed targets are made of", has the times). :func:`publish_serialised`
calls ``rcl_publish_serialized_message`` of the rcl library rclpy has loaded, through ctypes,
which lets go of the GIL for the call, on the buffer as it is. It takes the publisher's handle
as rclpy's own ``publish`` does, so the publisher cannot be destroyed during the call.

Where rcl's library cannot be found (a prefix laid out otherwise), :func:`publish_serialised`
falls back to ``publisher.publish(bytes(data))``; :data:`RCL_AVAILABLE` says which is in use.
"""

import ctypes
from typing import Any

from rclpy.publisher import Publisher

from acres_bridge.conversions.buffers import buffer_address

_RCL_RET_OK = 0
_ERROR_STRING_SIZE = 1024


class _Allocator(ctypes.Structure):
    """rcutils_allocator_t: four functions and a state pointer (unused here)."""

    _fields_ = [('allocate', ctypes.c_void_p), ('deallocate', ctypes.c_void_p),
                ('reallocate', ctypes.c_void_p), ('zero_allocate', ctypes.c_void_p),
                ('state', ctypes.c_void_p)]


class _SerializedMessage(ctypes.Structure):
    """rcutils_uint8_array_t, which rcl_serialized_message_t is."""

    _fields_ = [('buffer', ctypes.c_void_p), ('buffer_length', ctypes.c_size_t),
                ('buffer_capacity', ctypes.c_size_t), ('allocator', _Allocator)]


class _ErrorString(ctypes.Structure):
    """rcutils_error_string_t: one fixed-size C string."""

    _fields_ = [('text', ctypes.c_char * _ERROR_STRING_SIZE)]


def _loaded_library(stem: str) -> ctypes.CDLL | None:
    """Return the already loaded ``lib<stem>.so`` of this process (rclpy's), None if absent."""
    try:
        with open('/proc/self/maps', encoding='utf-8', errors='replace') as maps:
            for line in maps:
                path = line.rstrip('\n').split(maxsplit=5)[-1]
                if path.rsplit('/', 1)[-1] == f'lib{stem}.so':
                    return ctypes.CDLL(path)
    except OSError:
        pass
    return None


def _bind() -> tuple[Any, Any, Any] | None:
    # rclpy's extension links rcl and rcutils; importing Publisher above has loaded them.
    rcl, rcutils = _loaded_library('rcl'), _loaded_library('rcutils')
    if rcl is None or rcutils is None:
        return None
    publish = rcl.rcl_publish_serialized_message
    publish.argtypes = [ctypes.c_void_p, ctypes.POINTER(_SerializedMessage), ctypes.c_void_p]
    publish.restype = ctypes.c_int32
    error = rcutils.rcutils_get_error_string
    error.argtypes = []
    error.restype = _ErrorString
    reset = rcutils.rcutils_reset_error
    reset.argtypes = []
    reset.restype = None
    return publish, error, reset


_BOUND = _bind()
RCL_AVAILABLE = _BOUND is not None


def publish_serialised(publisher: Publisher, data: Any) -> None:
    """
    Publish ``data``, one serialised message of the publisher's type, as it is.

    The caller keeps ``data`` unchanged until this returns. rmw copies it into its own
    history during the call.

    :raises RuntimeError: with rcl's message when rcl refuses (a destroyed context, ...).
    :raises rclpy's InvalidHandle: for a destroyed publisher.
    """
    if _BOUND is None:
        publisher.publish(bytes(data))
        return
    publish, error_string, reset_error = _BOUND
    length = memoryview(data).nbytes
    message = _SerializedMessage(buffer=buffer_address(data), buffer_length=length,
                                 buffer_capacity=length)
    handle = publisher.handle
    with handle:
        ret = publish(handle.pointer, ctypes.byref(message), None)
    if ret != _RCL_RET_OK:
        text = error_string().text.decode(errors='replace')
        reset_error()
        raise RuntimeError(f'rcl_publish_serialized_message failed ({ret}): {text}')
