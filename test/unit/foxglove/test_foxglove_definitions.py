# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The ros2msg definitions of the Foxglove view, and its layout file: no rclpy."""

import json
import subprocess
import sys

import pytest
from support.paths import ROOT

from acres_bridge.foxglove.definitions import DefinitionError
from acres_bridge.foxglove.definitions import DefinitionLibrary
from acres_bridge.foxglove.definitions import SEPARATOR
from acres_bridge.foxglove.definitions import split_type_name
from acres_bridge.foxglove.definitions import used_types

FILES = {
    ('demo_msgs', 'msg', 'Scan'): (
        '# a comment naming other/Type, which is not a field\n'
        'uint8 KIND_A = 1  # a constant\n'
        'string<=8 label\n'
        'Point[] points\n'
        'Point[<=4] corners\n'
        'std_msgs/Header header\n'
        'float64[9] covariance\n'),
    ('demo_msgs', 'msg', 'Point'): 'float64 x\nfloat64 y\nstd_msgs/Header header\n',
    ('std_msgs', 'msg', 'Header'): 'builtin_interfaces/Time stamp\nstring frame_id\n',
    ('builtin_interfaces', 'msg', 'Time'): 'int32 sec\nuint32 nanosec\n',
    ('demo_msgs', 'srv', 'Fetch'): 'string name\n---\nPoint point\nbool ok\n',
}


def _read(package: str, kind: str, name: str) -> str:
    try:
        return FILES[(package, kind, name)]
    except KeyError:
        raise DefinitionError(f'no {package}/{kind}/{name}') from None


def test_fields_name_their_types_and_constants_and_comments_do_not():
    assert used_types(FILES[('demo_msgs', 'msg', 'Scan')], 'demo_msgs') == [
        'demo_msgs/Point', 'std_msgs/Header']


def test_a_definition_lists_each_dependency_once_depth_first():
    definition = DefinitionLibrary(_read).message('demo_msgs/msg/Scan')
    parts = definition.split(f'\n{SEPARATOR}\n')
    assert parts[0] == FILES[('demo_msgs', 'msg', 'Scan')].rstrip('\n')
    assert [part.split('\n', 1)[0] for part in parts[1:]] == [
        'MSG: demo_msgs/Point', 'MSG: std_msgs/Header', 'MSG: builtin_interfaces/Time']
    assert definition.endswith('uint32 nanosec\n')


def test_a_service_has_a_request_and_a_response_definition():
    request, response = DefinitionLibrary(_read).service('demo_msgs/srv/Fetch')
    assert request == 'string name\n'
    assert response.startswith(f'Point point\nbool ok\n{SEPARATOR}\nMSG: demo_msgs/Point\n')


@pytest.mark.parametrize('type_name', ['demo_msgs/msg/Missing', 'nopackage/msg/X'])
def test_an_unknown_type_is_a_definition_error(type_name):
    with pytest.raises(DefinitionError):
        DefinitionLibrary(_read).message(type_name)


@pytest.mark.parametrize('type_name', ['Scan', 'a/b/c/d', 'demo_msgs/idl/Scan', '/msg/Scan'])
def test_a_malformed_type_name_is_a_definition_error(type_name):
    with pytest.raises(DefinitionError):
        split_type_name(type_name)


def test_the_installed_point_cloud_definition_has_its_three_dependencies():
    definition = DefinitionLibrary().message('sensor_msgs/msg/PointCloud2')
    assert definition.count(f'{SEPARATOR}\nMSG: ') == 3
    assert 'MSG: sensor_msgs/PointField\n' in definition


def test_the_layout_file_is_the_one_the_tool_writes(tmp_path):
    written = tmp_path / 'layout.json'
    subprocess.run([sys.executable, str(ROOT / 'tools' / 'foxglove_layout.py'), '--output',
                    str(written)], check=True, timeout=120)
    shipped = (ROOT / 'config' / 'acres.foxglove.json').read_text(encoding='utf-8')
    assert shipped == written.read_text(encoding='utf-8')
    panels = [json.dumps(item) for item in json.loads(shipped)['content']['items']]
    for name in ('ThreeDee', 'Image', 'Map', 'Plot', 'ServiceCall', '/step_simulation',
                 '/polaris/ins/fix', '/polaris/camera/camera_info'):
        assert name in ''.join(panels), name
