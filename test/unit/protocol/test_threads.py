# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Tests of the native thread names that top, perf and gdb show."""

import pathlib
import sys
import threading

import pytest

from acres_bridge.protocol.threads import name_native_thread


def _native_name_in_thread(name: str) -> tuple[bool, str]:
    result: dict[str, object] = {}

    def run() -> None:
        result['set'] = name_native_thread(name)
        comm = pathlib.Path(f'/proc/self/task/{threading.get_native_id()}/comm')
        result['comm'] = comm.read_text(encoding='utf-8').strip()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join(10.0)
    return bool(result['set']), str(result['comm'])


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='names come from /proc')
def test_a_thread_is_named_in_the_operating_system():
    assert _native_name_in_thread('sensor-tx:x') == (True, 'sensor-tx:x')


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='names come from /proc')
def test_a_long_name_keeps_its_first_15_bytes():
    assert _native_name_in_thread('sensor-rx:polaris') == (True, 'sensor-rx:polar')


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='names come from /proc')
def test_naming_a_thread_leaves_the_process_name():
    before = pathlib.Path('/proc/self/comm').read_text(encoding='utf-8')
    _native_name_in_thread('sensor-rx:other')
    assert pathlib.Path('/proc/self/comm').read_text(encoding='utf-8') == before
