# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The machinery every node's parameters stand on: a spec per parameter, its checks, two steps.

Each node's parameter set lives beside its node: :mod:`acres_bridge.sensors.parameters`
(sensor_bridge), :mod:`acres_bridge.control.parameters` (sim_control),
:mod:`acres_bridge.session.parameters` (acres_bridge, a whole session),
:mod:`acres_bridge.recording.parameters` (lidar_recorder) and
:mod:`acres_bridge.foxglove.parameters` (foxglove_view).

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
RECONNECT_S = ParameterSpec(
    'reconnect_s', 1.0, _T.DOUBLE, 'The wait before each new connection attempt, s.',
    float_range=RECONNECT_RANGE_S)
TIMEOUT_S = ParameterSpec(
    'timeout_s', 10.0, _T.DOUBLE,
    'The time a control request waits for its reply, s (a step waits longer in proportion to '
    'its steps).', float_range=TIMEOUT_RANGE_S)


def field_name(name: str) -> str:
    """Return the dataclass field of a parameter (``compressed.format`` -> compressed_format)."""
    return name.replace('.', '_')


def parameter_name(field: str) -> str:
    """Return the parameter of a dataclass field (``compressed_format`` -> compressed.format)."""
    return field.replace('compressed_', 'compressed.', 1) if field.startswith(
        'compressed_') else field


_Settings = TypeVar('_Settings')


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


def values_of(specs: Sequence[ParameterSpec], values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the checked values of specs by field name, with the ``address`` of ``host``."""
    checked = {field_name(name): value for name, value in checked_values(specs, values).items()}
    checked['address'] = _address(checked['host'])
    return checked


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
        value = values[field_name(spec.name)]
        if spec.type == _T.INTEGER_ARRAY:
            value = list(value)
        try:
            result = node.set_parameters([Parameter(spec.name, spec.type, value)])[0]
            if not result.successful:
                raise ParameterError(f'parameter {spec.name}: {result.reason}')
            node.set_descriptor(spec.name, spec.descriptor())
        except ParameterException as exc:
            raise ParameterError(f'parameter {spec.name}: {exc}') from exc


def declare_settings(node: Node, specs: Sequence[ParameterSpec],
                     from_values: Callable[[Mapping[str, Any]], _Settings]) -> _Settings:
    """
    Declare ``specs`` on a node, validate what it was given and freeze it with ``from_values``.

    :raises ParameterError: for a value the node cannot run with.
    """
    settings = from_values(declare_parameters(node, specs))
    finish_parameters(node, specs, dataclasses.asdict(settings))
    return settings
