# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The parameters of one agent's sensor stream: the sensor_bridge node's, and a session's per agent.

==================  =========================================================================
node                parameters
==================  =========================================================================
sensor_bridge       host, port (5601), frame_prefix, publish_clock, publish_tf, world_frame,
                    point_fields, lidar_sweep_s, point_time_origin, compressed.format,
                    compressed.jpeg_quality, compressed.png_level, reconnect_s
==================  =========================================================================

The settings that shape an agent's messages (:data:`AGENT_SENSOR_PARAMETERS`,
:class:`AgentSensorSettings`) are also the session's (:mod:`acres_bridge.session.parameters`),
which hands them to each agent's bridge. The machinery is :mod:`acres_bridge.runtime.parameters`.
"""

from collections.abc import Mapping
import dataclasses
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from acres_bridge.runtime.parameters import declare_settings
from acres_bridge.runtime.parameters import HOST
from acres_bridge.runtime.parameters import parameter_name
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.runtime.parameters import ParameterSpec
from acres_bridge.runtime.parameters import PORT_RANGE
from acres_bridge.runtime.parameters import RECONNECT_S
from acres_bridge.runtime.parameters import values_of

PUBLISH_TF_CHOICES = ('none', 'ins', 'truth')
POINT_FIELDS_CHOICES = ('xyzi', 'xyzirt', 'autoware', 'autoware_dense')
# Field sets whose per-point time is unsigned, after the stamp: the start origin only.
UNSIGNED_TIME_FIELDS = ('autoware', 'autoware_dense')
POINT_TIME_ORIGIN_CHOICES = ('auto', 'end', 'start')
# image_transport's compressed plugin names its parameters format, jpeg_quality and png_level
# (compressed_image_transport/src/compressed_publisher.cpp); none: no compressed topic.
COMPRESSED_FORMAT_CHOICES = ('jpeg', 'png', 'none')
JPEG_QUALITY_RANGE = (1, 100)
PNG_LEVEL_RANGE = (0, 9)
LIDAR_SWEEP_RANGE_S = (-1.0, 10.0)

_T = Parameter.Type

SENSOR_PORT = ParameterSpec(
    'port', 5601, _T.INTEGER, 'The TCP port of the sensor stream of the agent.',
    integer_range=PORT_RANGE)
FRAME_PREFIX = ParameterSpec(
    'frame_prefix', '', _T.STRING,
    'Prepended with a slash to every frame id of the agent (polaris -> polaris/base_footprint); '
    'the world frame has none.')
PUBLISH_CLOCK = ParameterSpec(
    'publish_clock', True, _T.BOOL, 'Publish each Clock frame on /clock.')
PUBLISH_TF = ParameterSpec(
    'publish_tf', 'none', _T.STRING,
    'Publish world_frame -> base_footprint on /tf from the INS (ins) or the exact pose '
    '(truth), or not at all (none).', choices=PUBLISH_TF_CHOICES)
WORLD_FRAME = ParameterSpec(
    'world_frame', 'world', _T.STRING,
    'The frame id of the world (ENU map grid): odometry frame and /tf parent.')
POINT_FIELDS = ParameterSpec(
    'point_fields', 'xyzi', _T.STRING,
    'The fields of lidar/points: x y z intensity (xyzi), also ring and time (xyzirt), or '
    'Autoware\'s PointXYZIRCAEDT, organised (autoware) or the returns only in one row as '
    'Autoware\'s drivers publish them (autoware_dense).',
    choices=POINT_FIELDS_CHOICES)
LIDAR_SWEEP_S = ParameterSpec(
    'lidar_sweep_s', -1.0, _T.DOUBLE,
    'The time of one LiDAR sweep for the xyzirt time field, s: below 0 (the default -1) one '
    'scan period, 1 / lidar.hz of the Hello; 0 a scan of one instant (ACRES Core without its '
    'sweep option).', float_range=LIDAR_SWEEP_RANGE_S)
POINT_TIME_ORIGIN = ParameterSpec(
    'point_time_origin', 'auto', _T.STRING,
    'The origin of the per-point time: end (the frame stamp, the end of the sweep; times '
    '<= 0) or start (the cloud is stamped one sweep earlier, times >= 0, as LIO-SAM, '
    'FAST-LIO and Autoware read them); auto: start for the autoware fields (whose time is '
    'unsigned), end otherwise.', choices=POINT_TIME_ORIGIN_CHOICES)
COMPRESSED_FORMAT = ParameterSpec(
    'compressed.format', 'jpeg', _T.STRING,
    'camera/image_raw/compressed as image_transport\'s compressed plugin makes it: jpeg or '
    'png, encoded only while the topic has a subscriber; none: no such topic.',
    choices=COMPRESSED_FORMAT_CHOICES)
COMPRESSED_JPEG_QUALITY = ParameterSpec(
    'compressed.jpeg_quality', 95, _T.INTEGER,
    'The JPEG quality of camera/image_raw/compressed, 1 to 100 (the plugin\'s default 95).',
    integer_range=JPEG_QUALITY_RANGE)
COMPRESSED_PNG_LEVEL = ParameterSpec(
    'compressed.png_level', 3, _T.INTEGER,
    'The PNG compression level of camera/image_raw/compressed, 0 to 9 (the plugin\'s default '
    '3).', integer_range=PNG_LEVEL_RANGE)

AGENT_SENSOR_PARAMETERS = (FRAME_PREFIX, PUBLISH_CLOCK, PUBLISH_TF, WORLD_FRAME, POINT_FIELDS,
                           LIDAR_SWEEP_S, POINT_TIME_ORIGIN, COMPRESSED_FORMAT,
                           COMPRESSED_JPEG_QUALITY, COMPRESSED_PNG_LEVEL)
SENSOR_BRIDGE_PARAMETERS = (HOST, SENSOR_PORT, *AGENT_SENSOR_PARAMETERS, RECONNECT_S)


@dataclasses.dataclass(frozen=True, slots=True)
class AgentSensorSettings:
    """What shapes an agent's messages: frames, time, fields, compression."""

    frame_prefix: str = ''
    publish_clock: bool = True
    publish_tf: str = 'none'
    world_frame: str = 'world'
    point_fields: str = 'xyzi'
    lidar_sweep_s: float = -1.0
    point_time_origin: str = 'end'
    compressed_format: str = 'jpeg'
    compressed_jpeg_quality: int = 95
    compressed_png_level: int = 3

    def agent_values(self) -> dict[str, Any]:
        """Return these settings alone by parameter name (``compressed.format``)."""
        return {parameter_name(field.name): getattr(self, field.name)
                for field in dataclasses.fields(AgentSensorSettings)}


@dataclasses.dataclass(frozen=True, slots=True)
class SensorBridgeParameters(AgentSensorSettings):
    """
    The settings of one sensor bridge (one agent's stream).

    ``host`` is the name as given, ``address`` the loopback address it resolved to.
    """

    host: str = '127.0.0.1'
    address: str = '127.0.0.1'
    port: int = 5601
    reconnect_s: float = 1.0

    def values(self) -> dict[str, Any]:
        """Return the parameter values by parameter name (``compressed.format``), no address."""
        return {parameter_name(field): value
                for field, value in dataclasses.asdict(self).items() if field != 'address'}

    def replace(self, **changes: Any) -> 'SensorBridgeParameters':
        """Return a copy with some fields changed (by field name), validated again."""
        values = {**self.values(),
                  **{parameter_name(field): value for field, value in changes.items()}}
        return sensor_bridge_parameters_from_values(values)


def _frame_id(name: str, value: str, *, prefix: bool) -> str:
    if any(character.isspace() for character in value):
        raise ParameterError(f'parameter {name}: {value!r} has white space; a frame id has none')
    if value.startswith('/'):
        raise ParameterError(f'parameter {name}: {value!r} starts with /; tf2 frame ids do not')
    if prefix:
        return value.rstrip('/')
    if not value:
        raise ParameterError(f'parameter {name}: a frame id is needed, got an empty one')
    return value


def _time_origin(point_fields: str, origin: str) -> str:
    """Return the per-point time origin in effect: ``auto`` resolved, end refused if unsigned."""
    unsigned = point_fields in UNSIGNED_TIME_FIELDS
    if origin == 'auto':
        return 'start' if unsigned else 'end'
    if unsigned and origin == 'end':
        raise ParameterError(
            f'parameter point_time_origin: end gives times before the stamp, and point_fields '
            f'{point_fields} has unsigned times after it: use start or auto')
    return origin


def normalised_agent_values(checked: dict[str, Any]) -> dict[str, Any]:
    """
    Return checked values (by field name) with the agent's settings normalised.

    ``point_time_origin`` becomes the origin in effect (``auto`` resolved); the frame ids are
    checked for what tf2 refuses.
    """
    checked['point_time_origin'] = _time_origin(checked['point_fields'],
                                                checked['point_time_origin'])
    checked['frame_prefix'] = _frame_id('frame_prefix', checked['frame_prefix'], prefix=True)
    checked['world_frame'] = _frame_id('world_frame', checked['world_frame'], prefix=False)
    return checked


def sensor_bridge_parameters_from_values(values: Mapping[str, Any]) -> SensorBridgeParameters:
    """
    Return validated sensor bridge settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    return SensorBridgeParameters(
        **normalised_agent_values(values_of(SENSOR_BRIDGE_PARAMETERS, values)))


def declare_sensor_bridge_parameters(node: Node) -> SensorBridgeParameters:
    """
    Declare, validate and freeze the parameters of the sensor_bridge node.

    :raises ParameterError: for a value the node cannot run with.
    """
    return declare_settings(node, SENSOR_BRIDGE_PARAMETERS, sensor_bridge_parameters_from_values)
