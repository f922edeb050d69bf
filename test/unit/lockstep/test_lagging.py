# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The bookkeeping of lagging topics (lockstep/lagging.py), with stand-ins for publishers."""

from rclpy.exceptions import InvalidHandle

from acres_bridge.lockstep.lagging import LaggingTopics


class Writer:
    """What LaggingTopics asks of a publisher: its topic (InvalidHandle once destroyed)."""

    def __init__(self, topic: str, destroyed: bool = False) -> None:
        self._topic = topic
        self._destroyed = destroyed

    @property
    def topic_name(self) -> str:
        if self._destroyed:
            raise InvalidHandle('destroyed')
        return self._topic


def test_a_late_topic_lags_until_it_is_caught_up():
    lagging = LaggingTopics(grace_s=0.01, probe_interval_s=60.0, probe_s=0.1)
    clock, cloud, gone = Writer('/clock'), Writer('/polaris/lidar/points'), Writer('/x', True)
    assert lagging.split([clock, cloud, gone]) == ([clock, cloud], [])
    lagging.update(5, late={'/polaris/lidar/points'}, behind=set(), caught_up=set())
    assert lagging.split([clock, cloud]) == ([clock], [cloud])
    lagging.update(6, late=set(), behind={'/polaris/lidar/points'}, caught_up=set())
    assert lagging.split([clock, cloud]) == ([clock], [cloud])
    lagging.update(7, late=set(), behind=set(), caught_up={'/polaris/lidar/points'})
    assert lagging.split([clock, cloud]) == ([clock, cloud], [])


def test_a_lagging_topic_gets_the_grace_each_step_and_the_probe_once_an_interval():
    cloud = Writer('/polaris/lidar/points')
    lagging = LaggingTopics(grace_s=0.01, probe_interval_s=60.0, probe_s=0.1)
    lagging.update(5, late={'/polaris/lidar/points'}, behind=set(), caught_up=set())
    # The step whose wait ran out counts as the last probe: the next minute, the grace.
    assert lagging.probe_s([cloud], limit_s=5.0) == 0.01
    assert lagging.probe_s([], limit_s=5.0) == 0.01
    every_step = LaggingTopics(grace_s=0.01, probe_interval_s=0.0, probe_s=0.1)
    every_step.update(5, late={'/polaris/lidar/points'}, behind=set(), caught_up=set())
    assert every_step.probe_s([cloud], limit_s=5.0) == 0.1
    assert every_step.probe_s([cloud], limit_s=0.05) == 0.05     # never past the deadline
