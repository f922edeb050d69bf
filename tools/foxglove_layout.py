# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Write config/acres.foxglove.json, the Foxglove layout of a session, with foxglove-sdk's layouts.

    .venv/bin/python tools/foxglove_layout.py            # rewrite config/acres.foxglove.json
    .venv/bin/python tools/foxglove_layout.py --agent maxxum --output /tmp/maxxum.json

Panels: the 3D view (the cloud coloured by intensity, /tf, following base_footprint), the camera
image with the cloud projected into it (its camera_info as calibration), the map with the
NavSatFix, plots of the IMU's angular velocity and linear acceleration, and a Service Call
panel for /step_simulation (10 steps).
"""

import argparse
from collections.abc import Sequence
import os

import foxglove.layouts as fl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, 'config', 'acres.foxglove.json')


def session_layout(agent: str = 'polaris') -> fl.Layout:
    """Return the layout of one agent's topics and the session's step service."""
    cloud = f'/{agent}/lidar/points'
    imu = f'/{agent}/ins/imu'
    points = fl.BaseRendererPointCloudTopicSettings(
        visible=True, color_field='intensity', color_mode='colormap', color_map='turbo',
        point_size=2.0)
    three_d = fl.ThreeDeePanel(title='cloud and /tf', config=fl.ThreeDeeConfig(
        follow_tf='base_footprint', topics={cloud: points}))
    image = fl.ImagePanel(title='camera with the cloud', config=fl.ImageConfig(
        image_mode=fl.ImageModeConfig(image_topic=f'/{agent}/camera/image_raw',
                                      calibration_topic=f'/{agent}/camera/camera_info'),
        topics={cloud: points}))
    fix_map = fl.MapPanel(title='NavSatFix', config=fl.MapConfig(
        follow_topic=f'/{agent}/ins/fix'))

    def plot(title: str, field: str) -> fl.PlotPanel:
        return fl.PlotPanel(title=title, config=fl.PlotConfig(paths=[
            fl.PlotSeries(value=f'{imu}.{field}.{axis}') for axis in 'xyz']))

    step = fl.ServiceCallPanel(title='step the simulation', config=fl.ServiceCallConfig(
        service_name='/step_simulation', request_payload='{"steps": 10}',
        button_text='step 10'))
    column = fl.SplitContainer(direction='column', items=[
        fl.SplitItem(content=fix_map, proportion=2),
        fl.SplitItem(content=plot('IMU angular velocity', 'angular_velocity')),
        fl.SplitItem(content=plot('IMU linear acceleration', 'linear_acceleration')),
        fl.SplitItem(content=step)])
    views = fl.SplitContainer(direction='column', items=[
        fl.SplitItem(content=three_d, proportion=3), fl.SplitItem(content=image, proportion=2)])
    return fl.Layout(content=fl.SplitContainer(direction='row', items=[
        fl.SplitItem(content=views, proportion=2), fl.SplitItem(content=column)]))


def main(argv: Sequence[str] | None = None) -> int:
    """Write the layout file."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--agent', default='polaris', help='the agent whose topics it shows')
    parser.add_argument('--output', default=OUTPUT, help='the layout file to write')
    args = parser.parse_args(argv)
    with open(args.output, 'w', encoding='utf-8') as stream:
        stream.write(session_layout(args.agent).to_json() + '\n')
    print(args.output)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
