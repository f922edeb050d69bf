# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The parameters of the lidar_recorder node, declared, validated and frozen.

==================  =========================================================================
node                parameters
==================  =========================================================================
lidar_recorder      points_topic, odometry_topic, fix_topic, set, sequence, split, root,
                    existing, commit_interval_s
==================  =========================================================================

The same machinery as every other node's (:mod:`acres_bridge.runtime.parameters`): a
``ParameterSpec`` per parameter, :func:`declare_lidar_recorder_parameters` for a node and
:func:`lidar_recorder_parameters_from_values` for a plain mapping, :class:`ParameterError` for a
value the node cannot run with. Set and sequence names follow the dataset's naming rules
(:func:`acres_bridge.dataset.format.check_name`).
"""

from collections.abc import Mapping
import dataclasses
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from acres_bridge.dataset.format import check_name
from acres_bridge.dataset.format import DatasetError
from acres_bridge.runtime.parameters import checked_values
from acres_bridge.runtime.parameters import declare_parameters
from acres_bridge.runtime.parameters import finish_parameters
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.runtime.parameters import ParameterSpec

_T = Parameter.Type

EXISTING_CHOICES = ('append', 'refuse')

POINTS_TOPIC = ParameterSpec(
    'points_topic', 'lidar/points', _T.STRING,
    'The organised PointCloud2 to record (rings x columns, e.g. 32 x 1800).')
ODOMETRY_TOPIC = ParameterSpec(
    'odometry_topic', 'ins/odometry', _T.STRING,
    'The Odometry of base_footprint for the pose of each scan: ins/odometry, or '
    'ground_truth/odometry (pose quality 4, truth).')
FIX_TOPIC = ParameterSpec(
    'fix_topic', 'ins/fix', _T.STRING,
    'The NavSatFix whose status gives the pose quality (RTK fix: rtk, fix: ins, no fix: '
    'degraded); not used with ground-truth odometry.')
DATASET_SET = ParameterSpec(
    'set', 'bridge', _T.STRING, 'The data set: the folder <root>/<set>.')
DATASET_SEQUENCE = ParameterSpec(
    'sequence', '', _T.STRING,
    'The sequence: the folder <root>/<set>/<sequence>; empty: the start time in UTC '
    '(20261201T093000Z) with the namespace (-polaris).')
DATASET_SPLIT = ParameterSpec(
    'split', 'none', _T.STRING, 'The split tag of the sequence.',
    choices=('train', 'val', 'test', 'guard', 'excluded', 'none'))
DATASET_ROOT = ParameterSpec(
    'root', '', _T.STRING, 'The data root; empty: $ACRES_DATA, else ~/data/acres/lidar.')
DATASET_EXISTING = ParameterSpec(
    'existing', 'append', _T.STRING,
    'What to do when the sequence exists: append to it, or refuse to start.',
    choices=EXISTING_CHOICES)

COMMIT_INTERVAL_S = ParameterSpec(
    'commit_interval_s', 10.0, _T.DOUBLE,
    'How often the open shard is written (besides every 256th scan and the end), s of wall '
    'time: a crash loses at most this much.', float_range=(0.1, 3600.0))

LIDAR_RECORDER_PARAMETERS = (POINTS_TOPIC, ODOMETRY_TOPIC, FIX_TOPIC, DATASET_SET,
                             DATASET_SEQUENCE, DATASET_SPLIT, DATASET_ROOT, DATASET_EXISTING,
                             COMMIT_INTERVAL_S)


@dataclasses.dataclass(frozen=True, slots=True)
class LidarRecorderParameters:
    """The settings of the lidar_recorder node (``set`` is a keyword, hence ``set_name``)."""

    points_topic: str = 'lidar/points'
    odometry_topic: str = 'ins/odometry'
    fix_topic: str = 'ins/fix'
    set_name: str = 'bridge'
    sequence: str = ''
    split: str = 'none'
    root: str = ''
    existing: str = 'append'
    commit_interval_s: float = 10.0

    def values(self) -> dict[str, Any]:
        """Return the values by parameter name."""
        values = dataclasses.asdict(self)
        values['set'] = values.pop('set_name')
        return values


def lidar_recorder_parameters_from_values(values: Mapping[str, Any]) -> LidarRecorderParameters:
    """
    Return validated lidar_recorder settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    checked = checked_values(LIDAR_RECORDER_PARAMETERS, values)
    for name in ('points_topic', 'odometry_topic', 'fix_topic'):
        topic = checked[name]
        if not topic or any(character.isspace() for character in topic):
            raise ParameterError(f'parameter {name}: {topic!r} is not a topic name')
    for name, kind in (('set', 'set'), ('sequence', 'sequence')):
        if name == 'sequence' and not checked[name]:
            continue
        try:
            check_name(kind, checked[name])
        except DatasetError as exc:
            raise ParameterError(f'parameter {name}: {exc}') from exc
    checked['set_name'] = checked.pop('set')
    return LidarRecorderParameters(**checked)


def declare_lidar_recorder_parameters(node: Node) -> LidarRecorderParameters:
    """
    Declare, validate and freeze the parameters of the lidar_recorder node.

    :raises ParameterError: for a value the node cannot run with.
    """
    specs = LIDAR_RECORDER_PARAMETERS
    settings = lidar_recorder_parameters_from_values(declare_parameters(node, specs))
    finish_parameters(node, specs, settings.values())
    return settings
