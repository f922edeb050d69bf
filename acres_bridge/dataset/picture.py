# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A picture of one scan of a sequence: its range image above its top view (needs Pillow).

    python -m acres_bridge.dataset.picture SET SEQUENCE [--scan N] [--root DIR] --out FILE.png

The range image has ring 0 at the top and column 0 (straight ahead) at the left, nearer
brighter, black without a return. The top view is :class:`TopView` with its defaults (51.2 m
square around base_footprint, x forward = up, y left = left), coloured by the highest return of
each cell from blue (1 m below base_footprint) to yellow (3 m above), black where a cell has
no return, and a white mark at base_footprint.
"""

import argparse
from pathlib import Path
import sys

import numpy as np

from acres_bridge.dataset.reader import LidarSet
from acres_bridge.dataset.transforms import body_cells
from acres_bridge.dataset.transforms import TopView

# Blue, cyan, green, yellow: the height ramp of the top view.
_RAMP = np.array([[40, 60, 200], [0, 190, 230], [60, 200, 80], [250, 230, 40]], np.float32)


def _ramp(share: np.ndarray) -> np.ndarray:
    position = np.clip(share, 0.0, 1.0) * (len(_RAMP) - 1)
    low = np.floor(position).astype(int).clip(0, len(_RAMP) - 2)
    part = (position - low)[..., np.newaxis]
    return _RAMP[low] * (1.0 - part) + _RAMP[low + 1] * part


def scan_picture(sequence, scan: int, *, view: TopView | None = None) -> np.ndarray:
    """Return an RGB picture (height, width, 3) uint8 of one scan."""
    view = view or TopView()
    range_m = sequence.range_m(scan)
    drop = body_cells(sequence.calibration, range_m, sequence.body_mask)
    grid = view(sequence.calibration, range_m, drop=drop)
    occupied = grid[0] > 0.0
    share = (grid[1] - view.z_min) / (view.z_max - view.z_min)
    top = np.where(occupied[..., np.newaxis], _ramp(share), 0.0)
    # Cell (i, j) is x = i (forward), y = j (left): forward up, left on the left.
    top = top[::-1, ::-1]
    top = np.repeat(np.repeat(top, 3, axis=0), 3, axis=1)
    centre_row = top.shape[0] - 1 - int((0.0 - view.x_min) / view.cell_m * 3)
    centre_col = top.shape[1] - 1 - int((0.0 - view.y_min) / view.cell_m * 3)
    top[centre_row - 2:centre_row + 3, centre_col - 2:centre_col + 3] = 255.0
    # A return is 40 (80 m and beyond) to 255 (at the sensor); no return is black.
    far = np.clip(np.log1p(range_m) / np.log1p(80.0), 0.0, 1.0)
    near = np.nan_to_num(40.0 + 215.0 * (1.0 - far), nan=0.0)
    strip = np.repeat(near, 4, axis=0)[..., np.newaxis]
    strip = np.repeat(strip, 3, axis=2)
    width = max(strip.shape[1], top.shape[1])
    canvas = np.zeros((strip.shape[0] + 8 + top.shape[0], width, 3), np.float32)
    canvas[:strip.shape[0], :strip.shape[1]] = strip
    offset = (width - top.shape[1]) // 2
    canvas[strip.shape[0] + 8:, offset:offset + top.shape[1]] = top
    return canvas.astype(np.uint8)


def main(argv: list[str] | None = None) -> int:
    """Write the picture of one scan; return the exit status."""
    parser = argparse.ArgumentParser(prog='python -m acres_bridge.dataset.picture',
                                     description=__doc__.strip().splitlines()[0])
    parser.add_argument('set_name', metavar='SET')
    parser.add_argument('sequence', metavar='SEQUENCE')
    parser.add_argument('--scan', type=int, default=0, help='the scan (default 0)')
    parser.add_argument('--root', type=Path, help='the data root')
    parser.add_argument('--out', type=Path, required=True, help='the PNG to write')
    args = parser.parse_args(argv)
    from PIL import Image
    sequence = LidarSet.open(args.set_name, root=args.root)[args.sequence]
    Image.fromarray(scan_picture(sequence, args.scan)).save(args.out, optimize=True)
    print(f'{args.out}: scan {args.scan} of {sequence.folder}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
