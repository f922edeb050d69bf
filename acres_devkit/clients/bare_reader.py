# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The cheapest rclpy reader of a set of topics: the floor of what the Foxglove view costs.

    python acres_devkit/clients/bare_reader.py TOPIC [TOPIC ...]

It subscribes to each topic once the topic has a publisher, serialised and with the QoS the
view would choose (:func:`acres_bridge.foxglove.view.publishers_qos`), prints
``subscribed`` when every topic has a matched reader, then takes what every reader holds each
10 ms as the view's reader thread does
(:data:`acres_bridge.foxglove.subscriptions.TAKE_PERIOD_S`, the view's heap settings), and does
nothing with it.
tools/bench_foxglove_view.py runs it in place of the view (side ``reader``) to measure, in the
same hour, what taking every topic from ROS in Python costs without sending anything anywhere.
On SIGINT it takes what its readers hold, prints how many messages of each topic it took (one
JSON line) and ends.
"""

import json
import signal
import sys
import threading
import time


def main(argv: list[str]) -> int:
    """Subscribe, take until SIGINT, print the counts."""
    import rclpy

    from acres_bridge.foxglove.subscriptions import TAKE_PERIOD_S
    from acres_bridge.foxglove.view import interface_type
    from acres_bridge.foxglove.view import publishers_qos
    from acres_bridge.runtime.heap import keep_freed_buffers

    keep_freed_buffers()    # as the view: no page faults for every copy of a cloud
    topics = argv
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node('bare_reader')
    readers = {}
    while len(readers) < len(topics) and not stop.is_set():
        types = dict(node.get_topic_names_and_types())
        for topic in topics:
            infos = node.get_publishers_info_by_topic(topic)
            if topic in readers or topic not in types or not infos:
                continue
            type_name = types[topic][0]
            readers[topic] = node.create_subscription(
                interface_type(type_name), topic, lambda _: None,
                publishers_qos(infos, type_name), raw=True)
        stop.wait(0.1)
    while not stop.is_set() and any(
            reader.get_publisher_count() == 0 for reader in readers.values()):
        stop.wait(0.05)
    print('subscribed', flush=True)
    counts = dict.fromkeys(topics, 0)
    takes = [(topic, reader.handle, reader.msg_type) for topic, reader in readers.items()]

    def take_all() -> None:
        for topic, handle, message_type in takes:
            while handle.take_message(message_type, True) is not None:
                counts[topic] += 1

    while not stop.is_set():
        time.sleep(TAKE_PERIOD_S)
        take_all()
    take_all()      # what the readers hold at the stop
    print(json.dumps(counts), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main(sys.argv[1:]))
