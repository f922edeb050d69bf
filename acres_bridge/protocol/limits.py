# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sizes of the sensor stream's payloads, shared by the frame codec and the Hello parser.

The LiDAR and camera payloads open with a 16-byte sub-header of four uint32 (``SUB_HEADER``);
a LiDAR point is four float32 (``LIDAR_POINT_STEP``); a camera pixel is the bytes of its
encoding. :mod:`acres_bridge.protocol.frames` states the whole layout. The limits below are
what a header or a Hello may claim before the decoder refuses it, so that nothing is sized by
a lying claim.
"""

import struct

SUB_HEADER = struct.Struct('<4I')
SUB_HEADER_SIZE = SUB_HEADER.size

LIDAR_POINT_STEP = 16
CAMERA_ENCODINGS = {1: 'bgr8'}
CAMERA_ENCODING_CODES = {name: code for code, name in CAMERA_ENCODINGS.items()}
CAMERA_BYTES_PER_PIXEL = {'bgr8': 3}

# The most a header may claim for a type the current Hello does not size exactly (no Hello
# yet, a sensor the Hello calls disabled, an unknown type). A Polaris cloud is 0.9 MB and
# image 1.4 MB; a Hello is about 1.2 kB.
MAX_HELLO_PAYLOAD = 1 << 20
MAX_SENSOR_PAYLOAD = 64 << 20

# The largest layouts the decoder believes. They keep a lying Hello from sizing buffers.
MAX_LIDAR_POINTS = (MAX_SENSOR_PAYLOAD - SUB_HEADER_SIZE) // LIDAR_POINT_STEP
MAX_CAMERA_PIXELS = (MAX_SENSOR_PAYLOAD - SUB_HEADER_SIZE) // 3
