# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Every parameter of every node of acres_bridge, declared, validated and frozen in one place.

==================  =========================================================================
node                parameters
==================  =========================================================================
sensor_bridge       host, port (5601), frame_prefix, publish_clock, publish_tf, world_frame,
                    point_fields, lidar_sweep_s, point_time_origin, compressed.format,
                    compressed.jpeg_quality, compressed.png_level, reconnect_s
sim_control         host, port (5600), timeout_s, reconnect_s
acres_bridge        host, port (5600, the control channel), sensor_ports, timeout_s,
                    ack_timeout_s, match_timeout_s, reconnect_s, frame_prefix,
                    publish_clock, publish_tf, world_frame, point_fields, lidar_sweep_s,
                    point_time_origin, compressed.format, compressed.jpeg_quality,
                    compressed.png_level, sensor_processes
==================  =========================================================================

The lidar_recorder's parameters are :mod:`acres_bridge.recording.parameters`', next to
its node, on the same :class:`ParameterSpec` and the same two steps.

Each ``declare_*_parameters(node)`` declares its node's parameters with a
``ParameterDescriptor`` (description, constraints, range, ``read_only``: the nodes read them
once at start), validates the values the node was given and returns a frozen dataclass. A value
the node cannot run with raises :class:`ParameterError` with one line that names the parameter
and says why (``parameter host: host '10.0.0.1' resolves to 10.0.0.1, which is not a loopback
address ...``); nothing falls back silently. The ``*_from_values`` functions validate a plain
mapping the same way, without rclpy.

Declaring happens in two steps so that the messages are ours and a double may be written as an
integer (``reconnect_s:=2``): first with dynamic typing and no range, then, once the values are
valid and normalised, with the final descriptor (static type, range, read-only).
"""

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import contextlib
import dataclasses
import math
from typing import Any
from typing import TypeVar

from rcl_interfaces.msg import FloatingPointRange
from rcl_interfaces.msg import IntegerRange
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter

from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.sockets import require_loopback

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
SENSOR_PROCESSES_CHOICES = ('auto', 'in_process', 'per_agent')
# Cores that sensor_processes auto leaves beside one per agent: the simulator's and the rest's
# (the session's own process, the subscribers). On two cores one process carried more agents
# than a process each, at a third of the memory (docs/benchmarks.md).
AUTO_SPARE_CORES = 2
LIDAR_SWEEP_RANGE_S = (-1.0, 10.0)
PORT_RANGE = (1, 65535)
RECONNECT_RANGE_S = (0.01, 3600.0)
TIMEOUT_RANGE_S = (0.001, 86400.0)


class ParameterError(ValueError):
    """A parameter value a node cannot run with; the text is one line for stderr."""


@contextlib.contextmanager
def destroyed_on_parameter_error(destroy: Callable[[], None]) -> Iterator[None]:
    """
    Destroy a node being built when its parameters fail, then let the ParameterError go on.

    Not left to the garbage collector: that may run at the interpreter's exit, after the
    context, where Fast DDS can crash destroying the node (a refused lidar_recorder ended
    with -11 once).
    """
    try:
        yield
    except ParameterError:
        destroy()
        raise


@dataclasses.dataclass(frozen=True, slots=True)
class ParameterSpec:
    """
    One parameter: name, default, type, description and constraints.

    :param default: the value when none is given (``None`` for an array that may be unset).
    :param choices: the only values a string may take.
    :param integer_range: inclusive bounds of an integer (or of each integer of an array).
    :param float_range: inclusive bounds of a double.
    """

    name: str
    default: Any
    type: Parameter.Type
    description: str
    choices: tuple[str, ...] = ()
    integer_range: tuple[int, int] | None = None
    float_range: tuple[float, float] | None = None
    read_only: bool = True

    def descriptor(self) -> ParameterDescriptor:
        """Return the final descriptor: static type, constraints, range, read-only."""
        descriptor = ParameterDescriptor(
            name=self.name, type=self.type.value, description=self.description,
            read_only=self.read_only)
        if self.choices:
            descriptor.additional_constraints = f'one of: {", ".join(self.choices)}'
        if self.integer_range is not None:
            low, high = self.integer_range
            descriptor.integer_range = [IntegerRange(from_value=low, to_value=high, step=1)]
        if self.float_range is not None:
            low, high = self.float_range
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=low, to_value=high, step=0.0)]
        return descriptor


_T = Parameter.Type

HOST = ParameterSpec(
    'host', '127.0.0.1', _T.STRING,
    'The simulator host. It must resolve to loopback addresses only: the simulator listens '
    'on 127.0.0.1.')
SENSOR_PORT = ParameterSpec(
    'port', 5601, _T.INTEGER, 'The TCP port of the sensor stream of the agent.',
    integer_range=PORT_RANGE)
CONTROL_PORT = ParameterSpec(
    'port', 5600, _T.INTEGER, 'The TCP port of the simulator control channel.',
    integer_range=PORT_RANGE)
SENSOR_PORTS = ParameterSpec(
    'sensor_ports', None, _T.INTEGER_ARRAY,
    'One sensor stream port per agent; empty: the sensor_stream port of each agent from the '
    'hello reply of the control channel.', integer_range=PORT_RANGE)
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
RECONNECT_S = ParameterSpec(
    'reconnect_s', 1.0, _T.DOUBLE, 'The wait before each new connection attempt, s.',
    float_range=RECONNECT_RANGE_S)
TIMEOUT_S = ParameterSpec(
    'timeout_s', 10.0, _T.DOUBLE,
    'The time a control request waits for its reply, s (a step waits longer in proportion to '
    'its steps).', float_range=TIMEOUT_RANGE_S)
ACK_TIMEOUT_S = ParameterSpec(
    'ack_timeout_s', 5.0, _T.DOUBLE,
    'Lockstep: after a stream published the barrier of a step, how long the step waits for '
    'every reliable reader to acknowledge every message of it, s. A reader still silent then '
    'is named in /diagnostics and the log, and the step answers (successfully, saying what was '
    'late).', float_range=TIMEOUT_RANGE_S)
MATCH_TIMEOUT_S = ParameterSpec(
    'match_timeout_s', 5.0, _T.DOUBLE,
    'Lockstep: before a step is sent, how long it waits for the sensor writers to match every '
    'reader of their topics that the session knows (discovery of a new reader), s. A reader '
    'still unmatched then is named in the answer, /diagnostics and the log, and the step is '
    'sent anyway.', float_range=TIMEOUT_RANGE_S)
SENSOR_PROCESSES = ParameterSpec(
    'sensor_processes', 'auto', _T.STRING,
    'Where the sensor streams run: in_process (every agent in the session\'s process, one '
    'GIL), per_agent (one child process per agent, a sensor_bridge node in the agent\'s '
    'namespace; lockstep still waits for every agent), or auto (per_agent for several agents '
    'when the process may use a core for each agent and two more, otherwise in_process; see '
    'docs/benchmarks.md).', choices=SENSOR_PROCESSES_CHOICES)

COMPRESSED_PARAMETERS = (COMPRESSED_FORMAT, COMPRESSED_JPEG_QUALITY, COMPRESSED_PNG_LEVEL)
SENSOR_BRIDGE_PARAMETERS = (HOST, SENSOR_PORT, FRAME_PREFIX, PUBLISH_CLOCK, PUBLISH_TF,
                            WORLD_FRAME, POINT_FIELDS, LIDAR_SWEEP_S, POINT_TIME_ORIGIN,
                            *COMPRESSED_PARAMETERS, RECONNECT_S)
SIM_CONTROL_PARAMETERS = (HOST, CONTROL_PORT, TIMEOUT_S, RECONNECT_S)
BRIDGE_PARAMETERS = (HOST, CONTROL_PORT, SENSOR_PORTS, TIMEOUT_S, ACK_TIMEOUT_S,
                     MATCH_TIMEOUT_S, RECONNECT_S,
                     FRAME_PREFIX, PUBLISH_CLOCK, PUBLISH_TF, WORLD_FRAME, POINT_FIELDS,
                     LIDAR_SWEEP_S, POINT_TIME_ORIGIN, *COMPRESSED_PARAMETERS, SENSOR_PROCESSES)


@dataclasses.dataclass(frozen=True, slots=True)
class SensorBridgeParameters:
    """
    The settings of one sensor bridge (one agent's stream).

    ``host`` is the name as given, ``address`` the loopback address it resolved to.
    """

    host: str = '127.0.0.1'
    address: str = '127.0.0.1'
    port: int = 5601
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
    reconnect_s: float = 1.0

    def values(self) -> dict[str, Any]:
        """Return the parameter values by parameter name (``compressed.format``), no address."""
        return {_parameter_name(field): value
                for field, value in dataclasses.asdict(self).items() if field != 'address'}

    def replace(self, **changes: Any) -> 'SensorBridgeParameters':
        """Return a copy with some fields changed (by field name), validated again."""
        values = {**self.values(),
                  **{_parameter_name(field): value for field, value in changes.items()}}
        return sensor_bridge_parameters_from_values(values)


@dataclasses.dataclass(frozen=True, slots=True)
class SimControlParameters:
    """The settings of the control channel client."""

    host: str = '127.0.0.1'
    address: str = '127.0.0.1'
    port: int = 5600
    timeout_s: float = 10.0
    reconnect_s: float = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class BridgeParameters:
    """The settings of a whole session in one process (the acres_bridge executable)."""

    host: str = '127.0.0.1'
    address: str = '127.0.0.1'
    port: int = 5600
    sensor_ports: tuple[int, ...] = ()
    timeout_s: float = 10.0
    ack_timeout_s: float = 5.0
    match_timeout_s: float = 5.0
    reconnect_s: float = 1.0
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
    sensor_processes: str = 'auto'

    def processes_per_agent(self, streams: int, cores: int) -> bool:
        """
        Whether a session of ``streams`` sensor streams runs each in a process of its own.

        :param cores: the cores this process may run on, for ``auto``: a process per agent pays
            for itself only with a core for each of them and ``AUTO_SPARE_CORES`` beside.
        """
        if self.sensor_processes == 'auto':
            return streams > 1 and cores >= streams + AUTO_SPARE_CORES
        return self.sensor_processes == 'per_agent'

    def control(self) -> SimControlParameters:
        """Return the settings of the control channel."""
        return SimControlParameters(host=self.host, address=self.address, port=self.port,
                                    timeout_s=self.timeout_s, reconnect_s=self.reconnect_s)

    def sensor(self, port: int, *, frame_prefix: str | None = None,
               publish_clock: bool | None = None) -> SensorBridgeParameters:
        """
        Return the settings of one agent's sensor bridge on ``port``.

        :param frame_prefix: this agent's prefix (default: the ``frame_prefix`` parameter).
        :param publish_clock: whether this agent publishes /clock (default: the parameter).
        :raises ParameterError: for a port out of range or a bad prefix.
        """
        return sensor_bridge_parameters_from_values({
            'host': self.host, 'port': port,
            'frame_prefix': self.frame_prefix if frame_prefix is None else frame_prefix,
            'publish_clock': self.publish_clock if publish_clock is None else publish_clock,
            'publish_tf': self.publish_tf, 'world_frame': self.world_frame,
            'point_fields': self.point_fields, 'lidar_sweep_s': self.lidar_sweep_s,
            'point_time_origin': self.point_time_origin,
            'compressed.format': self.compressed_format,
            'compressed.jpeg_quality': self.compressed_jpeg_quality,
            'compressed.png_level': self.compressed_png_level, 'reconnect_s': self.reconnect_s})


def _field_name(name: str) -> str:
    """Return the dataclass field of a parameter (``compressed.format`` -> compressed_format)."""
    return name.replace('.', '_')


def _parameter_name(field: str) -> str:
    """Return the parameter of a dataclass field (``compressed_format`` -> compressed.format)."""
    return field.replace('compressed_', 'compressed.', 1) if field.startswith(
        'compressed_') else field


_Settings = TypeVar('_Settings', SensorBridgeParameters, SimControlParameters, BridgeParameters)


# --- validation --------------------------------------------------------------------------------

def _check_type(spec: ParameterSpec, value: Any) -> Any:
    kind = spec.type
    if kind == _T.STRING and isinstance(value, str):
        return value
    if kind == _T.BOOL and isinstance(value, bool):
        return value
    if kind == _T.INTEGER and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == _T.DOUBLE and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind == _T.INTEGER_ARRAY and isinstance(value, Sequence) and not isinstance(
            value, (str, bytes)) and all(
            isinstance(item, int) and not isinstance(item, bool) for item in value):
        return tuple(value)
    wanted = {_T.STRING: 'a string', _T.BOOL: 'true or false', _T.INTEGER: 'an integer',
              _T.DOUBLE: 'a number', _T.INTEGER_ARRAY: 'a list of integers'}[kind]
    raise ParameterError(f'parameter {spec.name}: {value!r} is not {wanted}')


def _check(spec: ParameterSpec, value: Any) -> Any:
    """Return a value of a spec's type within its constraints, or raise ParameterError."""
    value = _check_type(spec, value)
    if spec.choices and value not in spec.choices:
        raise ParameterError(
            f'parameter {spec.name}: {value!r} is not one of {", ".join(spec.choices)}')
    if spec.integer_range is not None:
        low, high = spec.integer_range
        for item in value if isinstance(value, tuple) else (value,):
            if not low <= item <= high:
                raise ParameterError(
                    f'parameter {spec.name}: {item} is not a TCP port from {low} to {high}')
    if spec.float_range is not None:
        low, high = spec.float_range
        if not (math.isfinite(value) and low <= value <= high):
            raise ParameterError(f'parameter {spec.name}: {value} is not from {low} to {high}')
    return value


def _address(host: str) -> str:
    try:
        return require_loopback(host)
    except TransportError as exc:
        raise ParameterError(f'parameter host: {exc}') from exc


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


def checked_values(specs: Sequence[ParameterSpec], values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the values of specs, each checked (defaults for missing ones); no unknown key."""
    unknown = set(values) - {spec.name for spec in specs}
    if unknown:
        raise ParameterError(f'unknown parameters: {", ".join(sorted(unknown))}')
    checked = {}
    for spec in specs:
        value = values.get(spec.name)
        if value is None:
            value = () if spec.type == _T.INTEGER_ARRAY else spec.default
        checked[spec.name] = _check(spec, value)
    return checked


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


def _values_of(specs: Sequence[ParameterSpec], values: Mapping[str, Any]) -> dict[str, Any]:
    """
    Return the checked, normalised values of specs by field name, with ``address``.

    ``point_time_origin`` is the origin in effect (``auto`` resolved).
    """
    checked = {_field_name(name): value for name, value in checked_values(specs, values).items()}
    checked['address'] = _address(checked['host'])
    if 'point_time_origin' in checked:
        checked['point_time_origin'] = _time_origin(checked['point_fields'],
                                                    checked['point_time_origin'])
    if 'frame_prefix' in checked:
        checked['frame_prefix'] = _frame_id('frame_prefix', checked['frame_prefix'], prefix=True)
    if 'world_frame' in checked:
        checked['world_frame'] = _frame_id('world_frame', checked['world_frame'], prefix=False)
    return checked


def sensor_bridge_parameters_from_values(values: Mapping[str, Any]) -> SensorBridgeParameters:
    """
    Return validated sensor bridge settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    return SensorBridgeParameters(**_values_of(SENSOR_BRIDGE_PARAMETERS, values))


def sim_control_parameters_from_values(values: Mapping[str, Any]) -> SimControlParameters:
    """
    Return validated control channel settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    return SimControlParameters(**_values_of(SIM_CONTROL_PARAMETERS, values))


def bridge_parameters_from_values(values: Mapping[str, Any]) -> BridgeParameters:
    """
    Return validated session settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    return BridgeParameters(**_values_of(BRIDGE_PARAMETERS, values))


# --- declaring on a node -------------------------------------------------------------------------

def declare_parameters(node: Node, specs: Sequence[ParameterSpec]) -> dict[str, Any]:
    """
    Declare parameters on a node and return the values it was given (or the defaults).

    The parameters stay writable and untyped until :func:`finish_parameters`; call that with
    the validated values.

    :raises ParameterError: when a parameter cannot be declared (e.g. declared twice).
    """
    values = {}
    for spec in specs:
        try:
            parameter = node.declare_parameter(
                spec.name, spec.default, ParameterDescriptor(
                    description=spec.description, dynamic_typing=True))
        except ParameterException as exc:
            raise ParameterError(f'parameter {spec.name}: {exc}') from exc
        values[spec.name] = parameter.value
    return values


def finish_parameters(node: Node, specs: Sequence[ParameterSpec],
                      values: Mapping[str, Any]) -> None:
    """Store the validated values and give each parameter its final descriptor."""
    for spec in specs:
        value = values[_field_name(spec.name)]
        if spec.type == _T.INTEGER_ARRAY:
            value = list(value)
        try:
            result = node.set_parameters([Parameter(spec.name, spec.type, value)])[0]
            if not result.successful:
                raise ParameterError(f'parameter {spec.name}: {result.reason}')
            node.set_descriptor(spec.name, spec.descriptor())
        except ParameterException as exc:
            raise ParameterError(f'parameter {spec.name}: {exc}') from exc


def _declare(node: Node, specs: Sequence[ParameterSpec],
             from_values: Callable[[Mapping[str, Any]], _Settings]) -> _Settings:
    settings = from_values(declare_parameters(node, specs))
    finish_parameters(node, specs, dataclasses.asdict(settings))
    return settings


def declare_sensor_bridge_parameters(node: Node) -> SensorBridgeParameters:
    """
    Declare, validate and freeze the parameters of the sensor_bridge node.

    :raises ParameterError: for a value the node cannot run with.
    """
    return _declare(node, SENSOR_BRIDGE_PARAMETERS, sensor_bridge_parameters_from_values)


def declare_sim_control_parameters(node: Node) -> SimControlParameters:
    """
    Declare, validate and freeze the parameters of the sim_control node.

    :raises ParameterError: for a value the node cannot run with.
    """
    return _declare(node, SIM_CONTROL_PARAMETERS, sim_control_parameters_from_values)


def declare_bridge_parameters(node: Node) -> BridgeParameters:
    """
    Declare, validate and freeze the parameters of the acres_bridge node (a whole session).

    :raises ParameterError: for a value the node cannot run with.
    """
    return _declare(node, BRIDGE_PARAMETERS, bridge_parameters_from_values)
