# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Measure the emulator's sensor models: milliseconds per call, min, p50, p90 and max.

Each line is given twice: wall time, and the CPU time of the calling thread (which other
processes on a busy machine do not inflate).

Run: ``.venv/bin/python tools/bench_emulator_scene.py [--calls 200] [--vehicle polaris]``.
The vehicle drives a loop that starts at the garage (many trees and buildings in range) and
crosses field 53, with a few props ahead. The last lines give the budget of one simulated
second at ten times real time: 10 scans, 10 images and 100 INS epochs.
"""

import argparse
import math
import os
import sys
import time

import numpy as np

from acres_bridge.emulator.sensors.camera import camera_image
from acres_bridge.emulator.sensors.ins import ins_values
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.layouts import VEHICLES
from acres_bridge.emulator.sensors.lidar import lidar_scan
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.props import Prop
from acres_bridge.emulator.sensors.props import vehicle_prop
from acres_bridge.emulator.sensors.view import render_view_png
from acres_bridge.emulator.terrain import Terrain


def _poses(count: int) -> list[Pose]:
    """Return poses on a drive north from the garage into field 53 and back."""
    poses = []
    for k in range(count):
        phase = 2.0 * math.pi * k / count
        x = -38.7097 + 25.0 * math.sin(phase)
        y = -140.5131 + 60.0 * (1.0 - math.cos(phase))
        yaw = math.atan2(60.0 * math.sin(phase), 25.0 * math.cos(phase))
        poses.append(Pose.from_xyz_yaw(x, y, float(Terrain().height_at(x, y)), yaw))
    return poses


def _measure(name: str, call, poses: list[Pose]) -> float:
    """Print wall and CPU (thread) milliseconds per call; return the CPU p50."""
    call(poses[0])
    wall, cpu = [], []
    for pose in poses:
        start, start_cpu = time.perf_counter(), time.thread_time()
        call(pose)
        cpu.append((time.thread_time() - start_cpu) * 1e3)
        wall.append((time.perf_counter() - start) * 1e3)
    for label, values in (('wall', np.array(wall)), ('cpu', np.array(cpu))):
        print(f'{name:<16} {label:<4} calls={len(values):4d}  min={values.min():7.3f}  '
              f'p50={np.percentile(values, 50):7.3f}  p90={np.percentile(values, 90):7.3f}  '
              f'max={values.max():7.3f} ms')
    return float(np.percentile(cpu, 50))


def main() -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--calls', type=int, default=200)
    parser.add_argument('--vehicle', default='polaris', choices=VEHICLES)
    args = parser.parse_args()
    terrain = Terrain()
    layout = hello_layout(args.vehicle, args.vehicle)
    rng = np.random.default_rng(42)
    props = [Prop('cone1', 'prop:cone', (-33.71, -120.0, 0.4)),
             Prop('box1', 'prop:box', (-40.0, -100.0, 0.2)),
             Prop('bale1', 'prop:bale_round', (-30.0, -80.0, 0.15)),
             Prop('w1', 'person', (-45.0, -90.0, 0.15)),
             vehicle_prop('maxxum', 'maxxum',
                          Pose.from_xyz_yaw(-20.0, -125.0, 0.5, 0.0))]
    poses = _poses(args.calls)
    load = os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan')
    print(f'{args.vehicle}: lidar {layout["lidar"]["columns"]} x {layout["lidar"]["rings"]}, '
          f'camera {layout["camera"]["width"]} x {layout["camera"]["height"]}; '
          f'load average {load:.2f} on {os.cpu_count()} cpus')
    lidar = _measure('lidar_scan', lambda pose: lidar_scan(
        layout, pose, props, terrain, rng=rng), poses)
    camera = _measure('camera_image', lambda pose: camera_image(
        layout, pose, props, terrain, rng=rng), poses)
    ins = _measure('ins_values', lambda pose: ins_values(
        layout, pose, velocity_world=(0.0, 3.0, 0.0), angular_velocity_world=(0.0, 0.0, 0.1),
        acceleration_world=(0.0, 0.2, 0.0), rng=rng), poses * 5)
    _measure('render_view_png', lambda pose: render_view_png(
        [(args.vehicle, pose)], props, terrain), poses[:10])
    second = 10 * lidar + 10 * camera + 100 * ins
    print(f'one simulated second (10 scans, 10 images, 100 INS) at the CPU p50: '
          f'{second:.1f} ms; 10x real time needs {10 * second:.0f} ms of CPU each second')
    return 0


if __name__ == '__main__':
    sys.exit(main())
