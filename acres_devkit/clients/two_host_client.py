# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A client process on one of two hosts: a reader of every topic of a step, a stepper, or both.

``python two_host_client.py NODE_NAME [--read AGENT...] [--step]``

With ``--read`` it subscribes (reliable, keep-last 1000, raw) to /clock and each agent's topics
of a step and prints ``msg <topic> <received_ns> <stamp_ns> <taken_ns>`` per message: when DDS
received it (system clock, MessageInfo), its header stamp (every one of these types starts with
a stamp) and when this process took it (system clock). For a message sent in fragments the
reception stamp is the first fragment's on Fast DDS 3.x and the last one's on 2.x; the time
taken means the same on both. With ``--step`` it serves its standard input: a line ``service
N`` or ``action N`` steps N times through ``step_simulation`` or ``simulate_steps`` and prints
``answer {"result": ..., "message": ..., "at_ns": ..., "wait_s": ...}`` once it has taken what
its readers hold, as a lockstep client reads a step's messages after the answer: a message
taken before ``at_ns`` was there when the answer came. It prints ``ready`` once every reader
has a publisher and the service and action server are there. It stops on SIGINT, SIGTERM or the
end of its input.
"""

import argparse
import json
import queue
import signal
import sys
import threading
import time

from lockstep_subscriber import step_topics
from lockstep_subscriber import take_waiting
import rclpy
from rclpy.action import ActionClient
from rclpy.executors import ExternalShutdownException
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sensor_msgs.msg import CompressedImage
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.srv import StepSimulation

from acres_bridge.conversions.cdr import time_nanoseconds

POLL_S = 0.01


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('name')
    parser.add_argument('--read', nargs='*', default=None, metavar='AGENT')
    parser.add_argument('--step', action='store_true')
    parser.add_argument('--compressed', action='store_true',
                        help='read camera/image_raw/compressed instead of camera/image_raw')
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: rclpy.try_shutdown())
    rclpy.init()
    node = rclpy.create_node(args.name)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    write = threading.Lock()

    def say(line: str) -> None:
        with write:
            sys.stdout.write(line + '\n')
            sys.stdout.flush()

    def record(topic: str):
        def on_message(message: bytes, info) -> None:
            taken_ns = time.time_ns()
            say(f'msg {topic} {info["received_timestamp"]} {time_nanoseconds(message)} '
                f'{taken_ns}')
        return on_message

    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    topics = step_topics(args.read) if args.read else {}
    if args.compressed:
        topics = {(f'{topic}/compressed' if topic.endswith('/camera/image_raw') else topic):
                  (CompressedImage if topic.endswith('/camera/image_raw') else kind)
                  for topic, kind in topics.items()}
    readers = [node.create_subscription(kind, topic, record(topic), qos, raw=True)
               for topic, kind in topics.items()]
    service = node.create_client(StepSimulation, '/step_simulation') if args.step else None
    action = ActionClient(node, SimulateSteps, '/simulate_steps') if args.step else None
    requests: queue.Queue = queue.Queue()

    def ready() -> bool:
        if not all(reader.get_publisher_count() for reader in readers):
            return False
        return service is None or (service.service_is_ready() and action.server_is_ready())

    def answer(started: float, result) -> None:
        take_waiting(readers)
        say('answer ' + json.dumps({'result': result.result, 'message': result.error_message,
                                    'at_ns': time.time_ns(),
                                    'wait_s': time.monotonic() - started}))

    def step(how: str, steps: int) -> None:
        started = time.monotonic()
        if how == 'service':
            future = service.call_async(StepSimulation.Request(steps=steps))
            future.add_done_callback(lambda done: answer(started, done.result().result))
            return

        def accepted(goal) -> None:
            goal.result().get_result_async().add_done_callback(
                lambda done: answer(started, done.result().result.result))
        action.send_goal_async(SimulateSteps.Goal(steps=steps)).add_done_callback(accepted)

    announced = False

    def tick() -> None:
        nonlocal announced
        if not announced and ready():
            announced = True
            say('ready')
        while not requests.empty():
            how, steps = requests.get()
            step(how, steps)

    def read_input() -> None:
        for line in sys.stdin:
            how, _, steps = line.strip().partition(' ')
            if how in ('service', 'action') and steps.isdigit():
                requests.put((how, int(steps)))

    node.create_timer(POLL_S, tick)
    if args.step:
        threading.Thread(target=read_input, name='client-input', daemon=True).start()
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if action is not None:
            action.destroy()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
