# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The parameters of the ``foxglove_view`` node: declared, validated and frozen.

==================  =========================================================================
parameter           meaning
==================  =========================================================================
address             the address the WebSocket server listens on (127.0.0.1)
port                its TCP port (8765; 0: any free port, logged)
include, exclude    regular expressions over topic names: a topic is served when include
                    matches it somewhere (``re.search``) and exclude, when set, does not
client_queue        the messages queued per client before the oldest are dropped (32)
==================  =========================================================================

The declarations reuse :mod:`acres_bridge.runtime.parameters` (``ParameterSpec``, the two-step
declaring, :class:`~acres_bridge.runtime.parameters.ParameterError`).
"""

from collections.abc import Mapping
import dataclasses
import ipaddress
import re
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from acres_bridge.runtime.parameters import declare_parameters
from acres_bridge.runtime.parameters import finish_parameters
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.runtime.parameters import ParameterSpec

CLIENT_QUEUE_RANGE = (4, 4096)
_T = Parameter.Type

ADDRESS = ParameterSpec(
    'address', '127.0.0.1', _T.STRING,
    'The address the WebSocket server listens on. Loopback (the default) keeps the view on '
    'this machine; any other address opens it to that network, and the start-up log says so.')
PORT = ParameterSpec(
    'port', 8765, _T.INTEGER,
    'The TCP port of the WebSocket server (Foxglove\'s default 8765); 0: any free port, logged.',
    integer_range=(0, 65535))
INCLUDE = ParameterSpec(
    'include', '.*', _T.STRING,
    'A regular expression: topics whose name it matches (re.search) are served.')
EXCLUDE = ParameterSpec(
    'exclude', '', _T.STRING,
    'A regular expression: topics whose name it matches are not served; empty: none excluded.')
CLIENT_QUEUE = ParameterSpec(
    'client_queue', 32, _T.INTEGER,
    'The messages queued for each client; when a slow client\'s queue is full its oldest '
    'message is dropped, for that client only.', integer_range=CLIENT_QUEUE_RANGE)

FOXGLOVE_VIEW_PARAMETERS = (ADDRESS, PORT, INCLUDE, EXCLUDE, CLIENT_QUEUE)


@dataclasses.dataclass(frozen=True, slots=True)
class FoxgloveViewParameters:
    """The settings of the foxglove_view node."""

    address: str = '127.0.0.1'
    port: int = 8765
    include: str = '.*'
    exclude: str = ''
    client_queue: int = 32

    @property
    def loopback(self) -> bool:
        """Whether the address keeps the view on this machine."""
        return self.address == 'localhost' or ipaddress.ip_address(self.address).is_loopback

    def serves(self, topic: str) -> bool:
        """Whether include and exclude let a topic through."""
        if not re.search(self.include, topic):
            return False
        return not (self.exclude and re.search(self.exclude, topic))


def foxglove_view_parameters_from_values(values: Mapping[str, Any]) -> FoxgloveViewParameters:
    """
    Return validated foxglove_view settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    unknown = set(values) - {spec.name for spec in FOXGLOVE_VIEW_PARAMETERS}
    if unknown:
        raise ParameterError(f'unknown parameters: {", ".join(sorted(unknown))}')
    checked = {}
    for spec in FOXGLOVE_VIEW_PARAMETERS:
        value = values.get(spec.name, spec.default)
        expected = str if spec.type == _T.STRING else int
        if type(value) is not expected:
            raise ParameterError(
                f'parameter {spec.name}: {value!r} is not a {expected.__name__}')
        if spec.integer_range is not None:
            low, high = spec.integer_range
            if not low <= value <= high:
                raise ParameterError(f'parameter {spec.name}: {value} is not from {low} to {high}')
        checked[spec.name] = value
    if checked['address'] != 'localhost':
        try:
            ipaddress.ip_address(checked['address'])
        except ValueError:
            raise ParameterError(f'parameter address: {checked["address"]!r} is not an IP '
                                 'address (nor localhost)') from None
    for name in ('include', 'exclude'):
        try:
            re.compile(checked[name])
        except re.error as exc:
            raise ParameterError(
                f'parameter {name}: {checked[name]!r} is not a regular expression: {exc}'
            ) from None
    return FoxgloveViewParameters(**checked)


def declare_foxglove_view_parameters(node: Node) -> FoxgloveViewParameters:
    """
    Declare, validate and freeze the parameters of the foxglove_view node.

    :raises ParameterError: for a value the node cannot run with.
    """
    settings = foxglove_view_parameters_from_values(
        declare_parameters(node, FOXGLOVE_VIEW_PARAMETERS))
    finish_parameters(node, FOXGLOVE_VIEW_PARAMETERS, dataclasses.asdict(settings))
    return settings
