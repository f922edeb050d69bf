# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
LiDAR frames to organised ``sensor_msgs/PointCloud2`` clouds.

The cloud keeps the frame's organisation: ``height`` = columns, ``width`` = rings, the point
of column c and ring r at row c, column r (the frame's cell index c x rings + r), little-endian,
``is_dense`` false (a beam without a return is NaN x, y, z with intensity 0).

``xyzi`` (point step 16, the frame's own points)::

    offset  field      type
    0       x          FLOAT32   m, LiDAR frame (FLU)
    4       y          FLOAT32
    8       z          FLOAT32
    12      intensity  FLOAT32   the reflectivity byte, 0 to 255

``data`` is then byte for byte the frame's points. ``xyzirt`` (point step 24) adds::

    16      ring       UINT16    the ring index r
    18      (2 bytes of padding, zero, so that time is aligned)
    20      time       FLOAT32   s relative to the cloud's stamp: the column's firing time

The frame has no time per point: the LiDAR dataset's firing rule gives it (:class:`PointTimes`
holds its inputs, :func:`column_times_s` applies it). The rule is stated for the clockwise
column order: column c fires (columns - 1 - c) / columns x sweep before the frame's stamp (the
end of the sweep), so column 0, straight ahead, fires first and the last column, one step left
of ahead, at the stamp. The head turns clockwise (seen from above) whatever order the frame lists
its columns in; ``azimuth_order`` ccw only lists them the other way from the same column 0
(the emulator's and the stream's convention), so ccw column c is the beam of cw column
(columns - c) mod columns: column 0 still fires first, column 1 last (at the stamp), and column
c >= 1 fires (c - 1) / columns x sweep before the stamp. A sweep of 0 (a scan of one instant:
ACRES Core without its sweep option) gives every point the stamp.

Two origins: ``end`` (the default) keeps the frame's stamp and gives times <= 0; ``start`` (what
LIO-SAM and FAST-LIO read: the header stamp is the start of the scan and ``time`` a
non-negative offset from it) stamps the cloud one sweep earlier, ``stamp - sweep``, and gives
times in (0, sweep]. Either way the header stamp plus ``time`` is the column's firing time.

``autoware`` (point step 32) is Autoware's PointXYZIRCAEDT (conversions/autoware_points.py has
the definition, its source and what fills each field): ``time_stamp`` is unsigned nanoseconds
after the header stamp, so it takes the ``start`` origin only. ``autoware_dense`` is the same
points as Autoware's drivers publish them: the returns only, in one row (``height`` 1,
``width`` the returns, ``is_dense`` true), in the frame's cell order.

The bridge publishes clouds serialised (:class:`CloudBuffer`): the fields before ``data`` are
built once per layout and frame id, and an xyzi frame's payload is received straight into the
message, its 16-byte sub-header over the last 16 bytes of that prefix (rewritten after each
frame), so the points are never copied in Python before ``bytes()``. An xyzirt message keeps
ring and time in its buffer and takes each frame's points as one strided numpy copy.
"""

import array
import dataclasses
import functools
import math

import numpy as np
from sensor_msgs.msg import PointCloud2
from sensor_msgs.msg import PointField
from std_msgs.msg import Header

from acres_bridge.conversions import autoware_points
from acres_bridge.conversions import cdr
from acres_bridge.conversions.buffers import keep_array_options
from acres_bridge.conversions.buffers import uint8_array
from acres_bridge.conversions.clock import stamp_to_sec_nanosec
from acres_bridge.protocol.frames import LidarFrame
from acres_bridge.protocol.hello import LidarLayout
from acres_bridge.protocol.limits import LIDAR_POINT_STEP
from acres_bridge.protocol.limits import SUB_HEADER_SIZE

POINT_FIELD_SETS = ('xyzi', 'xyzirt', 'autoware', 'autoware_dense')
# The field sets whose time is unsigned, after the stamp: the start origin only.
AUTOWARE_FIELD_SETS = ('autoware', 'autoware_dense')
AZIMUTH_ORDERS = ('cw', 'ccw')
TIME_ORIGINS = ('end', 'start')
# A sweep parameter below 0 means one scan period, 1 / lidar.hz of the Hello.
ONE_SCAN_PERIOD = -1.0
XYZI_POINT_STEP = LIDAR_POINT_STEP
XYZIRT_POINT_STEP = 24
AUTOWARE_POINT_STEP = autoware_points.POINT_STEP

# (name, offset, datatype) of each field, in the order of the cloud.
_XYZI = (('x', 0, PointField.FLOAT32), ('y', 4, PointField.FLOAT32),
         ('z', 8, PointField.FLOAT32), ('intensity', 12, PointField.FLOAT32))
_XYZIRT = _XYZI + (('ring', 16, PointField.UINT16), ('time', 20, PointField.FLOAT32))

# The 16 bytes of a frame's point as one item, and where they go in an xyzirt point.
_XYZI_ITEM = np.dtype('V16')
_XYZI_CELL = np.dtype({'names': ['xyzi'], 'formats': [_XYZI_ITEM], 'offsets': [0],
                       'itemsize': XYZIRT_POINT_STEP})
_KEEP_ARRAY = keep_array_options(PointCloud2)
# The field after a serialised cloud's data: is_dense, false (a miss is a NaN point).
_IS_DENSE = b'\x00'
_DENSE = b'\x01'

XYZIRT_DTYPE = np.dtype({
    'names': ['x', 'y', 'z', 'intensity', 'ring', 'time'],
    'formats': ['<f4', '<f4', '<f4', '<f4', '<u2', '<f4'],
    'offsets': [0, 4, 8, 12, 16, 20],
    'itemsize': XYZIRT_POINT_STEP,
})


def point_fields(fields: str = 'xyzi') -> list[PointField]:
    """
    Return the ``PointField`` list of a field set.

    :raises ValueError: for a field set not in ``POINT_FIELD_SETS``.
    """
    layout = _field_layout(fields)
    return [PointField(name=name, offset=offset, datatype=datatype, count=1)
            for name, offset, datatype in layout]


@dataclasses.dataclass(frozen=True, slots=True)
class PointTimes:
    """
    What the xyzirt ``time`` field is made of: the sweep, the column order and the origin.

    :param sweep_s: the time of one sweep, 0 or more (0: a scan of one instant).
    :param azimuth_order: the Hello's ``lidar.azimuth_order``, ``cw`` or ``ccw``.
    :param origin: ``end`` (times <= 0 from the frame's stamp) or ``start`` (times >= 0 from
        the start of the sweep, one sweep before the frame's stamp).
    :raises ValueError: for a sweep that is not finite or negative, another order or origin.
    """

    sweep_s: float = 0.0
    azimuth_order: str = 'cw'
    origin: str = 'end'

    def __post_init__(self) -> None:
        if not (isinstance(self.sweep_s, (int, float)) and math.isfinite(self.sweep_s)
                and self.sweep_s >= 0.0):
            raise ValueError(f'a sweep of {self.sweep_s} s is not a duration')
        if self.azimuth_order not in AZIMUTH_ORDERS:
            raise ValueError(f'azimuth order {self.azimuth_order!r} is not cw or ccw')
        if self.origin not in TIME_ORIGINS:
            raise ValueError(f'time origin {self.origin!r} is not one of '
                             f'{", ".join(TIME_ORIGINS)}')

    @classmethod
    def of(cls, layout: LidarLayout | None, *, sweep_s: float = ONE_SCAN_PERIOD,
           origin: str = 'end') -> 'PointTimes':
        """
        Return the times of a Hello's LiDAR with the bridge's options.

        :param layout: the Hello's ``lidar`` (None before a Hello: cw, no known period).
        :param sweep_s: the sweep; below 0: one scan period, 1 / ``lidar.hz`` (0 when the
            rate is unknown).
        """
        if sweep_s < 0.0:
            hz = layout.hz if layout is not None else 0.0
            sweep_s = 1.0 / hz if hz > 0.0 and math.isfinite(hz) else 0.0
        order = layout.azimuth_order if layout is not None else 'cw'
        return cls(float(sweep_s), order, origin)

    def cloud_stamp_s(self, stamp_s: float) -> float:
        """Return the stamp of the cloud of a frame stamped ``stamp_s`` (the sweep's end)."""
        return stamp_s - self.sweep_s if self.origin == 'start' else stamp_s


def column_times_s(columns: int, sweep_s: float, *, azimuth_order: str = 'cw',
                   origin: str = 'end') -> np.ndarray:
    """
    Return the firing time of each column relative to the cloud's stamp, float32 seconds.

    cw: column c fires (columns - 1 - c) / columns x ``sweep_s`` before the end of the sweep;
    ccw column c is cw column (columns - c) mod columns. ``end``: relative to the end (<= 0);
    ``start``: to one sweep before it (> 0, or 0 for a sweep of 0).

    :raises ValueError: as :class:`PointTimes`.
    """
    return _column_times(columns, PointTimes(sweep_s, azimuth_order, origin))


def _column_times(columns: int, times: PointTimes) -> np.ndarray:
    if columns <= 0:
        return np.zeros(0, dtype='<f4')
    return (_column_steps(columns, times) * (times.sweep_s / columns)).astype('<f4')


def _column_steps(columns: int, times: PointTimes) -> np.ndarray:
    """Return each column's firing time relative to the cloud's stamp in column steps."""
    index = np.arange(columns, dtype=np.int64)
    if times.azimuth_order == 'ccw':
        index = (columns - index) % columns     # the clockwise column of the same beam
    if times.origin == 'start':
        return index + 1
    return index - (columns - 1)


def column_times_ns(columns: int, times: PointTimes) -> np.ndarray:
    """
    Return each column's firing time after the cloud's stamp, uint32 nanoseconds (``start``).

    The firing rule of :func:`column_times_s` in float64, rounded to the nanosecond.

    :raises ValueError: for the ``end`` origin, whose times come before the stamp.
    """
    if times.origin != 'start':
        raise ValueError('unsigned times after the stamp need the start origin, not '
                         f'{times.origin!r}')
    if columns <= 0:
        return np.zeros(0, dtype='<u4')
    nanoseconds = np.rint(_column_steps(columns, times) * (times.sweep_s * 1e9 / columns))
    return nanoseconds.astype('<u4')


def lidar_frame_to_cloud(frame: LidarFrame, header: Header, *, fields: str = 'xyzi',
                         sweep_s: float = 0.0, times: PointTimes | None = None) -> PointCloud2:
    """
    Return the organised cloud of a LiDAR frame.

    :param frame: the decoded frame; its points are copied once, so the frame's buffer may be
        reused when this returns.
    :param header: the header of the cloud (the LiDAR's frame id; the stamp
        ``times.cloud_stamp_s(frame stamp)``), used as given.
    :param fields: ``xyzi`` (the frame's points as they are), ``xyzirt`` (with ring and time),
        ``autoware`` or ``autoware_dense`` (Autoware's PointXYZIRCAEDT, organised or returns
        only).
    :param sweep_s: for ``xyzirt`` without ``times``: ``PointTimes(sweep_s)`` (cw, end).
    :param times: the sweep, column order and origin of the ``time`` field (autoware: start).
    :raises ValueError: for another field set, a sweep that is not finite or negative, an
        autoware cloud without the start origin, or a frame whose points do not fill columns x
        rings x 16 bytes.
    """
    cloud_fields = point_fields(fields)
    columns, rings = frame.columns, frame.rings
    points = _points(frame)
    is_dense = False
    if fields in AUTOWARE_FIELD_SETS:
        cells = _autoware_cells(frame, times if times is not None else PointTimes(
            float(sweep_s), origin='start'))
        if fields == 'autoware_dense':
            cells = autoware_points.returns_only(cells)
            columns, rings, is_dense = 1, len(cells), True
        data = uint8_array(cells.view(np.uint8))
        point_step = AUTOWARE_POINT_STEP
    elif fields == 'xyzi':
        data = uint8_array(points)
        point_step = XYZI_POINT_STEP
    else:
        if times is None:
            times = PointTimes(float(sweep_s))
        # One copy of a cached cloud that already holds ring and time, then the frame's points
        # written into it as one structured numpy copy of 16-byte items: no loop per point,
        # and the bits of every float (NaN payloads too) stay as they are.
        data = array.array('B', _xyzirt_template(columns, rings, times))
        cells = np.frombuffer(data, dtype=_XYZI_CELL)
        cells['xyzi'] = np.frombuffer(points, dtype=_XYZI_ITEM)
        del cells
        point_step = XYZIRT_POINT_STEP
    cloud = PointCloud2(
        header=header, height=columns, width=rings,
        fields=cloud_fields,
        is_bigendian=False, point_step=point_step, row_step=point_step * rings,
        is_dense=is_dense, **_KEEP_ARRAY)
    cloud.data = data
    return cloud


def _autoware_cells(frame: LidarFrame, times: PointTimes) -> np.ndarray:
    """Return a frame's organised Autoware points, flat, in the frame's cell order."""
    cells = _autoware_template(frame.columns, frame.rings, times).copy()
    autoware_points.fill(cells, _points(frame))
    return cells


@functools.lru_cache(maxsize=4)
def _autoware_template(columns: int, rings: int, times: PointTimes) -> np.ndarray:
    template = autoware_points.template(columns, rings, column_times_ns(columns, times))
    template.flags.writeable = False
    return template.reshape(-1)


def _points(frame: LidarFrame) -> memoryview:
    """Return the points of a frame after checking that they fill columns x rings x 16 bytes."""
    points = frame.points
    if (frame.point_step != XYZI_POINT_STEP
            or points.nbytes != frame.columns * frame.rings * XYZI_POINT_STEP):
        raise ValueError(f'a LiDAR frame of {frame.columns} x {frame.rings} points of 16 bytes '
                         f'has {points.nbytes} bytes of points (point step {frame.point_step})')
    return points


def lidar_frame_to_cloud_cdr(frame: LidarFrame, *, frame_id: str, fields: str = 'xyzi',
                             times: PointTimes | None = None) -> bytes:
    """
    Return the cloud of a LiDAR frame serialised (CDR), for ``Publisher.publish(bytes)``.

    It deserialises to ``lidar_frame_to_cloud(frame, make_header(stamp, frame_id),
    fields=fields, times=times)``, stamped with the frame's stamp, or for xyzirt with
    ``times.cloud_stamp_s(frame's stamp)``. A buffer is made for this one cloud; the bridge
    keeps a :class:`CloudBuffer` per stream instead.

    :raises ValueError: as :func:`lidar_frame_to_cloud`, or for a stamp ``Time`` cannot hold.
    """
    return CloudBuffer(frame.columns, frame.rings, frame_id=frame_id, fields=fields,
                       times=times).serialise(frame)


class CloudBuffer:
    """
    A serialised cloud of one layout and frame id, in a buffer that every frame reuses.

    The buffer is the whole message: the prefix (encapsulation, header, height, width, fields,
    is_bigendian, point_step, row_step, the data length), ``data``, then ``is_dense`` false.
    Its size is fixed when it is made; nothing grows per frame. One thread uses it at a time
    (a stream's reader).

    An ``autoware_dense`` cloud has as many points as the frame has returns: its buffer holds
    the organised points, and each message is assembled from the returns (bytes of its own).

    :param fields: one of ``POINT_FIELD_SETS``.
    :param times: the ``time`` field of xyzirt (default ``PointTimes()``: cw, a sweep of 0, end)
        or ``time_stamp`` of autoware (which needs the start origin).
    :raises ValueError: for another field set, or autoware without the start origin.
    """

    def __init__(self, columns: int, rings: int, *, frame_id: str, fields: str = 'xyzi',
                 times: PointTimes | None = None) -> None:
        times = times if times is not None else PointTimes()
        prefix = _cloud_prefix(columns, rings, frame_id, fields)
        self.key = (columns, rings, frame_id, fields, times)
        self._fields = fields
        self._times = times
        self._message = cdr.MessageBuffer(prefix, columns * rings * _point_step(fields),
                                          suffix=_IS_DENSE, head_size=SUB_HEADER_SIZE)
        if fields == 'xyzirt':
            self._message.data[:] = _xyzirt_template(columns, rings, times)
            self._cells = np.frombuffer(self._message.data, dtype=_XYZI_CELL)
        elif fields in AUTOWARE_FIELD_SETS:
            self._message.data[:] = _autoware_template(columns, rings, times).view(np.uint8)
            self._cells = np.frombuffer(self._message.data, dtype=autoware_points.DTYPE)

    @property
    def nbytes(self) -> int:
        """Return the size of the buffer: one serialised cloud."""
        return self._message.nbytes

    def payload_view(self, payload_size: int) -> memoryview | None:
        """
        Return where a LiDAR payload of ``payload_size`` bytes is received, or None.

        xyzi only, and only for the payload size of this layout: the sub-header lands on the
        end of the prefix (rewritten by :meth:`serialise`), the points on ``data``.
        """
        return self._message.payload_view(payload_size) if self._fields == 'xyzi' else None

    def serialise(self, frame: LidarFrame) -> bytes:
        """
        Return the serialised cloud of a frame of this layout (see ``lidar_frame_to_cloud_cdr``).

        Points received through :meth:`payload_view` stay where they are; other frames' points
        are copied in.

        :raises ValueError: for a frame of another layout, points that do not fill it, or a
            stamp ``Time`` cannot hold.
        """
        return bytes(self.serialise_in_place(frame))

    def serialise_in_place(self, frame: LidarFrame) -> memoryview:
        """Return :meth:`serialise`'s message as a view of this buffer (valid until the next)."""
        columns, rings = self.key[:2]
        if (frame.columns, frame.rings) != (columns, rings):
            raise ValueError(f'a LiDAR frame of {frame.columns} x {frame.rings} points in a cloud '
                             f'of {columns} x {rings}')
        points = _points(frame)
        stamp_s = frame.header.stamp_s
        if self._fields != 'xyzi':
            stamp_s = self._times.cloud_stamp_s(stamp_s)
        sec, nanosec = stamp_to_sec_nanosec(stamp_s)
        if self._fields == 'xyzirt':
            self._cells['xyzi'] = np.frombuffer(points, dtype=_XYZI_ITEM)
        elif self._fields in AUTOWARE_FIELD_SETS:
            autoware_points.fill(self._cells, points)
            if self._fields == 'autoware_dense':
                return _dense_cloud(self.key[2], self._cells, sec, nanosec)
        else:
            self._message.put(points)
        return self._message.stamped(sec, nanosec)


def _dense_cloud(frame_id: str, cells: np.ndarray, sec: int, nanosec: int) -> memoryview:
    """Return a serialised one-row cloud of the Autoware points of the cells with a return."""
    count = autoware_points.return_count(cells)
    prefix = _cloud_prefix(1, count, frame_id, 'autoware_dense')
    start, end = len(prefix), len(prefix) + count * AUTOWARE_POINT_STEP
    message = np.empty(end + len(_DENSE), dtype=np.uint8)
    message[:start] = np.frombuffer(prefix, dtype=np.uint8)
    cdr.STAMP.pack_into(message, cdr.STAMP_OFFSET, sec, nanosec)
    autoware_points.returns_only(cells, out=message[start:end])    # gathered in place
    message[end:] = np.frombuffer(_DENSE, dtype=np.uint8)
    return memoryview(message)


def _point_step(fields: str) -> int:
    layout = _field_layout(fields)
    if layout is _XYZI:
        return XYZI_POINT_STEP
    return XYZIRT_POINT_STEP if layout is _XYZIRT else AUTOWARE_POINT_STEP


@functools.lru_cache(maxsize=64)
def _cloud_prefix(columns: int, rings: int, frame_id: str, fields: str) -> bytes:
    """Return a serialised cloud up to its data (the stamp zero, the data length included)."""
    layout = _field_layout(fields)
    point_step = _point_step(fields)
    writer = cdr.Writer()
    writer.header(frame_id)
    writer.value('I', columns)
    writer.value('I', rings)
    writer.value('I', len(layout))
    for name, offset, datatype in layout:
        writer.string(name)
        writer.value('I', offset)
        writer.value('B', datatype)
        writer.value('I', 1)
    writer.value('B', 0)                                # is_bigendian
    writer.value('I', point_step)
    writer.value('I', point_step * rings)
    writer.value('I', columns * rings * point_step)     # the length of data
    return writer.bytes()


def cloud_to_array(cloud: PointCloud2) -> np.ndarray:
    """
    Return a read-only numpy view of an xyzi, xyzirt or autoware cloud: shape (height, width).

    Fields are named like the cloud's (``x``, ..., ``ring``, ``time``).

    :raises ValueError: for a cloud of another layout.
    """
    if cloud.point_step == XYZI_POINT_STEP:
        dtype = np.dtype({'names': ['x', 'y', 'z', 'intensity'], 'formats': ['<f4'] * 4,
                          'offsets': [0, 4, 8, 12], 'itemsize': XYZI_POINT_STEP})
    elif cloud.point_step == XYZIRT_POINT_STEP:
        dtype = XYZIRT_DTYPE
    elif cloud.point_step == AUTOWARE_POINT_STEP:
        dtype = autoware_points.DTYPE
    else:
        raise ValueError(f'a cloud of point step {cloud.point_step} is not one of '
                         f'{", ".join(POINT_FIELD_SETS)}')
    view = np.frombuffer(cloud.data, dtype=dtype).reshape(cloud.height, cloud.width)
    view.flags.writeable = False
    return view


def _field_layout(fields: str) -> tuple[tuple[str, int, int], ...]:
    if fields == 'xyzi':
        return _XYZI
    if fields == 'xyzirt':
        return _XYZIRT
    if fields in AUTOWARE_FIELD_SETS:
        return autoware_points.FIELDS
    raise ValueError(f'point fields {fields!r} are not one of {", ".join(POINT_FIELD_SETS)}')


@functools.lru_cache(maxsize=4)
def _xyzirt_template(columns: int, rings: int, times: PointTimes) -> bytes:
    """Return an xyzirt cloud with ring and time set, x, y, z, intensity and padding zero."""
    template = np.zeros((columns, rings), dtype=XYZIRT_DTYPE)
    template['ring'] = np.arange(rings, dtype='<u2')
    template['time'] = _column_times(columns, times)[:, np.newaxis]
    return template.tobytes()
