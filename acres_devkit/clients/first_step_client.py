# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A new lockstep client in a process of its own: it steps once, as soon as a client can.

``python first_step_client.py service|action STEPS EXPECTED_JSON AGENT...`` subscribes
(reliable, keep-last 1000, raw) to every topic of a step of these agents, waits only for the
``step_simulation`` service, the ``simulate_steps`` action server and its own readers to see a
publisher each, then steps once. It then waits, at most 10 s, for the messages that the JSON
object ``EXPECTED_JSON`` (topic -> count) names, and prints one JSON line: the answer's result
code and message, and per topic how many messages its readers held when the answer arrived
(``at_answer``) and in all (``total``). When the answer arrives it takes what its readers hold,
as a lockstep client reads a step's messages after the answer; DDS's reception stamp would not
do, as Fast DDS 3.x stamps a message sent in fragments when its first fragment arrives.
"""

import json
import sys
import threading
import time

from lockstep_subscriber import step_topics
from lockstep_subscriber import take_waiting
import rclpy
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.srv import StepSimulation

WAIT_S = 30.0
SPIN_S = 0.01
ARRIVAL_S = 10.0


def main(argv: list[str]) -> int:
    how, steps, expected, *agents = argv
    expected = json.loads(expected)
    rclpy.init()
    node = rclpy.create_node('first_step_client')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    lock = threading.Lock()
    received: dict[str, list[int]] = {topic: [] for topic in step_topics(agents)}

    def record(topic: str):
        def on_message(message: bytes, info) -> None:
            taken_ns = time.time_ns()
            with lock:
                received[topic].append(taken_ns)
        return on_message

    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    readers = [node.create_subscription(kind, topic, record(topic), qos, raw=True)
               for topic, kind in step_topics(agents).items()]
    service = node.create_client(StepSimulation, '/step_simulation')
    action = ActionClient(node, SimulateSteps, '/simulate_steps')

    def spin_until(condition, what: str, timeout_s: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f'no {what} within {timeout_s:g} s')
            executor.spin_once(timeout_sec=SPIN_S)

    try:
        if not service.wait_for_service(timeout_sec=WAIT_S):
            raise TimeoutError('no step_simulation service')
        if not action.wait_for_server(timeout_sec=WAIT_S):
            raise TimeoutError('no simulate_steps action server')
        spin_until(lambda: all(reader.get_publisher_count() for reader in readers),
                   'publisher for every reader')
        answered: dict[str, object] = {}

        def answer(result) -> None:
            # A message taken before the answer's time was there when the answer came.
            take_waiting(readers)
            answered.setdefault('at_ns', time.time_ns())
            answered['result'] = result

        if how == 'service':
            request = StepSimulation.Request(steps=int(steps))
            future = service.call_async(request)
            future.add_done_callback(lambda done: answer(done.result().result))
        else:
            goal = action.send_goal_async(SimulateSteps.Goal(steps=int(steps)))
            spin_until(goal.done, 'goal response')
            result = goal.result().get_result_async()
            result.add_done_callback(lambda done: answer(done.result().result.result))
        spin_until(lambda: 'result' in answered, 'answer', 2 * WAIT_S)

        def arrived() -> bool:
            with lock:
                return all(len(received[topic]) >= count for topic, count in expected.items())
        try:
            spin_until(arrived, 'expected messages', ARRIVAL_S)
        except TimeoutError:
            pass        # what is missing is in the report
        result = answered['result']
        with lock:
            report = {'result': result.result, 'message': result.error_message,
                      'at_answer': {topic: sum(1 for t in times if t <= answered['at_ns'])
                                    for topic, times in received.items()},
                      'total': {topic: len(times) for topic, times in received.items()}}
        print(json.dumps(report), flush=True)
        return 0
    except TimeoutError as exc:
        print(json.dumps({'error': str(exc)}), flush=True)
        return 1
    finally:
        action.destroy()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
