# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The writer of one sequence: shards, scan table, meta.json and the set's index, all atomic.

Every commit writes, in this order, each through a temporary file and a rename: the open
shard's layers (``range-NNNNN.npy``, ``intensity-NNNNN.npy``), ``body_mask.npy``, ``scans.npy``
(the commit point: readers trust its row count), ``meta.json`` and the set's ``index.json``
(under the set's lock, for recorders of several agents). A full shard is committed when its
256th scan arrives; the open shard is committed short by :meth:`SequenceWriter.commit` (at a
time the caller chooses) and at :meth:`SequenceWriter.close`, and rewritten whole when it grows.
So a crash loses at most the scans added since the last commit, never a committed shard or the
index. The files are written on a thread of their own, in order.

An existing sequence is appended to (its open shard is read back and continued) or refused;
a folder that holds files but no meta.json is always refused. Nothing is overwritten silently.
"""

from pathlib import Path
import queue
import threading
from typing import Any, Callable

import numpy as np

from acres_bridge.dataset.format import BODY_MASK
from acres_bridge.dataset.format import check_name
from acres_bridge.dataset.format import check_split
from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import META
from acres_bridge.dataset.format import read_json
from acres_bridge.dataset.format import SCAN_DTYPE
from acres_bridge.dataset.format import SCANS
from acres_bridge.dataset.format import SCHEMA
from acres_bridge.dataset.format import shard_name
from acres_bridge.dataset.format import SHARD_SCANS
from acres_bridge.dataset.format import update_index
from acres_bridge.dataset.format import write_json_atomic
from acres_bridge.dataset.format import write_npy_atomic

EXISTING = ('append', 'refuse')
_QUEUE_JOBS = 4


class SequenceExists(DatasetError):
    """The sequence exists and the writer was told to refuse it."""


class SequenceWriter:
    """
    Write one sequence of ``<root>/<set>/<sequence>``.

    :param root: the data root.
    :param rings: the rings of each scan.
    :param columns: the columns of each scan.
    :param intensity: whether the sequence has the intensity layer.
    :param existing: ``append`` (continue an existing sequence of the same shape) or
        ``refuse``.
    :param meta: the keys of meta.json besides the format's own (source, identity,
        calibration, ...), written at the first commit; update them with :meth:`commit`.
    :raises SequenceExists: for an existing sequence with ``refuse``.
    :raises DatasetError: for a bad name, an existing sequence of another shape or layers, or
        a folder that holds files but no meta.json.
    """

    def __init__(self, root: Path, set_name: str, sequence: str, *, rings: int, columns: int,
                 split: str = 'none', intensity: bool = True, existing: str = 'append',
                 meta: dict[str, Any] | None = None,
                 on_error: Callable[[BaseException], None] | None = None) -> None:
        if existing not in EXISTING:
            raise DatasetError(f'existing={existing!r} is not one of {", ".join(EXISTING)}')
        self.set_folder = Path(root) / check_name('set', set_name)
        self.sequence = check_name('sequence', sequence)
        self.folder = self.set_folder / sequence
        self.split = check_split(split)
        self.rings, self.columns = int(rings), int(columns)
        self.layers = ('range', 'intensity') if intensity else ('range',)
        self.meta: dict[str, Any] = dict(meta or {})
        self.previous_meta: dict[str, Any] | None = None
        self._on_error = on_error
        self._error: BaseException | None = None
        self._rows = np.zeros(0, dtype=SCAN_DTYPE)
        self._range = np.zeros((SHARD_SCANS, self.rings, self.columns), dtype=np.uint16)
        self._intensity = (np.zeros((SHARD_SCANS, self.rings, self.columns), dtype=np.uint8)
                           if intensity else None)
        self._free: list[np.ndarray] = []
        self._free_lock = threading.Lock()
        self._shard = 0
        self._filled = 0              # scans in the open shard
        self._committed = 0           # scans that scans.npy holds
        self._open(existing)
        self._jobs: queue.Queue = queue.Queue(_QUEUE_JOBS)
        self._thread = threading.Thread(target=self._run, name=f'dataset-writer:{sequence}',
                                        daemon=True)
        self._thread.start()
        if self.previous_meta is None:
            self.commit(self._rows, body_mask=np.zeros((self.rings, self.columns), bool))

    # --- opening ---------------------------------------------------------------------------

    def _open(self, existing: str) -> None:
        meta_path = self.folder / META
        if meta_path.exists():
            if existing == 'refuse':
                raise SequenceExists(
                    f'sequence {self.sequence!r} of set {self.set_folder.name!r} exists '
                    f'({self.folder}); choose another sequence name or append to it')
            self._remove_temporaries()
            self._resume(read_json(meta_path))
            return
        self._remove_temporaries()
        if self.folder.exists() and any(not entry.name.startswith('.')
                                        for entry in self.folder.iterdir()):
            raise DatasetError(f'{self.folder} holds files but no {META}; it is not a sequence '
                               'this writer may continue: move it away or choose another name')
        self.folder.mkdir(parents=True, exist_ok=True)

    def _remove_temporaries(self) -> None:
        """Remove what a writer that was killed mid-write left: ``.<name>.<random>.tmp``."""
        if self.folder.is_dir():
            for entry in self.folder.glob('.*.tmp'):
                entry.unlink(missing_ok=True)

    def _resume(self, meta: dict[str, Any]) -> None:
        if meta.get('schema') != SCHEMA:
            raise DatasetError(f'{self.folder / META} has schema {meta.get("schema")!r}, not '
                               f'{SCHEMA}; not appending to it')
        shape = (int(meta.get('rings', -1)), int(meta.get('columns', -1)))
        if shape != (self.rings, self.columns):
            raise DatasetError(f'sequence {self.sequence!r} has {shape[0]} x {shape[1]} cells, '
                               f'the new scans {self.rings} x {self.columns}: not appending')
        if tuple(meta.get('layers', ())) != self.layers:
            raise DatasetError(f'sequence {self.sequence!r} has layers {meta.get("layers")}, '
                               f'the new scans {list(self.layers)}: not appending')
        scans_path = self.folder / SCANS
        rows = (np.load(scans_path, allow_pickle=False) if scans_path.exists()
                else np.zeros(0, dtype=SCAN_DTYPE))
        if rows.dtype != SCAN_DTYPE:
            raise DatasetError(f'{scans_path} is not a scan table of {SCHEMA}')
        self._rows = rows
        self._committed = len(rows)
        self._shard, self._filled = divmod(len(rows), SHARD_SCANS)
        if self._filled:
            # Continue the short last shard: its first rows are the committed ones.
            for layer, buffer in (('range', self._range), ('intensity', self._intensity)):
                if buffer is None:
                    continue
                stored = np.load(self.folder / shard_name(layer, self._shard), mmap_mode='r',
                                 allow_pickle=False)
                if stored.shape[0] < self._filled:
                    raise DatasetError(f'{shard_name(layer, self._shard)} has {stored.shape[0]} '
                                       f'scans where scans.npy gives it {self._filled}')
                buffer[:self._filled] = stored[:self._filled]
        self.previous_meta = meta
        self.meta = {**meta, **self.meta}

    # --- writing ---------------------------------------------------------------------------

    @property
    def scans(self) -> int:
        """The scans added so far (committed or not), earlier runs included."""
        return self._shard * SHARD_SCANS + self._filled

    @property
    def committed(self) -> int:
        """The scans the last queued commit holds."""
        return self._committed

    @property
    def failed(self) -> bool:
        """Whether a write failed: nothing more is written."""
        return self._error is not None

    @property
    def full(self) -> bool:
        """Whether the open shard holds 256 scans: the next :meth:`commit` closes it."""
        return self._filled == SHARD_SCANS

    def add(self, range_value: np.ndarray, intensity: np.ndarray | None = None) -> int:
        """
        Add one scan's layers to the open shard; return its index in the sequence.

        :raises DatasetError: when the open shard is full (commit first), for a wrong shape, or
            after a write failed.
        """
        self._raise_error()
        if self.full:
            raise DatasetError('the open shard is full: commit() before adding')
        self._range[self._filled] = range_value
        if self._intensity is not None:
            self._intensity[self._filled] = 0 if intensity is None else intensity
        self._filled += 1
        return self.scans - 1

    def commit(self, rows: np.ndarray, *, meta: dict[str, Any] | None = None,
               body_mask: np.ndarray | None = None) -> None:
        """
        Queue the open shard, the scan table and meta.json for writing.

        :param rows: the whole scan table, one row per scan added (earlier runs included).
        :param meta: keys of meta.json to update (calibration, counts, ...).
        :param body_mask: the body mask to write, bool (rings, columns).
        """
        self._raise_error()
        rows = np.asarray(rows, dtype=SCAN_DTYPE)
        if len(rows) != self.scans:
            raise DatasetError(f'a scan table of {len(rows)} rows for {self.scans} scans')
        if meta:
            self.meta.update(meta)
        document = {**self.meta, 'schema': SCHEMA, 'set': self.set_folder.name,
                    'sequence': self.sequence, 'split': self.split, 'rings': self.rings,
                    'columns': self.columns, 'layers': list(self.layers),
                    'shard_scans': SHARD_SCANS,
                    'counts': {**self.meta.get('counts', {}), 'scans': int(len(rows)),
                               'shards': -(-len(rows) // SHARD_SCANS)}}
        layers = {}
        if self._filled:
            full = self.full
            for layer, buffer in (('range', self._range), ('intensity', self._intensity)):
                if buffer is not None:
                    layers[layer] = buffer if full else buffer[:self._filled].copy()
        job = (self._shard, layers, rows.copy(), document,
               None if body_mask is None else np.asarray(body_mask, dtype=bool).copy())
        self._jobs.put(job)
        self._committed = len(rows)
        if self.full:
            # The job owns the full buffers now; take written ones back, or new ones.
            self._range = self._buffer(np.uint16)
            if self._intensity is not None:
                self._intensity = self._buffer(np.uint8)
            self._shard += 1
            self._filled = 0

    def _buffer(self, dtype: type) -> np.ndarray:
        with self._free_lock:
            for k, array in enumerate(self._free):
                if array.dtype == dtype:
                    return self._free.pop(k)
        return np.empty((SHARD_SCANS, self.rings, self.columns), dtype=dtype)

    def close(self, timeout_s: float | None = None) -> None:
        """
        Wait until every queued commit is written (commit the open shard first yourself).

        :raises DatasetError: when a write failed.
        """
        self._jobs.put(None)
        self._thread.join(timeout_s)
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise DatasetError(f'writing {self.folder} failed: {self._error}') from self._error

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if self._error is not None:
                continue
            try:
                self._write(*job)
            except Exception as exc:        # a full disk, a removed folder: report, stop writing
                self._error = exc
                if self._on_error is not None:
                    self._on_error(exc)

    def _write(self, shard: int, layers: dict[str, np.ndarray], rows: np.ndarray,
               document: dict[str, Any], body_mask: np.ndarray | None) -> None:
        for layer, array in layers.items():
            write_npy_atomic(self.folder / shard_name(layer, shard), array)
        if layers and len(next(iter(layers.values()))) == SHARD_SCANS:
            with self._free_lock:
                self._free.extend(layers.values())
        if body_mask is not None:
            write_npy_atomic(self.folder / BODY_MASK, body_mask)
        write_npy_atomic(self.folder / SCANS, rows)
        write_json_atomic(self.folder / META, document)
        update_index(self.set_folder, self.sequence, {
            'split': self.split, 'scans': int(len(rows)), 'rings': self.rings,
            'columns': self.columns, 'layers': list(self.layers),
            'source': document.get('source', {}).get('kind'),
            'simulated': document.get('simulated')})
