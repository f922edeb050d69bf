#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Stop each launch file with Ctrl-C many times in a row and count the clean stops.

Each stop is test/system/launch/test_launch_stops.py's (acres_devkit/launch_stops.py): the real
``ros2 launch`` of this interpreter's prefix, a client that waits for /clock and every agent's
clouds (and steps a lockstep session through the stop), SIGINT to the process group, then the
checks. Prints a line per stop, then per launch the clean count, the time from SIGINT to the end of
launch (median and max) and the time to come up; the output of every stop that was not clean goes
to ``--out``. Exit code 0 when every stop was clean. Not part of CI::

    .venv/bin/python tools/stop_loop.py --count 50                  # each launch file, Kilted
    .venv-jazzy/bin/python tools/stop_loop.py --count 50            # the same on Jazzy
    .venv/bin/python tools/stop_loop.py --launch acres_session --count 5

DDS discovery stays on this machine, in a ROS_DOMAIN_ID that no other run holds (the suite's
own claim), with stock Fast DDS unless the environment names a profile.
"""

import argparse
import os
from pathlib import Path
import statistics
import sys

from acres_bridge.emulator.server import Emulator
from acres_devkit.environment import claim_domain_id
from acres_devkit.environment import local_discovery
from acres_devkit.environment import ros_distro
from acres_devkit.launch_stops import CASES
from acres_devkit.launch_stops import stop_once
from acres_devkit.launch_stops import StopOutcome

ROOT = Path(__file__).resolve().parents[1]
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE',
                     'RMW_FASTRTPS_USE_QOS_FROM_XML')


def _stop(case: str, context: object) -> StopOutcome:
    emulators: list[Emulator] = []

    def start(**options: object) -> Emulator:
        emulators.append(Emulator(**options).start())
        return emulators[-1]

    try:
        return stop_once(CASES[case], context, start)
    finally:
        for emulator in emulators:
            emulator.stop()


def _summary(case: str, outcomes: list[StopOutcome]) -> str:
    clean = [outcome for outcome in outcomes if outcome.clean]
    line = f'{case}: {len(clean)} of {len(outcomes)} clean'
    if clean:
        stops = [outcome.stop_s for outcome in clean]
        ups = [outcome.up_s for outcome in clean]
        line += (f'; Ctrl-C to exit median {statistics.median(stops):.2f} s, max '
                 f'{max(stops):.2f} s; up in median {statistics.median(ups):.1f} s')
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--launch', choices=sorted(CASES), action='append',
                        help='a launch (repeatable; default: every one)')
    parser.add_argument('--count', type=int, default=50, help='stops per launch (default 50)')
    parser.add_argument('--out', type=Path, default=ROOT / 'out' / 'stop_loop',
                        help='where the output of unclean stops goes (default out/stop_loop)')
    args = parser.parse_args()
    # As for the suite: discovery on this machine, in a ROS_DOMAIN_ID no other run holds.
    local_discovery(os.environ)
    os.environ.setdefault('ROS_DOMAIN_ID', str(claim_domain_id()))
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    distro = ros_distro()
    profiles = [f'{name}={os.environ[name]}' for name in PROFILE_VARIABLES if name in os.environ]
    print(f'{distro}, ROS_DOMAIN_ID {os.environ["ROS_DOMAIN_ID"]}, Fast DDS '
          f'{", ".join(profiles) or "stock (no profile)"}', flush=True)
    results: dict[str, list[StopOutcome]] = {}
    try:
        for case in args.launch or sorted(CASES):
            outcomes = results.setdefault(case, [])
            for run in range(1, args.count + 1):
                outcome = _stop(case, context)
                outcomes.append(outcome)
                if outcome.clean:
                    print(f'{case} {run}/{args.count}: clean, up {outcome.up_s:.1f} s, stop '
                          f'{outcome.stop_s:.2f} s', flush=True)
                    continue
                args.out.mkdir(parents=True, exist_ok=True)
                log = args.out / f'{distro}-{case}-{run}.log'
                log.write_text('\n'.join(outcome.problems) + '\n\n' + outcome.output)
                print(f'{case} {run}/{args.count}: NOT CLEAN ({"; ".join(outcome.problems)}); '
                      f'output in {log}', flush=True)
    finally:
        context.try_shutdown()
    for case, outcomes in results.items():
        print(_summary(case, outcomes))
    return 0 if all(outcome.clean for outcomes in results.values() for outcome in outcomes) \
        else 1


if __name__ == '__main__':
    sys.exit(main())
