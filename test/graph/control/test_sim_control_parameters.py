# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
sim_control serves the standard parameter services, as every ROS node does.

An attribute of the node class that overwrites one of rclpy's own (``Node._services``) drops
the parameter services from the node, and ``ros2 param get /sim_control timeout_s`` then
waits forever. These tests call the services in a real graph, as ``ros2 param`` does.
"""

import pytest
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import DescribeParameters
from rcl_interfaces.srv import GetParameters
from rcl_interfaces.srv import ListParameters
import rclpy
from rclpy.node import Node
from support.sim_control_graph import ControlGraph
from support.sim_control_graph import graph_fixtures
from support.sim_control_graph import wait_for

pytestmark = pytest.mark.ros

PARAMETERS = ('host', 'port', 'timeout_s', 'reconnect_s')


graph, emulator = graph_fixtures({'timeout_s': 7.5})


def _service(graph: ControlGraph, name: str) -> str:
    return f'{graph.namespace}/sim_control/{name}'


def test_list_parameters_names_every_parameter_of_the_node(graph):
    response = graph.call(ListParameters, _service(graph, 'list_parameters'))
    assert set(PARAMETERS) <= set(response.result.names)
    assert 'use_sim_time' in response.result.names


def test_get_parameters_gives_the_values_in_force(graph, emulator):
    response = graph.call(GetParameters, _service(graph, 'get_parameters'),
                          GetParameters.Request(names=list(PARAMETERS)))
    host, port, timeout_s, reconnect_s = response.values
    assert (host.type, host.string_value) == (ParameterType.PARAMETER_STRING, '127.0.0.1')
    assert (port.type, port.integer_value) == (ParameterType.PARAMETER_INTEGER,
                                               emulator.control_port)
    assert (timeout_s.type, timeout_s.double_value) == (ParameterType.PARAMETER_DOUBLE, 7.5)
    assert (reconnect_s.type, reconnect_s.double_value) == (ParameterType.PARAMETER_DOUBLE, 1.0)


def test_describe_parameters_answers_too(graph):
    response = graph.call(DescribeParameters, _service(graph, 'describe_parameters'),
                          DescribeParameters.Request(names=['timeout_s']))
    assert [descriptor.name for descriptor in response.descriptors] == ['timeout_s']


def test_every_parameter_service_is_in_the_graph(graph):
    names = {'describe_parameters', 'get_parameter_types', 'get_parameters',
             'list_parameters', 'set_parameters', 'set_parameters_atomically'}
    wanted = {_service(graph, name) for name in names}
    wait_for(lambda: wanted <= set(dict(graph.client_node.get_service_names_and_types())),
             what='the parameter services in the graph')


def test_the_node_keeps_rclpy_s_own_attributes(graph):
    # Every attribute that a plain rclpy Node sets on itself keeps its kind on sim_control;
    # one the subclass overwrote would change type (a list of our services, a lock...).
    plain = rclpy.create_node('sim_control_attribute_probe', context=graph.context)
    try:
        for name, value in vars(plain).items():
            if value is not None:       # None until set (the executor of a spun node)
                assert type(getattr(graph.node, name)) is type(value), name
    finally:
        plain.destroy_node()
    assert isinstance(graph.node, Node)
    # The node's own list of services holds both the parameter services and ours.
    server_names = {service.srv_name.rsplit('/', 1)[-1] for service in graph.node.services}
    assert {'get_parameters', 'list_parameters', 'get_entities'} <= server_names
