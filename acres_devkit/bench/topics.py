# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What the sensor benchmark publishes and reads: topics, subscriber variants, stamp keys.

A message is known by the key of its header stamp (microseconds) on both sides, the sender's
records and the subscriber's.
"""

from collections.abc import Mapping
from typing import Any

from acres_bridge.conversions.cdr import time_nanoseconds

NAMESPACE = '/polaris'
PHYSICS_HZ = 120
DEFAULT_RATES = (1.0, 10.0)
# stock: nothing in the environment (the bridge applies its own settings, the floor and the
# subscriber have Fast DDS as it ships); profile: the package's profile for every process.
DEFAULT_CONFIGS = ('stock', 'profile')
# play: the emulator plays at the rate; lockstep: 12-step requests paced at the rate, each
# ending with a step barrier.
DEFAULT_DRIVES = ('play', 'lockstep')
LOCKSTEP_STEPS = 12
DRAIN_TIMEOUT_S = 30.0
TWO_HOST_TOPICS = ('lidar/points', 'camera/image_raw', '/clock', 'ins/imu')
SUBSCRIBER_DEPTH = 1000
SUBSCRIBER_LARGE_DEPTH = 100
# The extra subscriptions of the small topics (reliability, depth); the plain topic name is
# the reliable depth-SUBSCRIBER_DEPTH one.
SUBSCRIBER_VARIANTS = (('reliable', 10), ('reliable', 1), ('best_effort', 1000),
                       ('best_effort', 10), ('best_effort', 1))
# frame type (TSS1) -> the topics the bridge publishes for each frame of it
FRAME_TOPICS = {
    2: ('/clock',),
    3: ('ins/fix', 'ins/imu', 'ins/odometry', 'ground_truth/odometry'),
    4: ('lidar/points',),
    5: ('camera/image_raw', 'camera/camera_info'),
    6: ('step_barrier',),
}
TOPIC_FRAME = {topic: frame_type for frame_type, topics in FRAME_TOPICS.items()
               for topic in topics}
TOPICS = tuple(TOPIC_FRAME)
FRAME_KINDS = {2: 'clock', 3: 'ins', 4: 'lidar', 5: 'camera', 6: 'barrier'}
LARGE_TOPICS = frozenset(('lidar/points', 'camera/image_raw'))
# The topics of the issue-11 latency target, measured for every subscriber variant.
SMALL_TOPICS = ('/clock', 'ins/fix', 'ins/imu', 'ins/odometry', 'ground_truth/odometry',
                'step_barrier')
# The floor beside the bridge (--floor-beside): a plain publisher of clock, INS and barrier
# in the bridge's own run, under a namespace of its own, read by the same subscriber, so the
# two share the run's load (the emulator's CPU above all). Its records are labelled
# ``floor:<label>``.
BESIDE_NAMESPACE = '/floor'
BESIDE_LABEL = 'floor:'
BESIDE_FRAMES = (2, 3, 6)
# The payload bytes of one Polaris cloud and image (1800 x 32 points of 16 bytes, 896 x 512
# BGR pixels): what "per MB" counts, the same for the bridge (received) and the floor (sent).
PAYLOAD_BYTES = {'lidar/points': 1800 * 32 * 16, 'camera/image_raw': 896 * 512 * 3}


def stamp_key(stamp_s: float) -> int:
    """Return the key of a stamp: microseconds, robust to the float-to-nanosecond rounding."""
    return round(stamp_s * 1e6)


def cdr_stamp_key(data: bytes) -> int:
    """Return the key of the first Time in a serialised message (Header.stamp, Clock.clock)."""
    sec, nanosec = divmod(time_nanoseconds(data), 1_000_000_000)
    return sec * 1_000_000 + round(nanosec / 1000)


def sent_key(key: int, sent: Mapping[int, Any]) -> int | None:
    """
    Return the key of ``sent`` that a received stamp key stands for, None for none.

    The same key, or one off: a stamp near a half microsecond may round either way on the
    sending and the receiving side.
    """
    return next((candidate for candidate in (key, key - 1, key + 1) if candidate in sent), None)


def full_topic(topic: str) -> str:
    return topic if topic.startswith('/') else f'{NAMESPACE}/{topic}'


def variant_label(topic: str, reliability: str, depth: int) -> str:
    """Return the name of one subscription in the records: ``/clock@be10`` and so on."""
    return f"{topic}@{'r' if reliability == 'reliable' else 'be'}{depth}"


def label_topic(label: str) -> str:
    """Return the topic of a record label (the label itself for the default subscription)."""
    return label.split('@')[0]


def beside_topic(topic: str) -> str:
    """Return where the floor beside the bridge publishes a topic (``/floor/clock``)."""
    return f"{BESIDE_NAMESPACE}/{topic.lstrip('/')}"


def subscriptions(variants: bool, beside: bool = False) -> dict[str, tuple[str, str, int]]:
    """Return label -> (topic, reliability, depth) of the measuring subscriber."""
    out = {topic: (topic, 'reliable',
                   SUBSCRIBER_LARGE_DEPTH if topic in LARGE_TOPICS else SUBSCRIBER_DEPTH)
           for topic in TOPICS}
    if variants:
        for topic in SMALL_TOPICS:
            for reliability, depth in SUBSCRIBER_VARIANTS:
                out[variant_label(topic, reliability, depth)] = (topic, reliability, depth)
    if beside:
        out.update({BESIDE_LABEL + label: spec for label, spec in list(out.items())
                    if spec[0] in SMALL_TOPICS})
    return out


def subscribed_topic(label: str, topic: str) -> str:
    """Return the full topic name a subscriber label reads."""
    return beside_topic(topic) if label.startswith(BESIDE_LABEL) else full_topic(topic)


def split_beside(received: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a subscriber's records into the bridge's and the floor beside's (unlabelled)."""
    own = {label: log for label, log in received.items() if not label.startswith(BESIDE_LABEL)}
    beside = {label[len(BESIDE_LABEL):]: log for label, log in received.items()
              if label.startswith(BESIDE_LABEL)}
    return own, beside


def qos_profile(depth: int, reliability: str = 'reliable') -> Any:
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE if reliability == 'reliable'
                      else ReliabilityPolicy.BEST_EFFORT)


def message_types() -> dict[str, type]:
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import CameraInfo
    from sensor_msgs.msg import Image
    from sensor_msgs.msg import Imu
    from sensor_msgs.msg import NavSatFix
    from sensor_msgs.msg import PointCloud2
    from acres_interfaces.msg import StepBarrier
    return {'/clock': Clock, 'ins/fix': NavSatFix, 'ins/imu': Imu, 'ins/odometry': Odometry,
            'ground_truth/odometry': Odometry, 'lidar/points': PointCloud2,
            'camera/image_raw': Image, 'camera/camera_info': CameraInfo,
            'step_barrier': StepBarrier}


def label_order(label: str) -> tuple[int, int]:
    """Sort record labels: topics in TOPICS order, each topic's default subscription first."""
    topic, _, variant = label.partition('@')
    variants = [variant_label(topic, *item).partition('@')[2] for item in SUBSCRIBER_VARIANTS]
    return TOPICS.index(topic), variants.index(variant) + 1 if variant else 0
