# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The reader of acres-lidar-dataset-1: :class:`LidarSet` (a set's index) and :class:`Sequence`.

Shards are memory-mapped when first needed and kept open; a read copies only the scans asked
for, so a read of one scan touches one part of one file. ``scans.npy`` gives how many scans a
sequence has: a shard may hold more rows (a recorder that stopped before it committed them),
never fewer, and the rows beyond are not read.
"""

from collections.abc import Iterable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from acres_bridge.dataset.calibration import Calibration
from acres_bridge.dataset.format import BODY_MASK
from acres_bridge.dataset.format import check_name
from acres_bridge.dataset.format import data_root
from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import INDEX
from acres_bridge.dataset.format import META
from acres_bridge.dataset.format import RANGE_STEP_M
from acres_bridge.dataset.format import read_json
from acres_bridge.dataset.format import SCAN_DTYPE
from acres_bridge.dataset.format import SCANS
from acres_bridge.dataset.format import SCHEMA
from acres_bridge.dataset.format import shard_name
from acres_bridge.dataset.format import SHARD_SCANS
from acres_bridge.dataset.format import SPLITS

# uint16 range value -> float32 metres, NaN for 0: one gather per cell, the table stays in cache.
_RANGE_TABLE = np.arange(65536, dtype=np.float32) * np.float32(RANGE_STEP_M)
_RANGE_TABLE[0] = np.nan
_BLOCK_SCANS = 4        # scans converted at once: source and result stay in the CPU's cache

Index = int | slice | Iterable[int] | np.ndarray


class Sequence:
    """
    One sequence: its scans, calibration, body mask and layers, read through memory maps.

    :param folder: ``<root>/<set>/<sequence>``.
    :raises DatasetError: when meta.json or scans.npy is missing or of another schema.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.meta: dict[str, Any] = read_json(self.folder / META)
        if self.meta.get('schema') != SCHEMA:
            raise DatasetError(f'{self.folder / META} has schema {self.meta.get("schema")!r}, '
                               f'not {SCHEMA}')
        self.name = self.folder.name
        self.split = self.meta.get('split', 'none')
        self.rings = int(self.meta['rings'])
        self.columns = int(self.meta['columns'])
        self.shard_scans = int(self.meta.get('shard_scans', SHARD_SCANS))
        self.layers = tuple(self.meta.get('layers', ('range',)))
        try:
            scans = np.load(self.folder / SCANS, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DatasetError(f'{self.folder / SCANS} cannot be read: {exc}') from exc
        if scans.dtype != SCAN_DTYPE:
            raise DatasetError(f'{self.folder / SCANS} has fields {scans.dtype.names}, not the '
                               'scan table of the format')
        self.scans: np.ndarray = scans
        self.calibration = Calibration.from_meta(self.meta)
        self._maps: dict[tuple[str, int], np.ndarray] = {}
        self._body_mask: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.scans)

    def __repr__(self) -> str:
        return (f'Sequence({self.name!r}, scans={len(self)}, split={self.split!r}, '
                f'layers={self.layers})')

    @property
    def body_mask(self) -> np.ndarray:
        """The cells that see the vehicle body, bool (rings, columns)."""
        if self._body_mask is None:
            path = self.folder / BODY_MASK
            self._body_mask = (np.load(path, allow_pickle=False) if path.exists()
                               else np.zeros((self.rings, self.columns), dtype=bool))
        return self._body_mask

    def range_m(self, index: Index) -> np.ndarray:
        """
        Return ranges in metres, float32, NaN for a cell without a return.

        :param index: one scan (-> (rings, columns)), a slice or a list of scans (-> (n, rings,
            columns)).
        :raises IndexError: for a scan beyond the sequence.
        """
        scans, single = self._indices(index)
        out = np.empty((len(scans), self.rings, self.columns), dtype=np.float32)
        position = 0
        for shard, start, stop, picks in self._runs(scans):
            source = self._map('range', shard)
            count = stop - start if picks is None else len(picks)
            for block in range(0, count, _BLOCK_SCANS):
                end = min(block + _BLOCK_SCANS, count)
                part = (source[start + block:start + end] if picks is None
                        else source[picks[block:end]])
                # 'clip' skips the bounds check: no uint16 is out of the 65536-entry table.
                np.take(_RANGE_TABLE, part, out=out[position + block:position + end],
                        mode='clip')
            position += count
        return out[0] if single else out

    def range_raw(self, index: Index) -> np.ndarray:
        """Return the stored uint16 values (2.5 mm steps, 0 = no return)."""
        return self._layer('range', index)

    def intensity(self, index: Index) -> np.ndarray | None:
        """Return the intensity bytes, uint8 (0 without a return), or None without the layer."""
        if 'intensity' not in self.layers:
            return None
        return self._layer('intensity', index)

    def label(self, name: str, index: Index) -> np.ndarray | None:
        """
        Return a label of a simulator, or None when the sequence does not have it.

        Labels are ``labels/<name>-NNNNN.npy`` shards (per cell) or ``labels/<name>.npy`` (one
        row per scan).
        """
        check_name('label', name)
        folder = self.folder / 'labels'
        if (folder / shard_name(name, 0)).exists():
            return self._layer(f'labels/{name}', index)
        table = folder / f'{name}.npy'
        if table.exists():
            scans, single = self._indices(index)
            rows = np.load(table, mmap_mode='r', allow_pickle=False)
            return np.array(rows[scans[0]] if single else rows[scans])
        return None

    # --- internals ------------------------------------------------------------------------

    def _indices(self, index: Index) -> tuple[np.ndarray, bool]:
        count = len(self.scans)
        if isinstance(index, (int, np.integer)):
            scan = int(index)
            if scan < 0:
                scan += count
            if not 0 <= scan < count:
                raise IndexError(f'scan {index} of a sequence of {count} scans')
            return np.array([scan]), True
        if isinstance(index, slice):
            return np.arange(count)[index], False
        scans = np.asarray(list(index) if not isinstance(index, np.ndarray) else index)
        if scans.size == 0:
            return scans.astype(np.int64), False
        if scans.dtype == bool:
            raise IndexError('a boolean mask is not a scan index; use np.flatnonzero')
        scans = scans.astype(np.int64)
        scans = np.where(scans < 0, scans + count, scans)
        if scans.min() < 0 or scans.max() >= count:
            raise IndexError(f'scans {index} of a sequence of {count} scans')
        return scans, False

    def _runs(self, scans: np.ndarray) -> Iterator[tuple[int, int, int, np.ndarray | None]]:
        """Yield (shard, start, stop, picks): contiguous runs as slices, the rest as lists."""
        size = self.shard_scans
        i = 0
        while i < len(scans):
            shard = int(scans[i]) // size
            j = i + 1
            while j < len(scans) and int(scans[j]) // size == shard:
                j += 1
            local = scans[i:j] - shard * size
            if np.all(np.diff(local) == 1):
                yield shard, int(local[0]), int(local[-1]) + 1, None
            else:
                yield shard, 0, 0, local
            i = j

    def _map(self, layer: str, shard: int) -> np.ndarray:
        key = (layer, shard)
        array = self._maps.get(key)
        if array is None:
            path = self.folder / shard_name(layer, shard)
            try:
                array = np.load(path, mmap_mode='r', allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise DatasetError(f'{path} cannot be read: {exc}') from exc
            expected = min(self.shard_scans, len(self.scans) - shard * self.shard_scans)
            if array.ndim != 3 or array.shape[1:] != (self.rings, self.columns) or (
                    array.shape[0] < expected):
                raise DatasetError(f'{path} has shape {array.shape}, not at least ({expected}, '
                                   f'{self.rings}, {self.columns})')
            self._maps[key] = array
        return array

    def _layer(self, layer: str, index: Index) -> np.ndarray:
        scans, single = self._indices(index)
        parts = []
        for shard, start, stop, picks in self._runs(scans):
            source = self._map(layer, shard)
            parts.append(source[start:stop] if picks is None else source[picks])
        if not parts:
            return np.empty((0, self.rings, self.columns), dtype=self._map(layer, 0).dtype
                            if len(self.scans) else np.uint8)
        out = np.concatenate(parts) if len(parts) > 1 else np.array(parts[0])
        return out[0] if single else out


class LidarSet:
    """
    A data set: the sequences of ``<root>/<set>/index.json``.

    ``ds[name]`` opens a sequence (and keeps it); ``ds.names`` lists those the split filter
    kept, in the index's order.
    """

    def __init__(self, folder: Path, index: dict[str, Any],
                 splits: Iterable[str] | None = None) -> None:
        self.folder = folder
        self.name = folder.name
        self.index = index
        entries = index.get('sequences', {})
        wanted = None if splits is None else set(splits)
        if wanted is not None and not wanted <= set(SPLITS):
            raise DatasetError(f'splits {sorted(wanted - set(SPLITS))} are not of '
                               f'{", ".join(SPLITS)}')
        self.entries = {name: entry for name, entry in entries.items()
                        if wanted is None or entry.get('split', 'none') in wanted}
        self._open: dict[str, Sequence] = {}

    @classmethod
    def open(cls, name: str, splits: Iterable[str] | None = None, *,
             root: str | Path | None = None) -> 'LidarSet':
        """
        Open a set below the data root.

        The root is ``root``, else ``$ACRES_DATA``, else ``~/data/acres/lidar``.

        :param splits: keep the sequences with these split tags (default: all).
        :raises DatasetError: when the set or its index does not exist.
        """
        folder = data_root(root) / check_name('set', name)
        path = folder / INDEX
        if not path.exists():
            raise DatasetError(f'no data set {name!r}: {path} does not exist')
        index = read_json(path)
        if index.get('schema') != SCHEMA:
            raise DatasetError(f'{path} has schema {index.get("schema")!r}, not {SCHEMA}')
        return cls(folder, index, splits)

    @property
    def names(self) -> list[str]:
        """The sequences the split filter kept."""
        return list(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __getitem__(self, name: str) -> Sequence:
        if name not in self.entries:
            raise KeyError(f'no sequence {name!r} in set {self.name!r} (with the split filter)')
        sequence = self._open.get(name)
        if sequence is None:
            sequence = self._open[name] = Sequence(self.folder / name)
        return sequence
