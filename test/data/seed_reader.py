import json
import socket
import struct

import numpy as np

# magic, type, flags, sequence, payload bytes, stamp, publish time
HEADER = struct.Struct("<4sHHIIdd")


def read_exact(sock, count):
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the stream closed")
        data += chunk
    return bytes(data)


def read_frame(sock):
    (magic, kind, flags, sequence, size,
     stamp_s, publish_s) = HEADER.unpack(read_exact(sock, 32))
    if magic != b"TSS1":
        raise ValueError("bad magic")
    return kind, sequence, stamp_s, read_exact(sock, size)


def lidar_cloud(payload):
    columns, rings, _, _ = struct.unpack_from("<4I", payload)
    points = np.frombuffer(payload, "<f4", columns * rings * 4, 16)
    return points.reshape(columns, rings, 4)


sock = socket.create_connection(("127.0.0.1", 5601))
while True:
    kind, sequence, stamp_s, payload = read_frame(sock)
    if kind == 1:
        hello = json.loads(payload)
        print("hello", hello["agent"], hello["lidar"]["columns"],
              "x", hello["lidar"]["rings"])
    elif kind == 4:
        cloud = lidar_cloud(payload)
        returns = np.isfinite(cloud[:, :, 0]).sum()
        print(f"lidar seq={sequence} stamp={stamp_s:.3f} s "
              f"shape={cloud.shape} returns={returns}")
        break
