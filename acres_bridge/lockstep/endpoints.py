# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The readers of a step's topics: who they are, whether the writers matched them, and acked.

* :func:`known_readers` is the :data:`ReaderSet` a graph knows on the topics of a step;
  :func:`reader_label` names a reader by its node, or by its GID while the node is unknown.
* :func:`unmatched_readers` and :func:`wait_for_matches` say which readers the writers have
  not matched yet (discovery can finish on the reader's side first); a :class:`MatchMemo`
  spares them the graph's endpoint lists while nothing changed since every reader matched.
* :func:`wait_for_acks` waits until every reliable reader acknowledged the writers' samples.

The waits block: lockstep/coordinator.py calls them on its ``lockstep-ack`` threads, never on an
executor's.
"""

from collections.abc import Callable
from collections.abc import Iterable
import threading
import time

from rclpy.duration import Duration
from rclpy.exceptions import InvalidHandle
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import qos_check_compatible
from rclpy.qos import QoSCompatibility
from rclpy.qos import ReliabilityPolicy
from rclpy.topic_endpoint_info import TopicEndpointInfo

# How often a stream looks at its writers' matches again while one is missing.
MATCH_POLL_S = 0.002
# Topics outside every stream's namespace that a step publishes.
SESSION_GLOBAL_TOPICS = ('/clock', '/tf')

# topic -> {reader endpoint GID: the reader's label}: the readers a step must reach.
ReaderSet = dict[str, dict[bytes, str]]


UNKNOWN_NODE_NAME = '_NODE_NAME_UNKNOWN_'


def unnamed_reader_label(gid: Iterable[int]) -> str:
    """Name a subscription whose node is unknown by its endpoint GID."""
    return 'unnamed reader ' + '.'.join(f'{byte:02x}' for byte in gid)


def reader_label(info: TopicEndpointInfo) -> str:
    """
    Name a subscription by its node's full name, or by its GID while the node is unknown.

    A node's name reaches other processes in a message of its own (ros_discovery_info), after
    its endpoints; a reader that stalls before that message got through stays unnamed here,
    and its GID is then what identifies it (``ros2 topic info --verbose`` shows the same).
    """
    if info.node_name == UNKNOWN_NODE_NAME:
        return unnamed_reader_label(info.endpoint_gid)
    return f"{info.node_namespace.rstrip('/')}/{info.node_name}"


def reliable_readers(node: Node, topic: str) -> tuple[str, ...]:
    """Return the names (see reader_label) of the reliable subscribers of ``topic``."""
    return tuple(sorted(reader_label(info) for info in node.get_subscriptions_info_by_topic(topic)
                        if info.qos_profile.reliability == ReliabilityPolicy.RELIABLE))


def in_session(topic: str, namespaces: Iterable[str]) -> bool:
    """Whether a step of streams in ``namespaces`` publishes on ``topic``."""
    return topic in SESSION_GLOBAL_TOPICS or any(
        topic.startswith(namespace.rstrip('/') + '/') for namespace in namespaces)


def known_readers(node: Node, namespaces: Iterable[str]) -> ReaderSet:
    """
    Return the readers that ``node``'s graph knows on the topics of a step of these streams.

    Every reader counts, of any reliability: a writer that has not matched a best-effort
    reader does not send it the step either.
    """
    namespaces = tuple(namespaces)
    readers: ReaderSet = {}
    for topic, _ in node.get_topic_names_and_types():
        if in_session(topic, namespaces):
            found = {bytes(info.endpoint_gid): reader_label(info)
                     for info in node.get_subscriptions_info_by_topic(topic)}
            if found:
                readers[topic] = found
    return readers


def type_name(message_type: type) -> str:
    """Return a message class's ROS type name (``sensor_msgs/msg/Imu``)."""
    return f'{message_type.__module__.split(".")[0]}/msg/{message_type.__name__}'


def _compatible(publisher: Publisher, info: TopicEndpointInfo) -> bool:
    """
    Whether the publisher can match the reader.

    Not a reader of another type, a transient-local reader of a volatile writer or a reliable
    one of a best-effort writer: DDS never matches those.
    """
    if info.topic_type != type_name(publisher.msg_type):
        return False
    compatibility, _ = qos_check_compatible(publisher.qos_profile, info.qos_profile)
    return compatibility != QoSCompatibility.ERROR


class MatchMemo:
    """
    The topics whose writer had matched every reader of the graph at the last full look.

    A lockstep step looks twice at every writer's matches (before the step is sent and before
    its acknowledgement wait); the graph's endpoint list of a topic costs a tenth of a
    millisecond of Python per writer. While the graph's reader count of the topic and the
    writer's match count are those of the last look that found every reader matched, and the
    readers asked for were all among them, the readers are taken to be the same ones: a reader
    that went lowers a count, one that came raises one.

    The gap: a reader that replaced another between two looks keeps both counts. When the
    process that received the request knows the new one, it is asked for and not among those
    of the last look, so the look is full. When only this stream's graph knows it yet, and the
    writer still counts the old reader as matched (its lease or its unmatch not yet
    processed), the memo passes and the step may be sent before the writer matched the new
    reader, which then misses what was published before its match. Telling them apart needs
    the readers' GIDs, the very list the memo spares, and rclpy offers no graph change counter
    to ask instead; it takes a reader leaving and another joining within one step's time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._matched: dict[str, tuple[frozenset[bytes], int, int]] = {}

    def still_matched(self, node: Node, topic: str, matched: int,
                      wanted: Iterable[bytes]) -> bool:
        """Whether the writer of ``topic`` still has every reader matched (see above)."""
        with self._lock:
            last = self._matched.get(topic)
        if last is None or matched != last[2]:
            return False
        known, count, _ = last
        return node.count_subscribers(topic) == count and known.issuperset(wanted)

    def remember(self, topic: str, known: frozenset[bytes], count: int, matched: int) -> None:
        with self._lock:
            self._matched[topic] = (known, count, matched)

    def forget(self, topic: str) -> None:
        with self._lock:
            self._matched.pop(topic, None)


def unmatched_readers(node: Node, publishers: Iterable[Publisher], readers: ReaderSet,
                      memo: MatchMemo | None = None) -> dict[str, tuple[str, ...]]:
    """
    Return topic -> readers that the publisher of that topic has not matched yet.

    A reader of ``readers`` that this process's graph does not know yet is unmatched by its
    label. rclpy gives a writer's match count, not its readers: while the count is below the
    compatible readers of the graph, every compatible reader is named, as DDS does not say
    which one is missing.
    """
    unmatched = {}
    for publisher in publishers:
        try:
            topic = publisher.topic_name
            matched = publisher.get_subscription_count()
        except InvalidHandle:   # destroyed meanwhile (its bridge went): nobody to match
            continue
        wanted = readers.get(topic, {})
        if memo is not None and memo.still_matched(node, topic, matched, wanted):
            continue
        infos = node.get_subscriptions_info_by_topic(topic)
        known = {bytes(info.endpoint_gid) for info in infos}
        missing = [label for gid, label in wanted.items() if gid not in known]
        compatible = [info for info in infos if _compatible(publisher, info)]
        if matched < len(compatible):
            missing.extend(reader_label(info) for info in compatible)
        if missing:
            unmatched[topic] = tuple(sorted(set(missing)))
        if memo is not None:
            if missing:
                memo.forget(topic)
            else:
                memo.remember(topic, frozenset(known), len(infos), matched)
    return unmatched


def wait_for_matches(node: Node, publishers: Callable[[], Iterable[Publisher]],
                     readers: ReaderSet, timeout_s: float,
                     memo: MatchMemo | None = None) -> dict[str, tuple[str, ...]]:
    """
    Block until the publishers have matched every reader they must (see unmatched_readers).

    It blocks, looking again every 2 ms while a match is missing: call it on a thread of its
    own, never an executor's. Matching is discovery's work, which goes on in Fast DDS's own
    threads; nothing here can hurry it.

    :return: topic -> readers still unmatched at the deadline (empty: all matched).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        unmatched = unmatched_readers(node, publishers(), readers, memo)
        if not unmatched or time.monotonic() >= deadline:
            return unmatched
        time.sleep(MATCH_POLL_S)


def wait_for_acks(node: Node, publishers: Iterable[Publisher],
                  timeout_s: float) -> dict[str, tuple[str, ...]]:
    """
    Block until every reliable reader acknowledged every sample of ``publishers``.

    One deadline for all. It blocks: call it on a thread of its own, never an executor's.

    :return: topic -> reliable readers, for each publisher still unacknowledged at the
        deadline (empty: all acknowledged).
    """
    deadline = time.monotonic() + timeout_s
    late = {}
    for publisher in publishers:
        remaining = max(0.0, deadline - time.monotonic())
        try:
            acked = publisher.wait_for_all_acked(Duration(nanoseconds=int(remaining * 1e9)))
            topic = publisher.topic_name
        except InvalidHandle:   # destroyed meanwhile (its bridge went): no reader to wait for
            continue
        if not acked:
            late[topic] = reliable_readers(node, topic)
    return late
