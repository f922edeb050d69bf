# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

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
