# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The merge of a user's Fast DDS profile with the bridge's settings: pure XML, no rclpy."""

import xml.etree.ElementTree as ElementTree

import pytest
from support import user_profiles

from acres_bridge.runtime import dds_profile

HEARTBEAT_NS = str(dds_profile.HEARTBEAT_PERIOD_MS * 1_000_000)

WRITER = '''<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"><profiles>
  <data_writer profile_name="mine" is_default_profile="true">
    <qos><data_sharing><kind>AUTOMATIC</kind></data_sharing></qos>
    <times><heartbeat_period><sec>3</sec></heartbeat_period></times>
    <historyMemoryPolicy>PREALLOCATED</historyMemoryPolicy>
  </data_writer>
  <data_writer profile_name="rt/polaris/lidar/points"/>
</profiles></dds>'''


def _merged(text: str, major: int = 3, **options) -> tuple[dds_profile.Merge, ElementTree.Element]:
    options = {'local_discovery': True, 'qos_from_xml': False, **options}
    merge = dds_profile.merge_profile(text, major, path='mine.xml', **options)
    return merge, (None if merge.text is None else ElementTree.fromstring(merge.text))


def _text(root: ElementTree.Element, path: str) -> list[str]:
    return [(element.text or '').strip() for element in root.findall(path)]


def test_a_transports_only_profile_keeps_its_transports_and_gains_the_writer_settings():
    merge, root = _merged(user_profiles.TRANSPORTS_ONLY)
    assert merge.shortfalls == () and merge.segment_size == dds_profile.SHM_SEGMENT_BYTES
    # Written back without namespace prefixes (Fast DDS matches names, not namespaces).
    assert 'ns0:' not in merge.text and 'xmlns="http://www.eprosima.com"' in merge.text
    profiles = root.find('{*}profiles')
    assert [(element.tag.split('}')[-1], element.get('profile_name'),
             element.get('is_default_profile')) for element in profiles][1:] == [
        ('participant', 'loopback_only', 'true'),
        ('data_writer', 'acres_bridge_writer', 'true')]
    assert _text(root, './/{*}userTransports/{*}transport_id') == ['loopback_udp', 'local_shm']
    assert _text(root, './/{*}useBuiltinTransports') == ['false']
    assert _text(root, './/{*}interfaceWhiteList/{*}address') == ['127.0.0.1']
    assert _text(root, './/{*}transport_descriptor/{*}segment_size') == [
        str(dds_profile.SHM_SEGMENT_BYTES)]
    writer = profiles.find('{*}data_writer')
    assert _text(writer, '{*}times/{*}heartbeat_period/{*}nanosec') == [HEARTBEAT_NS]
    assert _text(writer, '{*}times/{*}nack_response_delay/{*}nanosec') == ['0']
    assert _text(writer, '{*}qos/{*}data_sharing/{*}kind') == ['OFF']
    assert _text(writer, '{*}qos/{*}publishMode/{*}kind') == ['SYNCHRONOUS']
    assert _text(writer, '{*}historyMemoryPolicy') == ['PREALLOCATED_WITH_REALLOC']


def test_the_writer_profile_takes_the_tags_of_the_fast_dds_version():
    for major, minor, tag, heartbeat, nack in (
            (3, 2, 'data_writer', 'heartbeat_period', 'nack_response_delay'),
            (2, 14, 'publisher', 'heartbeatPeriod', 'nackResponseDelay'),
            (2, 6, 'publisher', 'heartbeatPeriod', 'nackResponseDelay')):
        merge = dds_profile.merge_profile(user_profiles.TRANSPORTS_ONLY, major, minor=minor,
                                          local_discovery=True, qos_from_xml=False)
        root = ElementTree.fromstring(merge.text)
        assert root.find(f'.//{{*}}{tag}/{{*}}times/{{*}}{heartbeat}') is not None
        assert root.find(f'.//{{*}}{tag}/{{*}}times/{{*}}{nack}') is not None


def test_values_the_user_sets_are_kept_and_those_that_fall_short_are_named_with_a_fix():
    merge, root = _merged(WRITER, qos_from_xml=True)
    writers = root.findall('.//{*}data_writer')
    # Kept as the user wrote them; the topic's profile gets the bridge's values.
    assert _text(writers[0], '{*}qos/{*}data_sharing/{*}kind') == ['AUTOMATIC']
    assert _text(writers[0], '{*}times/{*}heartbeat_period/{*}sec') == ['3']
    assert _text(writers[1], '{*}times/{*}heartbeat_period/{*}nanosec') == [HEARTBEAT_NS]
    assert _text(writers[1], '{*}qos/{*}data_sharing/{*}kind') == ['OFF']
    assert len(merge.shortfalls) == 3
    heartbeat, sharing, memory = merge.shortfalls
    assert heartbeat.startswith('the writer heartbeat stays 3000 ms (the data_writer profile '
                                '"mine" of mine.xml)')
    assert 'lag by up to the period' in heartbeat
    assert f'<nanosec>{HEARTBEAT_NS}</nanosec>' in heartbeat
    assert sharing.startswith('data sharing stays AUTOMATIC') and 'history depth' in sharing
    assert 'Fix: <data_sharing><kind>OFF</kind></data_sharing>' in sharing
    assert memory.startswith('history memory stays PREALLOCATED') and 'Fix:' in memory


def test_a_nack_response_delay_the_user_sets_is_kept():
    text = WRITER.replace('</heartbeat_period>', '</heartbeat_period><nack_response_delay>'
                          '<sec>0</sec><nanosec>5000000</nanosec></nack_response_delay>')
    _, root = _merged(text)
    mine, topic = root.findall('.//{*}data_writer')
    assert _text(mine, '{*}times/{*}nack_response_delay/{*}nanosec') == ['5000000']
    assert _text(topic, '{*}times/{*}nack_response_delay/{*}nanosec') == ['0']


def test_writer_qos_that_rmw_fastrtps_overrides_is_no_shortfall():
    # Without RMW_FASTRTPS_USE_QOS_FROM_XML=1 rmw_fastrtps turns data sharing off and
    # reallocates, whatever the file says: only the heartbeat falls short.
    merge, _ = _merged(WRITER, qos_from_xml=False)
    assert [item.split(' (')[0] for item in merge.shortfalls] == [
        'the writer heartbeat stays 3000 ms']


def test_a_profile_that_sets_everything_needs_no_copy():
    text = user_profiles.TRANSPORTS_ONLY
    merged = dds_profile.merge_profile(text, 3, local_discovery=True, qos_from_xml=True).text
    again = dds_profile.merge_profile(merged, 3, local_discovery=True, qos_from_xml=True)
    assert again == dds_profile.Merge(None)


def test_a_small_segment_or_no_shared_memory_is_named_with_a_fix():
    small = user_profiles.TRANSPORTS_ONLY.replace(
        '<type>SHM</type>', '<type>SHM</type><segment_size>524288</segment_size>')
    merge, _ = _merged(small)
    assert merge.segment_size is None
    assert [item for item in merge.shortfalls if item.startswith(
        'the shared-memory segment stays 524288 bytes (the transport "local_shm"')]
    no_shm = user_profiles.TRANSPORTS_ONLY.replace(
        '<transport_id>local_shm</transport_id>\n        </userTransports>', '</userTransports>')
    merge, root = _merged(no_shm)
    assert merge.segment_size is None and merge.shortfalls[0].startswith(
        'no shared-memory transport among the transports of mine.xml (loopback_udp)')
    # Nothing is added to the transports the user chose.
    assert _text(root, './/{*}userTransports/{*}transport_id') == ['loopback_udp']


@pytest.mark.parametrize('local', [True, False], ids=['local discovery', 'any discovery'])
def test_a_profile_without_transports_gets_the_bridge_segment_and_restricts_nothing(local):
    text = '<dds><profiles><participant profile_name="p" is_default_profile="true">' \
        '<rtps><name>mine</name></rtps></participant></profiles></dds>'
    merge, root = _merged(text, local_discovery=local)
    assert merge.segment_size == dds_profile.SHM_SEGMENT_BYTES
    assert _text(root, './/{*}rtps/{*}name') == ['mine']
    # Replacing the built-in transports keeps both kinds, unless rmw_fastrtps adds its own.
    assert _text(root, './/{*}transport_descriptor/{*}type') == (
        ['SHM'] if local else ['SHM', 'UDPv4'])
    assert 'interfaceWhiteList' not in merge.text and '127.0.0.1' not in merge.text


def test_builtin_transports_chosen_by_name_are_left_alone():
    text = '<dds><profiles><participant profile_name="p" is_default_profile="true"><rtps>' \
        '<builtinTransports>LARGE_DATA</builtinTransports></rtps></participant></profiles></dds>'
    merge, root = _merged(text)
    assert merge.segment_size is None and root.find('.//transport_descriptors') is None
    merge, root = _merged(user_profiles.TRANSPORTS_ONLY, builtin_transports='LARGE_DATA')
    assert _text(root, './/{*}segment_size') == []


def test_the_other_version_spelling_is_found():
    two = '<dds><profiles><publisher profile_name="w"><times><heartbeatPeriod/></times>' \
        '</publisher></profiles></dds>'
    three = '<dds><profiles><data_writer profile_name="w"><times><heartbeat_period/></times>' \
        '</data_writer></profiles></dds>'
    assert dds_profile.foreign_spelling(dds_profile.parse(two), 3) == [
        'heartbeatPeriod', 'publisher']
    assert dds_profile.foreign_spelling(dds_profile.parse(two), 2) == []
    assert dds_profile.foreign_spelling(dds_profile.parse(three), 2) == ['heartbeat_period']
    assert dds_profile.foreign_spelling(dds_profile.parse(three), 2, minor=6) == [
        'data_writer', 'heartbeat_period']


def test_a_profile_name_the_user_took_is_not_taken_twice():
    text = '<profiles><data_writer profile_name="acres_bridge_writer"/></profiles>'
    merge, root = _merged(text)
    assert [element.get('profile_name') for element in root.iter('data_writer')] == [
        'acres_bridge_writer', 'acres_bridge_writer_2']


def test_text_that_is_not_xml_is_refused():
    with pytest.raises(ElementTree.ParseError):
        dds_profile.merge_profile('<dds><profiles>', 3, local_discovery=True,
                                  qos_from_xml=False)
