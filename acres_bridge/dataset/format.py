# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The layout of acres-lidar-dataset-1 on disk, and atomic writes of its files.

::

    <root>/<set>/index.json                      the sequences of the set
    <root>/<set>/<sequence>/meta.json            source, identity, calibration, split, layers,
                                                 counts
    <root>/<set>/<sequence>/scans.npy            SCAN_DTYPE, one row per scan
    <root>/<set>/<sequence>/range-00000.npy      uint16 (scans, rings, columns), 2.5 mm steps,
                                                 0 = no return
    <root>/<set>/<sequence>/intensity-00000.npy  uint8 (scans, rings, columns), absent without
                                                 intensity
    <root>/<set>/<sequence>/body_mask.npy        bool (rings, columns)

A shard holds :data:`SHARD_SCANS` scans; only the last shard of a sequence may be shorter.
``scans.npy`` is the commit point: a shard file holds at least the rows that ``scans.npy``
gives it, and readers never look past them. Every file is written to a temporary name in the
same folder, flushed to disk and renamed over the old one, so a reader or a crash sees either
the old file or the new one, never a part.
"""

import contextlib
import fcntl
import json
import os
from pathlib import Path
import re
import tempfile
from typing import Any, Iterator

import numpy as np

SCHEMA = 'acres-lidar-dataset-1'
SHARD_SCANS = 256
RANGE_STEP_M = 0.0025
MAX_RANGE_VALUE = 65535
MAX_STORED_RANGE_M = MAX_RANGE_VALUE * RANGE_STEP_M      # 163.8375 m
LENS_CENTER_M = 0.035
SPLITS = ('train', 'val', 'test', 'guard', 'excluded', 'none')
DEFAULT_ROOT = Path('~/data/acres/lidar')
ROOT_VARIABLE = 'ACRES_DATA'
INDEX = 'index.json'
META = 'meta.json'
SCANS = 'scans.npy'
BODY_MASK = 'body_mask.npy'
LAYERS = ('range', 'intensity')

# pose_quality
QUALITY_NONE, QUALITY_DEGRADED, QUALITY_INS, QUALITY_RTK, QUALITY_TRUTH = range(5)
# flags
FLAG_GAP = 1

SCAN_DTYPE = np.dtype([
    ('t', '<f8'), ('stamp_ns', '<i8'),
    ('east', '<f8'), ('north', '<f8'), ('up', '<f8'),
    ('qw', '<f4'), ('qx', '<f4'), ('qy', '<f4'), ('qz', '<f4'),
    ('speed', '<f4'), ('lateral_speed', '<f4'),
    ('yaw_rate', '<f4'), ('pitch_rate', '<f4'), ('roll_rate', '<f4'),
    ('pose_quality', 'u1'), ('flags', 'u1'), ('dropped_columns', '<u2'),
    ('returns', '<u4'), ('body_returns', '<u4'), ('source_index', '<u4'),
])

_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')


class DatasetError(ValueError):
    """A data set, sequence or file that cannot be used as asked; the text says why."""


def data_root(root: str | os.PathLike | None = None) -> Path:
    """Return the data root: ``root``, else ``$ACRES_DATA``, else ``~/data/acres/lidar``."""
    if root is not None and str(root):
        return Path(root).expanduser()
    value = os.environ.get(ROOT_VARIABLE)
    return Path(value).expanduser() if value else DEFAULT_ROOT.expanduser()


def check_name(kind: str, name: str) -> str:
    """
    Return a set or sequence name that is safe as one folder name.

    :raises DatasetError: for an empty name, a path, or characters beyond ``A-Za-z0-9._-``.
    """
    if not isinstance(name, str) or not _NAME.match(name) or name in ('.', '..'):
        raise DatasetError(f'{kind} name {name!r} is not 1 to 128 of A-Z a-z 0-9 . _ - '
                           '(starting with a letter or digit)')
    return name


def check_split(split: str) -> str:
    """
    Return a split tag that is one of :data:`SPLITS`.

    :raises DatasetError: for another one.
    """
    if split not in SPLITS:
        raise DatasetError(f'split {split!r} is not one of {", ".join(SPLITS)}')
    return split


def shard_name(layer: str, shard: int) -> str:
    """Return the file name of a shard of a layer: ``range-00003.npy``."""
    return f'{layer}-{shard:05d}.npy'


def _file_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _file_mode()


def _replace(path: Path, write: Any) -> None:
    """Write a file through a temporary file in the same folder, fsync, rename."""
    handle, temporary = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    try:
        os.fchmod(handle, _FILE_MODE)       # mkstemp makes 0600; data files are the user's
        with os.fdopen(handle, 'wb') as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_npy_atomic(path: Path, array: np.ndarray) -> None:
    """Write an array as a .npy file that appears whole or not at all."""
    _replace(path, lambda stream: np.save(stream, np.ascontiguousarray(array),
                                          allow_pickle=False))


def write_json_atomic(path: Path, value: Any) -> None:
    """Write a JSON document that appears whole or not at all (NaN is written as null)."""
    text = json.dumps(_finite(value), indent=1, sort_keys=False, allow_nan=False) + '\n'
    _replace(path, lambda stream: stream.write(text.encode()))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    if isinstance(value, np.generic):
        return _finite(value.item())
    return value


def read_json(path: Path) -> Any:
    """
    Return the JSON document of a file.

    :raises DatasetError: when the file is missing or is not JSON.
    """
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise DatasetError(f'{path} does not exist') from exc
    except (OSError, ValueError) as exc:
        raise DatasetError(f'{path} cannot be read as JSON: {exc}') from exc


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on a set folder (``.lock``) while the index is rewritten."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / '.lock', 'a+b') as stream:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(stream.fileno(), fcntl.LOCK_UN)


def update_index(set_folder: Path, sequence: str, entry: dict[str, Any]) -> None:
    """
    Add or update one sequence of ``index.json`` under the set's lock.

    Several recorders (one per agent) share a set, so the read-modify-write is serialised.
    """
    with locked(set_folder):
        path = set_folder / INDEX
        index = read_json(path) if path.exists() else {
            'schema': SCHEMA, 'set': set_folder.name, 'sequences': {}}
        index.setdefault('sequences', {})[sequence] = entry
        write_json_atomic(path, index)
