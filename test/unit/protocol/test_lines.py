# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The JSON-lines framing and value checks of protocol/lines.py, fed awkwardly."""

import math

from acres_bridge.protocol.lines import is_int
from acres_bridge.protocol.lines import is_number
from acres_bridge.protocol.lines import LineSplitter


def test_lines_fed_one_byte_at_a_time_come_out_whole_and_in_order():
    splitter = LineSplitter()
    stream = b'{"id": 1}\n\n{"id": 2}\n{"partial'
    lines = [line for byte in stream for line in splitter.feed(bytes([byte]))]
    assert lines == [b'{"id": 1}', b'', b'{"id": 2}']
    assert splitter.pending == len(b'{"partial')


def test_several_lines_in_one_read_and_the_rest_in_the_next():
    splitter = LineSplitter()
    assert splitter.feed(b'a\nbb\nccc') == [b'a', b'bb']
    assert splitter.pending == 3
    assert splitter.feed(b'c\n') == [b'cccc']
    assert splitter.pending == 0
    assert splitter.feed(b'') == []


def test_a_long_line_without_a_newline_only_grows_pending():
    splitter = LineSplitter()
    for _ in range(64):
        assert splitter.feed(b'x' * 4096) == []
    assert splitter.pending == 64 * 4096
    [line] = splitter.feed(b'\n')
    assert len(line) == 64 * 4096


def test_json_value_checks_refuse_bools_and_non_finite_numbers():
    assert is_int(3) and is_int(-1) and is_int(1 << 70)
    assert not is_int(True) and not is_int(3.0) and not is_int('3') and not is_int(None)
    assert is_number(3) and is_number(-0.5)
    assert not is_number(False) and not is_number(math.nan) and not is_number(math.inf)
    assert not is_number('1.0') and not is_number([1.0])
