# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A Foxglove WebSocket protocol client on ``websockets``, as the tests and benchmarks use it.

It speaks the subprotocol ``foxglove.sdk.v1`` (JSON text for control, binary for data):
``advertise``/``unadvertise`` of channels, ``advertiseServices``, ``subscribe``/``unsubscribe``,
message data (opcode 0x01: uint32 subscription id, uint64 log time, payload), time (0x02:
uint64), service call requests (client opcode 0x02: uint32 service id, uint32 call id, uint32
encoding length, encoding, payload) and their responses (server opcode 0x03, same layout) or
``serviceCallFailure``. A reader thread keeps what arrives; waits use a condition variable.

Run as a script (``python foxglove_client.py URL TOPIC...``), it subscribes to the topics
and prints one line per second with the message count per topic:
the client a test pauses with SIGSTOP.
"""

import collections
from collections.abc import Callable
from collections.abc import Sequence
import contextlib
import json
import struct
import sys
import threading
import time
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

SUBPROTOCOL = 'foxglove.sdk.v1'
MESSAGE_DATA = 0x01
TIME = 0x02
SERVICE_CALL_RESPONSE = 0x03
SERVICE_CALL_REQUEST = 0x02
_DATA_HEADER = struct.Struct('<BIQ')
_CALL_HEADER = struct.Struct('<BIII')


class FoxgloveClient:
    """
    One connection to a Foxglove WebSocket server.

    :param keep: keep every payload (``messages``); otherwise only counts and the last one.
    """

    def __init__(self, url: str, *, keep: bool = True, open_timeout_s: float = 10.0) -> None:
        self._stack = contextlib.ExitStack()
        self.connection = self._stack.enter_context(connect(
            url, subprotocols=[SUBPROTOCOL], open_timeout=open_timeout_s, max_size=None))
        self.keep = keep
        self.server_info: dict | None = None
        self.channels: dict[int, dict] = {}
        self.services: dict[str, dict] = {}
        self.messages: dict[str, list[tuple[int, bytes]]] = collections.defaultdict(list)
        self.counts: collections.Counter = collections.Counter()
        self.last: dict[str, bytes] = {}
        self.times: list[int] = []
        self.statuses: list[dict] = []
        self.responses: dict[int, tuple[str, bytes | str]] = {}
        self.closed: BaseException | None = None
        self._subscriptions: dict[int, str] = {}
        self._next_id = 1
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name='foxglove-client', daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for frame in self.connection:
                with self._changed:
                    if isinstance(frame, str):
                        self._on_text(json.loads(frame))
                    else:
                        self._on_binary(frame)
                    self._changed.notify_all()
        except ConnectionClosed as exc:
            self.closed = exc
        finally:
            with self._changed:
                if self.closed is None:
                    self.closed = EOFError('connection ended')
                self._changed.notify_all()

    def _on_text(self, message: dict) -> None:
        op = message.get('op')
        if op == 'serverInfo':
            self.server_info = message
        elif op == 'advertise':
            for channel in message['channels']:
                self.channels[channel['id']] = channel
        elif op == 'unadvertise':
            for channel_id in message['channelIds']:
                self.channels.pop(channel_id, None)
        elif op == 'advertiseServices':
            for service in message['services']:
                self.services[service['name']] = service
        elif op == 'unadvertiseServices':
            gone = set(message['serviceIds'])
            self.services = {name: service for name, service in self.services.items()
                             if service['id'] not in gone}
        elif op == 'serviceCallFailure':
            self.responses[message['callId']] = ('failure', message['message'])
        elif op == 'status':
            self.statuses.append(message)

    def _on_binary(self, frame: bytes) -> None:
        opcode = frame[0]
        if opcode == MESSAGE_DATA:
            _, subscription_id, log_time = _DATA_HEADER.unpack_from(frame)
            topic = self._subscriptions.get(subscription_id)
            if topic is None:
                return
            payload = frame[_DATA_HEADER.size:]
            self.counts[topic] += 1
            self.last[topic] = payload
            if self.keep:
                self.messages[topic].append((log_time, payload))
        elif opcode == TIME:
            self.times.append(struct.unpack_from('<Q', frame, 1)[0])
        elif opcode == SERVICE_CALL_RESPONSE:
            _, _, call_id, length = _CALL_HEADER.unpack_from(frame)
            start = _CALL_HEADER.size + length
            self.responses[call_id] = (frame[_CALL_HEADER.size:start].decode(), frame[start:])

    def wait(self, predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
        """Wait until ``predicate()`` (called under the lock) is true; return its value."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.closed is not None:
                    raise AssertionError(f'timed out waiting for {what} (received: '
                                         f'{dict(self.counts)}; closed: {self.closed})')
                self._changed.wait(remaining)

    def channel(self, topic: str, timeout_s: float = 20.0) -> dict:
        """Return the advertised channel of a topic, waiting for it."""
        return self.wait(lambda: next((channel for channel in self.channels.values()
                                       if channel['topic'] == topic), None),
                         timeout_s, f'the channel {topic}')

    def subscribe(self, *topics: str, timeout_s: float = 20.0) -> list[int]:
        """Subscribe to the channels of topics; return the subscription ids."""
        subscriptions = []
        for topic in topics:
            channel = self.channel(topic, timeout_s)
            with self._changed:
                subscription_id = self._next_id
                self._next_id += 1
                self._subscriptions[subscription_id] = topic
            subscriptions.append({'id': subscription_id, 'channelId': channel['id']})
        self.send_json({'op': 'subscribe', 'subscriptions': subscriptions})
        return [subscription['id'] for subscription in subscriptions]

    def unsubscribe(self, *subscription_ids: int) -> None:
        """End subscriptions."""
        self.send_json({'op': 'unsubscribe', 'subscriptionIds': list(subscription_ids)})

    def call(self, name: str, payload: bytes, timeout_s: float = 60.0) -> tuple[str, Any]:
        """Call a service with a CDR request: ('cdr', response bytes) or ('failure', text)."""
        service = self.wait(lambda: self.services.get(name), timeout_s, f'the service {name}')
        with self._changed:
            call_id = self._next_id
            self._next_id += 1
        encoding = b'cdr'
        self.connection.send(_CALL_HEADER.pack(SERVICE_CALL_REQUEST, service['id'], call_id,
                                               len(encoding)) + encoding + payload)
        return self.wait(lambda: self.responses.get(call_id), timeout_s, f'the answer of {name}')

    def send_json(self, message: dict) -> None:
        """Send a control message."""
        self.connection.send(json.dumps(message))

    def count(self, topic: str) -> int:
        """Return how many messages of a topic arrived."""
        with self._changed:
            return self.counts[topic]

    def close(self) -> None:
        """Close the connection and wait for the reader."""
        self._stack.close()
        self._reader.join(timeout=10.0)


def wait_for_channels(url: str, topics: Sequence[str], timeout_s: float = 30.0) -> None:
    """
    Connect once and wait until the server advertises channels of these topics.

    A client then connects to a server whose channels exist, as a user opens Foxglove beside
    a running session. foxglove-sdk 0.30.3 queues the advertisement of a channel made while a
    client is connected before it records the channel for that client: a subscribe sent at
    once can meet "unknown channel". The channels a client finds on connecting are recorded
    before anything is sent to it.
    """
    client = FoxgloveClient(url, keep=False)
    try:
        for topic in topics:
            client.channel(topic, timeout_s)
    finally:
        client.close()


def main(argv: list[str]) -> int:
    """Subscribe to topics and print the counts once a second (the test's paused client)."""
    url, topics = argv[0], argv[1:]
    wait_for_channels(url, topics)
    client = FoxgloveClient(url, keep=False)
    client.subscribe(*topics)
    print('subscribed', flush=True)
    while client.closed is None:
        time.sleep(1.0)
        print(json.dumps(dict(client.counts)), flush=True)
    return 0


if __name__ == '__main__':
    raise SystemExit(main(sys.argv[1:]))
