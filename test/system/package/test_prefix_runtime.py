# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The ROS 2 runtime the set-up builds: real messages, services and actions over DDS."""

from array import array
import threading

import rclpy
from rclpy.action import ActionServer
from rclpy.action import CancelResponse
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sensor_msgs.msg import PointCloud2
from sensor_msgs.msg import PointField
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import GetSimulationState
from support.action_caller import ActionCaller

WAIT_S = 10.0


def _cloud(columns: int, rings: int) -> PointCloud2:
    cloud = PointCloud2()
    cloud.header.frame_id = 'lidar'
    cloud.height = columns
    cloud.width = rings
    cloud.fields = [PointField(name=name, offset=4 * index, datatype=PointField.FLOAT32, count=1)
                    for index, name in enumerate(('x', 'y', 'z', 'intensity'))]
    cloud.point_step = 16
    cloud.row_step = 16 * rings
    payload = array('B')
    payload.frombytes(bytes(range(256)) * (columns * rings * 16 // 256))
    cloud.data = payload
    return cloud


def test_a_point_cloud_crosses_the_graph_byte_for_byte(ros_context, spinning):
    publisher_node = spinning.add(rclpy.create_node('cloud_source', context=ros_context))
    subscriber_node = spinning.add(rclpy.create_node('cloud_sink', context=ros_context))
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
    received = []
    arrived = threading.Event()

    def on_cloud(message: PointCloud2) -> None:
        received.append(message)
        arrived.set()

    subscriber_node.create_subscription(PointCloud2, 'points', on_cloud, qos)
    publisher = publisher_node.create_publisher(PointCloud2, 'points', qos)
    sent = _cloud(1800, 32)
    for _ in range(int(WAIT_S / 0.1)):
        if publisher.get_subscription_count() > 0:
            break
        arrived.wait(0.1)
    publisher.publish(sent)
    assert arrived.wait(WAIT_S), 'no PointCloud2 arrived'
    cloud = received[0]
    assert (cloud.height, cloud.width, cloud.point_step) == (1800, 32, 16)
    assert [field.name for field in cloud.fields] == ['x', 'y', 'z', 'intensity']
    assert bytes(cloud.data) == bytes(sent.data)


def test_a_simulation_interfaces_service_answers(ros_context, spinning):
    server_node = spinning.add(rclpy.create_node('state_server', context=ros_context))
    client_node = spinning.add(rclpy.create_node('state_client', context=ros_context))

    def on_request(request, response):
        response.state.state = response.state.STATE_PAUSED
        response.result.result = Result.RESULT_OK
        return response

    server_node.create_service(GetSimulationState, 'get_simulation_state', on_request)
    client = client_node.create_client(GetSimulationState, 'get_simulation_state')
    assert client.wait_for_service(timeout_sec=WAIT_S)
    response = spinning.wait(client.call_async(GetSimulationState.Request()), WAIT_S)
    assert response.state.state == response.state.STATE_PAUSED
    assert response.result.result == Result.RESULT_OK


def test_the_simulate_steps_action_gives_feedback_and_a_result(ros_context, spinning):
    server_node = spinning.add(rclpy.create_node('steps_server', context=ros_context))
    first_feedback = threading.Event()

    def execute(goal_handle):
        steps = goal_handle.request.steps
        for completed in range(12, steps + 1, 12):
            feedback = SimulateSteps.Feedback()
            feedback.completed_steps = completed
            feedback.remaining_steps = steps - completed
            goal_handle.publish_feedback(feedback)
            # The feedback topic may not have matched the client yet: repeat the first
            # feedback until one arrived, so that the client's check has something to check.
            for _ in range(int(WAIT_S / 0.05) if completed == 12 else 0):
                if first_feedback.wait(0.05):
                    break
                goal_handle.publish_feedback(feedback)
        goal_handle.succeed()
        result = SimulateSteps.Result()
        result.result.result = Result.RESULT_OK
        return result

    server = ActionServer(server_node, SimulateSteps, 'simulate_steps', execute,
                          cancel_callback=lambda _: CancelResponse.REJECT)
    caller = ActionCaller(ros_context, SimulateSteps, 'simulate_steps', node_name='steps_client',
                          on_feedback=lambda _: first_feedback.set())
    try:
        assert caller.wait_for_server(WAIT_S)
        goal = SimulateSteps.Goal()
        goal.steps = 36
        handle = caller.send_goal(goal, timeout_s=WAIT_S)
        assert handle.accepted
        outcome = caller.result(handle, WAIT_S)
        assert outcome.result.result.result == Result.RESULT_OK
        # The first feedback was repeated until one came; every one that came adds up to the
        # goal, in order.
        feedback = caller.feedback(handle)
        completed = [message.completed_steps for message in feedback]
        assert completed and completed[0] == 12 and completed == sorted(completed)
        assert all(message.completed_steps + message.remaining_steps == 36
                   for message in feedback)
    finally:
        # An action server destroyed while an executor spins it can be used after it is gone
        # (the spinning thread died of it): stop spinning first.
        spinning.shutdown()
        caller.close()
        server.destroy()
