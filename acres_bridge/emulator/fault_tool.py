# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
``acres_fault_proxy``: the fault proxy as a tool, to test a stack against a failing simulator.

The proxy stands between the simulator (the game, ACRES Core or ``acres_sim_emulator``) and its
client (the bridge), on 127.0.0.1, and breaks one socket on a schedule. It injects each
``--fault`` in order: it waits ``--interval-s``, arms the fault, and the fault fires at the next
frame (stream) or reply (control) that matches, once; with ``--repeat`` the list starts again.
A fault is ``ACTION[@TARGET][,KEY=VALUE...]``:

* stream faults: ``bad_magic``, ``cut`` (``keep``: payload bytes sent before closing),
  ``huge_header`` (``size``: the claimed payload bytes), ``garbage`` (``size``, ``seed``),
  ``unknown_type`` (``size``, ``kind``), ``stall`` (``duration_s``, 2 s here), ``drop``; the
  target is a frame type (``clock``, ``ins``, ``lidar``, ``camera``, ``barrier``), any frame
  after the Hello without one;
* control faults: ``delay`` (``delay_s``), ``swallow``, ``replace`` (``line``: the text sent
  instead of the reply), ``rewrite_id`` (``id_offset``), ``drop``; the target is an op
  (``step``, ``get_entity_state``), any reply without one.

It prints ``ACRES_FAULT_PROXY_READY port=N upstream=M`` once it listens and one line per fault
that fired, and stops on Ctrl-C or SIGTERM with exit 0; a bad argument exits 2 with one line.
:mod:`acres_bridge.emulator.faults` is the proxy itself, which the tests drive in-process.
"""

import argparse
from collections.abc import Sequence
from typing import Any

from acres_bridge.emulator.faults import CONTROL_ACTIONS
from acres_bridge.emulator.faults import FaultProxy
from acres_bridge.emulator.faults import STREAM_ACTIONS
from acres_bridge.protocol.frames import FRAME_NAMES
from acres_bridge.protocol.frames import FrameType
from acres_bridge.runtime.stop_request import serve_until_stopped
from acres_bridge.runtime.stop_request import StopRequest

# What the tool gives an option the proxy would otherwise leave open (a stall until released).
_TOOL_DEFAULTS = {'stall': {'duration_s': 2.0}}
_FRAME_TYPES = {name: kind for kind, name in FRAME_NAMES.items() if kind != FrameType.HELLO}


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_fault(text: str, protocol: str) -> tuple[str, dict[str, Any]]:
    """
    Return the action and the ``FaultProxy.inject`` keywords of ``ACTION[@TARGET][,K=V...]``.

    :raises ValueError: for an unknown action or frame type, or an option without ``=``.
    """
    head, *options = text.split(',')
    action, _, target = head.partition('@')
    actions = STREAM_ACTIONS if protocol == 'stream' else CONTROL_ACTIONS
    if action not in actions:
        raise ValueError(f'{protocol} faults are {", ".join(sorted(actions))}, not {action!r}')
    keywords: dict[str, Any] = dict(_TOOL_DEFAULTS.get(action, {}))
    if target and protocol == 'stream':
        if target not in _FRAME_TYPES:
            raise ValueError(f'frame types are {", ".join(_FRAME_TYPES)}, not {target!r}')
        keywords['frame_type'] = _FRAME_TYPES[target]
    elif target:
        keywords['op'] = target
    for option in options:
        key, equals, value = option.partition('=')
        if not equals or not key:
            raise ValueError(f'fault option {option!r} is not KEY=VALUE')
        keywords[key] = value.encode('utf-8') if key == 'line' else _value(value)
    return action, keywords


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='acres_fault_proxy',
        description='Forward one simulator socket on 127.0.0.1 and break it on a schedule, to '
                    'test a stack against a failing simulator.',
        epilog='stream faults: ' + ', '.join(sorted(STREAM_ACTIONS)) + '; control faults: '
               + ', '.join(sorted(CONTROL_ACTIONS)) + '. Example: acres_fault_proxy '
               '--upstream-port 5601 --port 5611 --fault cut@lidar --fault drop --repeat')
    parser.add_argument('--upstream-port', type=int, required=True,
                        help="the simulator's socket (a sensor stream or the control channel)")
    parser.add_argument('--protocol', choices=('stream', 'control'), default='stream',
                        help='what the socket speaks (default stream)')
    parser.add_argument('--port', type=int, default=0,
                        help='the port clients connect to instead (default 0: any free port)')
    parser.add_argument('--host', default='127.0.0.1', help='loopback only (default 127.0.0.1)')
    parser.add_argument('--fault', action='append', default=[], metavar='ACTION[@TARGET][,K=V]',
                        help='a fault to inject, in order (may be given more than once)')
    parser.add_argument('--interval-s', type=float, default=5.0,
                        help='how long to forward untouched before arming each fault (default 5)')
    parser.add_argument('--repeat', action='store_true',
                        help='start the list of faults again after the last one fired')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the proxy until Ctrl-C or SIGTERM."""
    args = _parser().parse_args(argv)
    faults: list[tuple[str, str, dict[str, Any]]] = []

    def build() -> FaultProxy:
        faults.extend((text, *parse_fault(text, args.protocol)) for text in args.fault)
        if args.interval_s < 0:
            raise ValueError(f'--interval-s must be 0 or more, got {args.interval_s}')
        return FaultProxy(args.upstream_port, protocol=args.protocol, port=args.port,
                          host=args.host, name='acres_fault_proxy')

    def run(proxy: FaultProxy, stop: StopRequest) -> None:
        print(f'ACRES_FAULT_PROXY_READY port={proxy.port} upstream={args.upstream_port}',
              flush=True)
        _run_schedule(proxy, faults, args.interval_s, args.repeat, stop)
        stop.wait()

    return serve_until_stopped('acres_fault_proxy', build, f'port {args.port}', run)


def _run_schedule(proxy: FaultProxy, faults: list[tuple[str, str, dict[str, Any]]],
                  interval_s: float, repeat: bool, stop: StopRequest) -> None:
    """Arm each fault after ``interval_s`` and report it once it fired, until ``stop``."""
    number = 0
    while faults and not stop.requested:
        for text, action, keywords in faults:
            if stop.wait(interval_s):
                return
            fault = proxy.inject(action, **keywords)
            while not fault.wait(0.5):
                if stop.requested:
                    return
            number += 1
            print(f'acres_fault_proxy: fault {number} fired: {text}', flush=True)
        if not repeat:
            return
