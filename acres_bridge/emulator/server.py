# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

r"""
The emulator of the simulator's sockets: :class:`Emulator` in-process, :func:`main` as a CLI.

One control channel and one sensor stream per agent, all on 127.0.0.1::

    acres_sim_emulator --control-port 5600 --sensor-ports 5601,5602 \
        --vehicles polaris,maxxum --lockstep --mode game --seed 42 --rate 1.0

Port 0 binds any free port, except ``--control-port 0`` in core mode, which opens no control
channel (ACRES Core's meaning); ``--control-port any`` binds any free port in both modes. The
CLI prints the bound ports in one line (``ACRES_SIM_EMULATOR_READY control=5600
sensors=5601,5602``, control=0 without a channel) on stdout.
"""

import argparse
from collections.abc import Sequence
import logging
import sys
import threading

from acres_bridge.emulator.control_server import ControlServer
from acres_bridge.emulator.control_server import RequestLog
from acres_bridge.emulator.stream_server import SensorStreamServer
from acres_bridge.emulator.world import World
from acres_bridge.protocol.sockets import require_loopback
from acres_bridge.runtime.stop_request import serve_until_stopped
from acres_bridge.runtime.stop_request import StopRequest

logger = logging.getLogger(__name__)
# How often main() looks for a stop request while the emulator runs: the longest a signal waits.
STOP_POLL_S = 0.1


class Emulator:
    """
    The simulator's sockets in this process.

    :param vehicles: one vehicle per agent: ``polaris`` or ``maxxum`` (core: polaris only).
    :param mode: ``game`` (the Unreal game) or ``core`` (the ACRES Core server).
    :param lockstep: start in the paused state (the world advances on step requests only).
    :param seed: the seed of the sensor noise.
    :param rate: the real-time factor of the playing state.
    :param control_port: the control channel port; 0 binds any free port; None opens no
        channel.
    :param sensor_ports: one sensor stream port per agent (missing ones are 0: any free port;
        None: the agent has no sensor stream, its hello ``sensor_stream`` is 0).
    :param drive: ``loop`` (the vehicles drive slow circles) or ``hold``.
    :param render_every: render every Nth LiDAR and camera frame afresh (see ``World``); 1
        renders every frame.
    :param sweep: core mode: trace each LiDAR column from the pose at its firing time (ACRES
        Core's sweep option; without it a scan is from one instant). The game always sweeps.
    :param georeferenced: false: a map without a geographic reference (the Hello says so, the
        INS's geographic values are NaN and its fix status -1).
    :param session_dir: the folder of the default episode log paths (a new temporary folder
        when needed).
    """

    def __init__(self, vehicles: Sequence[str] = ('polaris',), mode: str = 'game',
                 lockstep: bool = False, seed: int = 42, rate: float = 1.0,
                 control_port: int | None = 0, sensor_ports: Sequence[int | None] = (0,), *,
                 host: str = '127.0.0.1', drive: str = 'loop', render_every: int = 1,
                 session_dir: str | None = None, sweep: bool = False,
                 georeferenced: bool = True) -> None:
        if isinstance(vehicles, str):
            vehicles = [name.strip() for name in vehicles.split(',') if name.strip()]
        if not vehicles:
            raise ValueError('an emulator needs at least one vehicle')
        if len(sensor_ports) > len(vehicles):
            raise ValueError(f'{len(sensor_ports)} sensor ports for {len(vehicles)} agents')
        self.host = require_loopback(host)
        self.world = World(vehicles, mode=mode, seed=seed, drive=drive,
                           render_every=render_every, sweep=sweep, georeferenced=georeferenced)
        self.mode = mode
        ports = list(sensor_ports) + [0] * (len(vehicles) - len(sensor_ports))
        self.streams = [
            SensorStreamServer(agent=agent.name, hello=agent.layout, mode=mode, port=port,
                               host=self.host, time_s=self._time_s) if port is not None else None
            for agent, port in zip(self.world.agents, ports)]
        self.control = ControlServer(self.world, self.streams, port=control_port,
                                     host=self.host, lockstep=lockstep, rate=rate,
                                     session_dir=session_dir, on_quit=self.stop)
        self.stopped = threading.Event()
        self._started = False
        self._stop_lock = threading.Lock()

    def _time_s(self) -> float:
        return self.world.time_s

    @property
    def control_port(self) -> int:
        """The bound port of the control channel."""
        return self.control.port

    @property
    def sensor_ports(self) -> list[int]:
        """The bound port of each agent's sensor stream (0 when it could not open or is none)."""
        return [stream.port if stream is not None else 0 for stream in self.streams]

    @property
    def requests(self) -> RequestLog:
        """The JSON requests the control channel received: their count and the recent ones."""
        return self.control.requests

    def start(self) -> 'Emulator':
        """Open the sockets and start the threads."""
        for agent, stream in zip(self.world.agents, self.streams):
            if stream is not None:
                stream.start()
                agent.sink = stream
        self.control.start()
        self._started = True
        return self

    def stop(self) -> None:
        """Close every socket and join every thread (also after set_state 3)."""
        with self._stop_lock:
            if self.stopped.is_set():
                return
            if self._started:
                self.control.stop()
                for stream in self.streams:
                    if stream is not None:
                        stream.stop()
            self.stopped.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the emulator stops (set_state 3 or :meth:`stop`)."""
        return self.stopped.wait(timeout_s)

    def __enter__(self) -> 'Emulator':
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a port number') from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f'port {port} is not in 0..65535')
    return port


def _control_port(text: str) -> int | str:
    return 'any' if text == 'any' else _port(text)


def _ports(text: str) -> list[int]:
    return [_port(item) for item in text.split(',')]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='acres_sim_emulator',
        description="An emulator of the ACRES simulator's control channel and sensor streams, "
                    'on 127.0.0.1 only.')
    parser.add_argument('--control-port', type=_control_port, default=5600,
                        help='the control channel port (default 5600; any: any free port; 0: '
                             'any free port in game mode, no channel in core mode as in ACRES '
                             'Core)')
    parser.add_argument('--sensor-ports', type=_ports, default=None,
                        help='one sensor stream port per agent, comma separated '
                             '(default 5601, 5602, ...; 0: any free port)')
    parser.add_argument('--vehicles', default='polaris',
                        help='the agents: polaris or maxxum, comma separated (default polaris)')
    parser.add_argument('--lockstep', action='store_true',
                        help='start paused: the world advances on step requests only')
    parser.add_argument('--mode', choices=('game', 'core'), default='game',
                        help='emulate the Unreal game or the ACRES Core server (default game)')
    parser.add_argument('--seed', type=int, default=42, help='the sensor noise seed')
    parser.add_argument('--rate', type=float, default=1.0,
                        help='the real-time factor of the playing state (default 1.0)')
    parser.add_argument('--drive', choices=('loop', 'hold'), default='loop',
                        help='loop: the vehicles drive slow circles; hold: they stand')
    parser.add_argument('--render-every', type=int, default=1,
                        help='render every Nth LiDAR and camera frame afresh; in between, '
                             'clouds are moved and images repeated (default 1: every frame)')
    parser.add_argument('--sweep', action='store_true',
                        help='core: trace each LiDAR column from the pose at its firing time '
                             '(the game always does; without it Core scans from one instant)')
    parser.add_argument('--no-georeference', action='store_true',
                        help='a map without a geographic reference: the INS has no UTM, '
                             'latitude or longitude (NaN) and a fix status of -1')
    parser.add_argument('--host', default='127.0.0.1',
                        help='the listening address: loopback only (default 127.0.0.1)')
    parser.add_argument('--session-dir', default=None,
                        help='the folder of the default episode log paths')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the emulator until Ctrl-C, SIGTERM or set_state 3."""
    args = _parser().parse_args(argv)
    vehicles = [name.strip() for name in args.vehicles.split(',') if name.strip()]
    # Core's --control-port 0 closes the channel; 'any' (and the game mode's 0) binds any port.
    control_port = None if args.control_port == 0 and args.mode == 'core' else (
        0 if args.control_port == 'any' else args.control_port)
    sensor_ports = args.sensor_ports
    if sensor_ports is None:
        sensor_ports = [0] * len(vehicles) if control_port == 0 else [
            5601 + index for index in range(len(vehicles))]
    logging.basicConfig(level=logging.INFO, format='%(message)s', stream=sys.stderr)

    def build() -> Emulator:
        require_loopback(args.host)
        if not args.rate > 0:
            raise ValueError(f'--rate must be above 0, got {args.rate}')
        return Emulator(vehicles, mode=args.mode, lockstep=args.lockstep, seed=args.seed,
                        rate=args.rate, control_port=control_port, sensor_ports=sensor_ports,
                        host=args.host, drive=args.drive, render_every=args.render_every,
                        session_dir=args.session_dir, sweep=args.sweep,
                        georeferenced=not args.no_georeference)

    def run(emulator: Emulator, stop: StopRequest) -> None:
        if not stop.requested:          # a signal during start: stop now that it is started
            print(f'ACRES_SIM_EMULATOR_READY control={emulator.control_port} '
                  f'sensors={",".join(str(port) for port in emulator.sensor_ports)}', flush=True)
        # The first SIGINT or SIGTERM asks for the stop; the loop sees it within a wait.
        while not stop.requested and not emulator.wait(STOP_POLL_S):
            pass

    return serve_until_stopped('acres_sim_emulator', build,
                               f'the control port {args.control_port}', run)


if __name__ == '__main__':
    sys.exit(main())
