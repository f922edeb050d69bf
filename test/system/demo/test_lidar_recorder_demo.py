# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""``tools/demo --record-dataset DIR``: the demo records each vehicle into DIR/demo."""

import os
from pathlib import Path
import re
import subprocess
import sys

import numpy as np
import pytest
from support.paths import ROOT

from acres_bridge.dataset import LidarSet
from acres_devkit.environment import claim_domain_id

pytestmark = pytest.mark.ros


def test_the_demo_records_a_data_set_and_says_where(tmp_path: Path) -> None:
    data = tmp_path / 'data'
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    done = subprocess.run(
        [sys.executable, str(ROOT / 'tools' / 'demo.py'), '--duration', '12',
         '--out', str(tmp_path / 'out'), '--domain-id', str(claim_domain_id()),
         '--record-dataset', str(data), '--picture-period', '1', '--print-period', '5'],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    said = re.findall(r'demo: data set sequence (\S+): (\d+) scans', done.stdout)
    assert len(said) == 1, done.stdout[-2000:]
    folder, scans = Path(said[0][0]), int(said[0][1])
    assert folder.parent == data / 'demo' and folder.name.endswith('-polaris')
    sequence = LidarSet.open('demo', root=data)[folder.name]
    assert len(sequence) == scans > 20
    assert np.all(np.diff(sequence.scans['source_index'].astype(np.int64)) > 0)
    # A scan's pose comes from odometry after it: the scans the stop came before that
    # odometry have none, and only they (on a busy machine the recorder lags by a second).
    posed = np.isfinite(sequence.scans['east'])
    assert posed[:np.count_nonzero(posed)].all() and np.count_nonzero(posed) > 10, posed
    assert sequence.calibration.mount_xyz_m is not None
    log = (tmp_path / 'out' / 'recorder.log').read_text()
    assert f'{scans} scans in {folder}' in log
