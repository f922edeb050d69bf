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

"""Socket doubles for the frame reader's tests: bytes served in awkward chunks."""


class ChunkedSocket:
    """A socket double that serves bytes in chunks of given sizes, then end of stream."""

    def __init__(self, data: bytes, chunks: list[int] | int = 1 << 30) -> None:
        self._data = memoryview(data)
        self._chunks = chunks if isinstance(chunks, list) else [chunks]
        self._calls = 0
        self.position = 0

    @property
    def calls(self) -> int:
        """The recv_into calls so far."""
        return self._calls

    def recv_into(self, view: memoryview, count: int) -> int:
        size = self._chunks[self._calls % len(self._chunks)]
        self._calls += 1
        size = max(0, min(size, count, len(self._data) - self.position))
        view[:size] = self._data[self.position:self.position + size]
        self.position += size
        return size
