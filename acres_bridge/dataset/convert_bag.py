# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Convert a rosbag2 bag (sqlite3 or MCAP) of an organised cloud and odometry into a sequence.

    python -m acres_bridge.dataset.convert_bag BAG --set polaris-drives [--sequence NAME]
        [--split train] [--points-topic /rslidar_points] [--odometry-topic /ins/odometry]

The bag is read with the rosbags library (no ROS installation needed). Without a topic option
the only topic of the type is taken (odometry: ``.../ins/odometry`` before
``.../ground_truth/odometry``); ``/tf_static`` gives the sensor mount, a NavSatFix topic the
pose quality. ``source_index`` is the cloud's number among the bag's clouds, so a cloud that
cannot be converted leaves a hole. Exit status 0, 1 when the bag has no usable cloud, 2 for
bad arguments or an existing sequence with ``--existing refuse``.
"""

import argparse
import math
from pathlib import Path
import sys
from typing import Any, Sequence

from acres_bridge.dataset.cloud import cloud_to_organised
from acres_bridge.dataset.cloud import mount_of
from acres_bridge.dataset.cloud import odometry_to_sample
from acres_bridge.dataset.cloud import stamp_ns_of
from acres_bridge.dataset.cloud import transforms_of
from acres_bridge.dataset.format import data_root
from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import SPLITS
from acres_bridge.dataset.recorder import LidarRecorder
from acres_bridge.dataset.writer import SequenceExists

POINTS_TYPE = 'sensor_msgs/msg/PointCloud2'
ODOMETRY_TYPE = 'nav_msgs/msg/Odometry'
FIX_TYPE = 'sensor_msgs/msg/NavSatFix'
TF_TYPE = 'tf2_msgs/msg/TFMessage'


class BagError(RuntimeError):
    """A bag that cannot be converted as asked; the text says why."""


def _pick(connections: list[Any], msgtype: str, wanted: str | None, *, kind: str,
          prefer: Sequence[str] = (), required: bool = True) -> str | None:
    topics = sorted({c.topic for c in connections if c.msgtype == msgtype})
    if wanted:
        if wanted not in topics:
            raise BagError(f'the bag has no {kind} topic {wanted} ({msgtype}); it has '
                           f'{", ".join(topics) or "none"}')
        return wanted
    for suffix in prefer:
        matches = [topic for topic in topics if topic.endswith(suffix)]
        if len(matches) == 1:
            return matches[0]
    if len(topics) == 1:
        return topics[0]
    if not topics:
        if required:
            raise BagError(f'the bag has no {msgtype} topic')
        return None
    raise BagError(f'the bag has several {kind} topics ({", ".join(topics)}): choose one with '
                   f'--{kind}-topic')


def convert(bag: Path, *, set_name: str, sequence: str | None = None, split: str = 'none',
            root: Path | None = None, points_topic: str | None = None,
            odometry_topic: str | None = None, fix_topic: str | None = None,
            existing: str = 'refuse', log=print) -> dict[str, Any]:
    """
    Convert one bag; return a summary (sequence folder, scans, skipped clouds, topics).

    :raises BagError: for a bag without the topics asked for.
    :raises DatasetError: for a sequence that exists (``refuse``) or cannot be written.
    """
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import get_typestore
    from rosbags.typesys import Stores

    bag = Path(bag)
    sequence = sequence or (bag.stem if bag.is_file() else bag.name)
    with AnyReader([bag], default_typestore=get_typestore(Stores.LATEST)) as reader:
        connections = list(reader.connections)
        points = _pick(connections, POINTS_TYPE, points_topic, kind='points')
        odometry = _pick(connections, ODOMETRY_TYPE, odometry_topic, kind='odometry',
                         prefer=('ins/odometry', 'odometry'), required=False)
        fix = _pick(connections, FIX_TYPE, fix_topic, kind='fix', prefer=('ins/fix',),
                    required=False)
        ground_truth = odometry is not None and 'ground_truth' in odometry
        recorder = LidarRecorder(
            data_root(root), set_name, sequence, split=split, existing=existing, log=log,
            ground_truth=ground_truth, commit_interval_s=math.inf,
            source={'kind': 'rosbag2', 'bag': str(bag.resolve()), 'points_topic': points,
                    'odometry_topic': odometry, 'fix_topic': None if ground_truth else fix})
        topics = {points, odometry, fix, '/tf_static'} - {None}
        chosen = [c for c in connections if c.topic in topics]
        transforms: dict[str, tuple] = {}
        clouds = skipped = 0
        frame_id = None
        for connection, _, rawdata in reader.messages(connections=chosen):
            message = reader.deserialize(rawdata, connection.msgtype)
            if connection.topic == points:
                index = clouds
                clouds += 1
                try:
                    cloud = cloud_to_organised(message)
                    if frame_id != cloud.frame_id:
                        frame_id = cloud.frame_id
                        recorder.set_mount(mount_of(transforms.values(), frame_id))
                    recorder.add_cloud(cloud, source_index=index)
                except SequenceExists:
                    raise
                except DatasetError as exc:
                    if recorder.writer is None and clouds > 16:
                        raise
                    skipped += 1
                    log(f'cloud {index} skipped: {exc}')
            elif connection.topic == odometry:
                recorder.add_odometry(odometry_to_sample(message))
            elif connection.topic == fix:
                recorder.add_fix_status(stamp_ns_of(message.header), message.status.status)
            elif connection.msgtype == TF_TYPE:
                for parent, child, translation, rotation in transforms_of(message):
                    transforms[child] = (parent, child, translation, rotation)
                if frame_id is not None:
                    recorder.set_mount(mount_of(transforms.values(), frame_id))
        recorder.close()
    folder = None if recorder.writer is None else recorder.writer.folder
    return {'folder': folder, 'scans': 0 if recorder.writer is None else recorder.writer.scans,
            'clouds': clouds, 'skipped': skipped, 'points_topic': points,
            'odometry_topic': odometry, 'fix_topic': fix}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='python -m acres_bridge.dataset.convert_bag',
        description='Write a rosbag2 bag (sqlite3 or MCAP) of an organised PointCloud2 and '
                    'odometry as a sequence of the LiDAR dataset acres-lidar-dataset-1.')
    parser.add_argument('bag', type=Path, help='the bag folder (or .mcap / .db3 file)')
    parser.add_argument('--set', required=True, dest='set_name', help='the data set')
    parser.add_argument('--sequence', help="the sequence name (default: the bag's folder name, "
                                           'or the file name without its suffix)')
    parser.add_argument('--split', choices=SPLITS, default='none', help='the split tag')
    parser.add_argument('--root', type=Path,
                        help='the data root (default $ACRES_DATA, else ~/data/acres/lidar)')
    parser.add_argument('--points-topic', help='the PointCloud2 topic (default: the only one)')
    parser.add_argument('--odometry-topic', help='the Odometry topic (default: the only one, '
                                                 'or .../ins/odometry)')
    parser.add_argument('--fix-topic', help='the NavSatFix topic (default: the only one)')
    parser.add_argument('--existing', choices=('refuse', 'append'), default='refuse',
                        help='an existing sequence: refuse (default) or append to it')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Convert a bag; return the exit status."""
    args = _parser().parse_args(argv)
    try:
        summary = convert(args.bag, set_name=args.set_name, sequence=args.sequence,
                          split=args.split, root=args.root, points_topic=args.points_topic,
                          odometry_topic=args.odometry_topic, fix_topic=args.fix_topic,
                          existing=args.existing)
    except (SequenceExists, FileNotFoundError) as exc:
        print(f'convert_bag: {exc}', file=sys.stderr)
        return 2
    except (BagError, DatasetError) as exc:
        print(f'convert_bag: {exc}', file=sys.stderr)
        return 1
    print(f'convert_bag: {summary["scans"]} scans of {summary["clouds"]} clouds '
          f'({summary["skipped"]} skipped) from {summary["points_topic"]} into '
          f'{summary["folder"]}')
    return 0 if summary['scans'] else 1


if __name__ == '__main__':
    sys.exit(main())
