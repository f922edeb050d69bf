# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The LiDAR dataset acres-lidar-dataset-1 (seed 003): its format, writer and reader.

numpy and the standard library only: no rclpy, no message packages. The reader
(:class:`LidarSet`, :class:`Sequence`, :class:`TopView`) is what a model imports.
"""

from acres_bridge.dataset.calibration import Calibration
from acres_bridge.dataset.format import data_root
from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import SCAN_DTYPE
from acres_bridge.dataset.format import SCHEMA
from acres_bridge.dataset.reader import LidarSet
from acres_bridge.dataset.reader import Sequence
from acres_bridge.dataset.transforms import body_cells
from acres_bridge.dataset.transforms import TopView

__all__ = ['Calibration', 'DatasetError', 'LidarSet', 'SCAN_DTYPE', 'SCHEMA', 'Sequence',
           'TopView', 'body_cells', 'data_root']
