# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The XML files are well formed, and the package manifests are complete format 3 manifests."""

import xml.etree.ElementTree as ElementTree

import pytest
from support.paths import ROOT

XML_FILES = sorted([ROOT / 'package.xml', ROOT / 'msg' / 'package.xml',
                    *(ROOT / 'config').glob('*.xml'),
                    *(ROOT / 'tools' / 'interfaces').glob('*/package.xml')])
MANIFESTS = [path for path in XML_FILES if path.name == 'package.xml']


@pytest.mark.parametrize('path', XML_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_xml_is_well_formed(path):
    ElementTree.parse(path)


@pytest.mark.parametrize('path', MANIFESTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_manifest_is_format_3_with_the_required_elements(path):
    package = ElementTree.parse(path).getroot()
    assert package.tag == 'package' and package.get('format') == '3'
    for element in ('name', 'version', 'description', 'maintainer', 'license'):
        assert package.find(element) is not None and package.find(element).text.strip(), element
    assert package.find('maintainer').get('email')
    assert package.find('export/build_type') is not None


def test_the_bridge_declares_every_runtime_dependency_of_the_contract():
    package = ElementTree.parse(ROOT / 'package.xml').getroot()
    declared = {element.text for element in package.findall('exec_depend')}
    contract = {'rclpy', 'sensor_msgs', 'rosgraph_msgs', 'nav_msgs', 'geometry_msgs', 'tf2_msgs',
                'diagnostic_msgs', 'std_msgs', 'simulation_interfaces', 'launch_ros',
                'python3-numpy', 'acres_interfaces'}
    assert contract <= declared, f'missing: {sorted(contract - declared)}'
