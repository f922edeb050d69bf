# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The parameters of every node: declared with descriptors, validated, frozen."""

import dataclasses

import pytest
from rcl_interfaces.msg import ParameterType
from rclpy.node import Node
from rclpy.parameter import Parameter

from acres_bridge.control.parameters import declare_sim_control_parameters
from acres_bridge.control.parameters import SIM_CONTROL_PARAMETERS
from acres_bridge.control.parameters import sim_control_parameters_from_values
from acres_bridge.control.parameters import SimControlParameters
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.sensors.parameters import declare_sensor_bridge_parameters
from acres_bridge.sensors.parameters import SENSOR_BRIDGE_PARAMETERS
from acres_bridge.sensors.parameters import sensor_bridge_parameters_from_values
from acres_bridge.sensors.parameters import SensorBridgeParameters
from acres_bridge.session.parameters import BRIDGE_PARAMETERS
from acres_bridge.session.parameters import bridge_parameters_from_values
from acres_bridge.session.parameters import BridgeParameters
from acres_bridge.session.parameters import declare_bridge_parameters


def test_the_defaults_are_the_contracts():
    assert sensor_bridge_parameters_from_values({}) == SensorBridgeParameters(
        host='127.0.0.1', address='127.0.0.1', port=5601, frame_prefix='', publish_clock=True,
        publish_tf='none', world_frame='world', point_fields='xyzi', lidar_sweep_s=-1.0,
        point_time_origin='end', reconnect_s=1.0)
    assert sim_control_parameters_from_values({}) == SimControlParameters(
        host='127.0.0.1', address='127.0.0.1', port=5600, timeout_s=10.0, reconnect_s=1.0)
    assert bridge_parameters_from_values({}) == BridgeParameters(
        host='127.0.0.1', address='127.0.0.1', port=5600, sensor_ports=(), timeout_s=10.0,
        reconnect_s=1.0, frame_prefix='', publish_clock=True, publish_tf='none',
        world_frame='world', point_fields='xyzi', lidar_sweep_s=-1.0, point_time_origin='end',
        ack_timeout_s=5.0, match_timeout_s=5.0, sensor_processes='auto')
    assert [spec.name for spec in SENSOR_BRIDGE_PARAMETERS] == [
        'host', 'port', 'frame_prefix', 'publish_clock', 'publish_tf', 'world_frame',
        'point_fields', 'lidar_sweep_s', 'point_time_origin', 'compressed.format',
        'compressed.jpeg_quality', 'compressed.png_level', 'reconnect_s']
    assert [spec.name for spec in SIM_CONTROL_PARAMETERS] == [
        'host', 'port', 'timeout_s', 'reconnect_s']
    assert {spec.name for spec in BRIDGE_PARAMETERS} == {
        'host', 'port', 'sensor_ports', 'timeout_s', 'reconnect_s', 'frame_prefix',
        'publish_clock', 'publish_tf', 'world_frame', 'point_fields', 'lidar_sweep_s',
        'point_time_origin', 'ack_timeout_s', 'match_timeout_s', 'sensor_processes',
        'compressed.format', 'compressed.jpeg_quality', 'compressed.png_level'}


@pytest.mark.parametrize(('value', 'one', 'several'), [
    ('in_process', False, False), ('per_agent', True, True)])
def test_sensor_processes_in_process_or_per_agent_holds_whatever_the_cores(value, one, several):
    settings = bridge_parameters_from_values({'sensor_processes': value})
    for cores in (1, 2, 64):
        assert (settings.processes_per_agent(1, cores),
                settings.processes_per_agent(2, cores)) == (one, several)


def test_sensor_processes_auto_gives_several_agents_a_process_each_with_two_cores_to_spare():
    settings = bridge_parameters_from_values({'sensor_processes': 'auto'})
    assert not settings.processes_per_agent(1, 64)            # one agent: always in process
    assert not settings.processes_per_agent(2, 2)             # this project's 2-core machines
    assert not settings.processes_per_agent(2, 3)
    assert settings.processes_per_agent(2, 4)
    assert not settings.processes_per_agent(4, 5)
    assert settings.processes_per_agent(4, 6)


def test_sensor_processes_refuses_other_values():
    with pytest.raises(ParameterError, match='parameter sensor_processes: .*one of auto, '
                                             'in_process, per_agent'):
        bridge_parameters_from_values({'sensor_processes': 'threads'})


def test_settings_are_frozen():
    settings = sensor_bridge_parameters_from_values({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.port = 1


@pytest.mark.parametrize(('values', 'message'), [
    ({'host': '10.0.0.1'}, "parameter host: host '10.0.0.1' resolves to 10.0.0.1, which is not "
                           'a loopback address'),
    ({'host': '0.0.0.0'}, 'parameter host: .*any address'),
    ({'host': ''}, 'parameter host: .*empty'),
    ({'port': 0}, 'parameter port: 0 is not a TCP port from 1 to 65535'),
    ({'port': 65536}, 'parameter port: 65536 is not a TCP port from 1 to 65535'),
    ({'port': '5601'}, "parameter port: '5601' is not an integer"),
    ({'port': True}, 'parameter port: True is not an integer'),
    ({'publish_tf': 'odom'}, "parameter publish_tf: 'odom' is not one of none, ins, truth"),
    ({'publish_tf': 'INS'}, "parameter publish_tf: 'INS' is not one of none, ins, truth"),
    ({'point_time_origin': 'middle'}, "parameter point_time_origin: 'middle' is not one of "
                                      'auto, end, start'),
    ({'point_fields': 'autoware', 'point_time_origin': 'end'},
     'parameter point_time_origin: end gives times before the stamp'),
    ({'compressed.format': 'tiff'},
     "parameter compressed.format: 'tiff' is not one of jpeg, png, none"),
    ({'compressed.jpeg_quality': 0}, 'parameter compressed.jpeg_quality: 0 is not'),
    ({'compressed.png_level': 10}, 'parameter compressed.png_level: 10 is not'),
    ({'lidar_sweep_s': 11.0}, 'parameter lidar_sweep_s: 11.0 is not from -1.0 to 10.0'),
    ({'lidar_sweep_s': -2.0}, 'parameter lidar_sweep_s: -2.0 is not from -1.0 to 10.0'),
    ({'lidar_sweep_s': float('nan')}, 'parameter lidar_sweep_s: nan is not from -1.0 to 10.0'),
    ({'point_fields': 'xyz'}, "parameter point_fields: 'xyz' is not one of xyzi, xyzirt, "
                              'autoware, autoware_dense'),
    ({'publish_clock': 'yes'}, "parameter publish_clock: 'yes' is not true or false"),
    ({'reconnect_s': 0.0}, 'parameter reconnect_s: 0.0 is not from 0.01 to 3600.0'),
    ({'reconnect_s': float('nan')}, 'parameter reconnect_s: nan is not from'),
    ({'world_frame': ''}, 'parameter world_frame: a frame id is needed'),
    ({'world_frame': '/world'}, 'parameter world_frame: .* starts with /'),
    ({'frame_prefix': 'a b'}, 'parameter frame_prefix: .* white space'),
    ({'frame_prefix': '/polaris'}, 'parameter frame_prefix: .* starts with /'),
    ({'timeout_s': 1.0}, 'unknown parameters: timeout_s'),
])
def test_bad_sensor_bridge_values_are_refused_with_one_line(values, message):
    with pytest.raises(ParameterError, match=message) as caught:
        sensor_bridge_parameters_from_values(values)
    assert '\n' not in str(caught.value)


def test_the_time_origin_auto_is_start_for_autoware_and_end_otherwise():
    for fields, origin in (('xyzi', 'end'), ('xyzirt', 'end'), ('autoware', 'start'),
                           ('autoware_dense', 'start')):
        settings = sensor_bridge_parameters_from_values({'point_fields': fields})
        assert settings.point_time_origin == origin
        session = bridge_parameters_from_values({'point_fields': fields})
        assert session.sensor(5601).point_time_origin == origin
    assert sensor_bridge_parameters_from_values(
        {'point_fields': 'xyzirt', 'point_time_origin': 'start'}).point_time_origin == 'start'


def test_the_compressed_settings_reach_every_agent_and_a_child_process_by_name():
    session = bridge_parameters_from_values(
        {'compressed.format': 'png', 'compressed.png_level': 6, 'compressed.jpeg_quality': 50})
    agent = session.sensor(5601)
    assert (agent.compressed_format, agent.compressed_png_level,
            agent.compressed_jpeg_quality) == ('png', 6, 50)
    assert agent.values()['compressed.format'] == 'png'
    assert sensor_bridge_parameters_from_values(agent.values()) == agent
    assert agent.replace(compressed_format='none').compressed_format == 'none'


def test_values_are_normalised():
    settings = sensor_bridge_parameters_from_values(
        {'host': 'localhost', 'frame_prefix': 'polaris/', 'reconnect_s': 2})
    assert (settings.host, settings.address) == ('localhost', '127.0.0.1')
    assert settings.frame_prefix == 'polaris'
    assert settings.reconnect_s == 2.0 and isinstance(settings.reconnect_s, float)
    assert sensor_bridge_parameters_from_values({'host': '::1'}).address == '::1'


def test_session_values_give_each_agent_its_bridge_settings():
    session = bridge_parameters_from_values({'sensor_ports': [5601, 5602], 'port': 5700,
                                             'publish_tf': 'truth', 'timeout_s': 30})
    assert session.sensor_ports == (5601, 5602)
    assert session.control() == SimControlParameters(port=5700, timeout_s=30.0)
    agent = session.sensor(5602, frame_prefix='maxxum', publish_clock=False)
    assert (agent.port, agent.frame_prefix, agent.publish_clock, agent.publish_tf) == (
        5602, 'maxxum', False, 'truth')
    assert session.sensor(5601).frame_prefix == ''
    with pytest.raises(ParameterError, match='parameter port: 0'):
        session.sensor(0)
    with pytest.raises(ParameterError, match='parameter sensor_ports: 70000'):
        bridge_parameters_from_values({'sensor_ports': [5601, 70000]})
    with pytest.raises(ParameterError, match='parameter sensor_ports: .* list of integers'):
        bridge_parameters_from_values({'sensor_ports': ['5601']})
    assert sensor_bridge_parameters_from_values({}).replace(port=6000).port == 6000
    times = bridge_parameters_from_values({'lidar_sweep_s': 0, 'point_time_origin': 'start'})
    agent = times.sensor(5601)
    assert (agent.lidar_sweep_s, agent.point_time_origin) == (0.0, 'start')
    assert isinstance(agent.lidar_sweep_s, float)


def _node(ros_context, name: str, **overrides) -> Node:
    return Node(name, context=ros_context, parameter_overrides=[
        Parameter(key, value=value) for key, value in overrides.items()])


def test_the_sensor_bridge_declares_every_parameter_with_a_descriptor(ros_context):
    node = _node(ros_context, 'sensor_bridge', port=5611, reconnect_s=2, frame_prefix='maxxum/')
    try:
        settings = declare_sensor_bridge_parameters(node)
        assert (settings.port, settings.reconnect_s, settings.frame_prefix) == (
            5611, 2.0, 'maxxum')
        for spec in SENSOR_BRIDGE_PARAMETERS:
            descriptor = node.describe_parameter(spec.name)
            assert descriptor.description and descriptor.read_only
            assert descriptor.type == spec.type.value
            assert not descriptor.dynamic_typing
        # The node shows the normalised values with their static types.
        assert node.get_parameter('reconnect_s').type_ == Parameter.Type.DOUBLE
        assert node.get_parameter('reconnect_s').value == 2.0
        assert node.get_parameter('frame_prefix').value == 'maxxum'
        port = node.describe_parameter('port').integer_range[0]
        assert (port.from_value, port.to_value) == (1, 65535)
        assert node.describe_parameter('reconnect_s').floating_point_range[0].from_value > 0
        assert 'ins' in node.describe_parameter('publish_tf').additional_constraints
        result = node.set_parameters([Parameter('port', value=5612)])[0]
        assert not result.successful and 'read-only' in result.reason
        assert node.get_parameter('port').value == 5611
    finally:
        node.destroy_node()


@pytest.mark.parametrize(('overrides', 'message'), [
    ({'host': '10.0.0.1'}, 'parameter host: .*not a loopback address'),
    ({'port': 70000}, 'parameter port: 70000 is not a TCP port'),
    ({'port': 'abc'}, "parameter port: 'abc' is not an integer"),
    ({'publish_tf': 'everything'}, 'parameter publish_tf'),
])
def test_a_bad_override_raises_parameter_error(ros_context, overrides, message):
    node = _node(ros_context, 'sensor_bridge', **overrides)
    try:
        with pytest.raises(ParameterError, match=message):
            declare_sensor_bridge_parameters(node)
    finally:
        node.destroy_node()


def test_sim_control_and_the_session_declare_theirs(ros_context):
    control = _node(ros_context, 'sim_control', timeout_s=3)
    session = _node(ros_context, 'acres_bridge', sensor_ports=[5601, 5602], publish_clock=False)
    unset = _node(ros_context, 'acres_bridge_unset')
    try:
        assert declare_sim_control_parameters(control) == SimControlParameters(timeout_s=3.0)
        settings = declare_bridge_parameters(session)
        assert settings.sensor_ports == (5601, 5602) and settings.publish_clock is False
        assert session.get_parameter('sensor_ports').value == [5601, 5602]
        assert session.describe_parameter('sensor_ports').type == (
            ParameterType.PARAMETER_INTEGER_ARRAY)
        assert declare_bridge_parameters(unset).sensor_ports == ()
        assert unset.get_parameter('sensor_ports').type_ == Parameter.Type.INTEGER_ARRAY
        assert list(unset.get_parameter('sensor_ports').value) == []
    finally:
        for node in (control, session, unset):
            node.destroy_node()
