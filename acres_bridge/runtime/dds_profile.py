# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A user's Fast DDS profile with the bridge's writer settings filled in where it leaves them unset.

Pure XML work (``xml.etree``), no rclpy. :func:`merge_profile` takes the text of the user's
file and returns the profile for the bridge's process only: every profile, name and default of
the user's file as it is, plus, for what the file does not set,

- in every writer profile (``data_writer``; 2.x also ``publisher``): the heartbeat period,
  an immediate answer to a request for lost data (the NACK response delay; alone it makes no
  copy: a file that sets everything else is used as it is), data sharing off, synchronous
  publishing and history memory that grows by reallocation (rmw_fastrtps sets the last three
  itself unless ``RMW_FASTRTPS_USE_QOS_FROM_XML=1``, and then takes them from here), and a
  default writer profile if the file has none;
- in the default participant profile: a shared-memory segment that holds the largest
  messages, on the user's own shared-memory transports, or, where the file names no
  transports, the bridge's shared-memory transport (and UDPv4, unless rmw_fastrtps adds its
  own for local discovery). Transports the user chose stay the user's: nothing is removed and
  nothing restricted.

A value the user's file sets is kept. Where it falls short of what the bridge needs, the
merge says which setting, what it costs and the line that fixes it (:attr:`Merge.shortfalls`).
Fast DDS parses elements by name, not by XML namespace, so the file is written back with the
user's default namespace and no prefixes.
"""

import dataclasses
import xml.etree.ElementTree as ElementTree

# What the bridge's writers need (docs/benchmarks.md measures each one). A writer sends a
# heartbeat only while a sample is unacknowledged, and a reader acknowledges its last samples
# only after one: lockstep's acknowledgement wait is this period plus the reader's response
# delay (docs/benchmarks-lockstep.md).
HEARTBEAT_PERIOD_MS = 2
# A reliable writer answers a reader's request for lost data at once (stock: after 5 ms). On one
# host nothing is lost; across a link a stock reader's 208 KiB socket buffer drops parts of
# every cloud and image, and each repair waited those 5 ms (docs/benchmarks.md, "Figures behind
# choices in the code", has what answering at once gained).
NACK_RESPONSE_DELAY_MS = 0
NACK_RESPONSE_ADDED = f'NACK response delay {NACK_RESPONSE_DELAY_MS} ms'
SHM_SEGMENT_BYTES = 16 * 1024 * 1024
SHM_PORT_QUEUE_CAPACITY = 1024

# Fast DDS 2.x spelling -> Fast DDS 3 spelling (the schemas of 2.14 and 3.2 compared).
RENAMED_TAGS = {
    'heartbeatPeriod': 'heartbeat_period',
    'heartbeatResponseDelay': 'heartbeat_response_delay',
    'initialHeartbeatDelay': 'initial_heartbeat_delay',
    'initialAcknackDelay': 'initial_acknack_delay',
    'nackResponseDelay': 'nack_response_delay',
    'nackSupressionDuration': 'nack_supression_duration',
    'expectsInlineQos': 'expects_inline_qos',
}
# The profile elements of writers and readers: 2.6 (Humble) knows only the 2.x names, 2.14
# both, 3.x only the 3.x names.
PROFILE_TAGS = {2: ('publisher', 'subscriber'), 3: ('data_writer', 'data_reader')}


@dataclasses.dataclass(frozen=True)
class Merge:
    """
    What :func:`merge_profile` made of a user's profile.

    ``text`` is the merged profile (None when the file already sets everything), ``added`` the
    bridge's settings that went in, ``shortfalls`` the user's settings kept although they fall
    short (which one, its cost and the fix), ``segment_size`` the shared-memory segment that the
    merged profile gives the participant (None when there is none or it gives none).
    """

    text: str | None
    added: tuple[str, ...] = ()
    shortfalls: tuple[str, ...] = ()
    segment_size: int | None = None


def writer_tags(major: int, minor: int = 14) -> tuple[str, ...]:
    """Return the writer profile elements that Fast DDS ``major.minor`` reads."""
    if major >= 3:
        return ('data_writer',)
    return ('publisher', 'data_writer') if minor >= 10 else ('publisher',)


def foreign_spelling(root: ElementTree.Element, major: int, minor: int = 14) -> list[str]:
    """
    Return the element names in ``root`` that only the other Fast DDS major version knows.

    Renamed tags (``heartbeatPeriod`` against ``heartbeat_period``) and the writer and reader
    profiles of the other version (``publisher`` on 3.x; ``data_writer`` on 2.6).
    """
    names = {_local(element.tag) for element in root.iter()}
    foreign = set(RENAMED_TAGS.values() if major < 3 else RENAMED_TAGS.keys())
    if major >= 3:
        foreign |= set(PROFILE_TAGS[2])
    elif minor < 10:
        foreign |= set(PROFILE_TAGS[3])
    return sorted(names & foreign)


def parse(text: str) -> ElementTree.Element:
    """
    Parse a profile; return its root with every tag stripped of its namespace.

    The root keeps the default namespace as its ``xmlns`` attribute, as the file spelled it.

    :raises ElementTree.ParseError: for text that is not well-formed XML.
    """
    root = ElementTree.fromstring(text)
    namespace = root.tag[1:].partition('}')[0] if root.tag.startswith('{') else ''
    for element in root.iter():
        element.tag = _local(element.tag)
    if namespace:
        root.set('xmlns', namespace)
    return root


def merge_profile(text: str, major: int, *, minor: int = 14, local_discovery: bool,
                  qos_from_xml: bool, builtin_transports: str = '',
                  path: str = 'the profile') -> Merge:
    """
    Fill the bridge's settings into a user's profile where it leaves them unset.

    :param text: the user's file, well-formed and spelled for ``major`` (see
        :func:`foreign_spelling`).
    :param local_discovery: rmw_fastrtps adds its own shared-memory and UDPv4 transports.
    :param qos_from_xml: ``RMW_FASTRTPS_USE_QOS_FROM_XML=1``: the writers' data sharing,
        publish mode and memory policy come from the file instead of from rmw_fastrtps.
    :param builtin_transports: ``FASTDDS_BUILTIN_TRANSPORTS``; set, the transports stay as is.
    :param path: the file's name, for the messages.
    :raises ElementTree.ParseError: for text that is not well-formed XML.
    """
    root = parse(text)
    profiles = root if root.tag == 'profiles' else root.find('profiles')
    if profiles is None:
        profiles = ElementTree.SubElement(root, 'profiles')
    added: list[str] = []
    shortfalls: list[str] = []
    _merge_writers(profiles, major, minor, qos_from_xml, path, added, shortfalls)
    segment = False
    if not builtin_transports:      # else the transports the user chose by name stay
        segment = _merge_participant(profiles, local_discovery, path, added, shortfalls)
    if not [item for item in added if item != NACK_RESPONSE_ADDED]:
        # Nothing the bridge needs is missing: the file is used as it is. The NACK response
        # delay matters only across a lossy link, so it goes in with the others, never alone.
        return Merge(None, (), tuple(shortfalls))
    ElementTree.indent(root, space='  ')
    body = ElementTree.tostring(root, encoding='unicode')
    header = ('<?xml version="1.0" encoding="UTF-8"?>\n'
              f'<!-- {path} with the settings of acres_bridge (acres_bridge/runtime/dds.py) '
              'for what it leaves unset; for the bridge\'s process only. -->\n')
    return Merge(header + body + '\n', tuple(dict.fromkeys(added)), tuple(shortfalls),
                 SHM_SEGMENT_BYTES if segment else None)


# --- writers ------------------------------------------------------------------------------------


def _merge_writers(profiles: ElementTree.Element, major: int, minor: int, qos_from_xml: bool,
                   path: str, added: list[str], shortfalls: list[str]) -> None:
    tags = writer_tags(major, minor)
    writers = [element for element in profiles if element.tag in tags]
    if not any(_is_default(writer) for writer in writers):
        writer = ElementTree.SubElement(profiles, tags[0], {
            'profile_name': _free_name(profiles, 'acres_bridge_writer'),
            'is_default_profile': 'true'})
        writers.append(writer)
        added.append('a default writer profile')
    heartbeat_tag = 'heartbeat_period' if major >= 3 else 'heartbeatPeriod'
    nack_tag = 'nack_response_delay' if major >= 3 else 'nackResponseDelay'
    for writer in writers:
        where = f'the {writer.tag} profile "{writer.get("profile_name", "")}" of {path}'
        _merge_heartbeat(writer, heartbeat_tag, where, added, shortfalls)
        _merge_nack_response(writer, nack_tag, added)
        qos = _child(writer, 'qos')
        for name, wanted, setting, done, cost in (
                ('data_sharing', 'OFF', 'data sharing', 'data sharing off',
                 'a bounded type (/clock, step_barrier) goes by data sharing, and with a deep '
                 'keep-last reader /clock may lag by up to the history depth (0.44 s at '
                 'depth 200)'),
                ('publishMode', 'SYNCHRONOUS', 'the publish mode', 'synchronous publishing',
                 'each message waits for Fast DDS\'s sending thread, which a loaded machine '
                 'delays')):
            kind = _text(qos, f'{name}/kind')
            if kind is None:
                policy = qos.find(name)
                if policy is None:
                    policy = ElementTree.SubElement(qos, name)
                ElementTree.SubElement(policy, 'kind').text = wanted
                added.append(done)
            elif kind.upper() != wanted and qos_from_xml:
                shortfalls.append(
                    f'{setting} stays {kind} ({where}, taken from the file under '
                    f'RMW_FASTRTPS_USE_QOS_FROM_XML=1): {cost}. Fix: '
                    f'<{name}><kind>{wanted}</kind></{name}> under <qos> there')
        policy = _text(writer, 'historyMemoryPolicy')
        if policy is None:
            ElementTree.SubElement(writer, 'historyMemoryPolicy').text = (
                'PREALLOCATED_WITH_REALLOC')
            added.append('history memory by reallocation')
        elif policy.upper() == 'PREALLOCATED' and qos_from_xml:
            shortfalls.append(
                f'history memory stays PREALLOCATED ({where}, taken from the file under '
                'RMW_FASTRTPS_USE_QOS_FROM_XML=1): a cloud or image larger than the first '
                'fails to publish ("Change payload size larger than the history payload '
                'size"). Fix: <historyMemoryPolicy>PREALLOCATED_WITH_REALLOC'
                '</historyMemoryPolicy> there')


def _merge_heartbeat(writer: ElementTree.Element, tag: str, where: str, added: list[str],
                     shortfalls: list[str]) -> None:
    times = _child(writer, 'times')
    period = times.find(tag)
    if period is None:
        period = ElementTree.SubElement(times, tag)
        ElementTree.SubElement(period, 'sec').text = '0'
        ElementTree.SubElement(period, 'nanosec').text = str(HEARTBEAT_PERIOD_MS * 1_000_000)
        added.append(f'writer heartbeat every {HEARTBEAT_PERIOD_MS} ms')
        return
    period_s = _duration_s(period)
    if period_s is None or period_s * 1000 > HEARTBEAT_PERIOD_MS:
        shown = 'unreadable' if period_s is None else f'{period_s * 1000:g} ms'
        shortfalls.append(
            f'the writer heartbeat stays {shown} ({where}): a sample lost on its first send '
            'is repaired only at the next heartbeat, so /clock and INS may lag by up to the '
            'period and a lockstep step waits as long for its acknowledgements. Fix: '
            f'<{tag}><sec>0</sec><nanosec>{HEARTBEAT_PERIOD_MS * 1_000_000}</nanosec></{tag}> '
            'under <times> there')


def _merge_nack_response(writer: ElementTree.Element, tag: str, added: list[str]) -> None:
    """Answer requests for lost data at once, unless the file chose a delay (kept as it is)."""
    times = _child(writer, 'times')
    if times.find(tag) is None:
        delay = ElementTree.SubElement(times, tag)
        ElementTree.SubElement(delay, 'sec').text = '0'
        ElementTree.SubElement(delay, 'nanosec').text = str(NACK_RESPONSE_DELAY_MS * 1_000_000)
        added.append(NACK_RESPONSE_ADDED)


# --- the participant's transports ---------------------------------------------------------------


def _merge_participant(profiles: ElementTree.Element, local_discovery: bool, path: str,
                       added: list[str], shortfalls: list[str]) -> bool:
    """Give the default participant the bridge's segment; return whether it has one now."""
    participant = next((element for element in profiles
                        if element.tag == 'participant' and _is_default(element)), None)
    if participant is None:
        participant = ElementTree.Element('participant', {
            'profile_name': _free_name(profiles, 'acres_bridge_participant'),
            'is_default_profile': 'true'})
        profiles.append(participant)
    rtps = _child(participant, 'rtps')
    if rtps.find('builtinTransports') is not None:
        return False    # the user chose Fast DDS's built-in set by name
    descriptors = profiles.find('transport_descriptors')
    by_id = {}
    if descriptors is not None:
        by_id = {_text(descriptor, 'transport_id'): descriptor
                 for descriptor in descriptors.findall('transport_descriptor')}
    chosen = [(item.text or '').strip() for item in rtps.findall('userTransports/transport_id')]
    if chosen:
        shared = [by_id[name] for name in chosen
                  if name in by_id and (_text(by_id[name], 'type') or '').upper() == 'SHM']
        if not shared:
            shortfalls.append(
                f'no shared-memory transport among the transports of {path} '
                f'({", ".join(chosen)}): clouds and images go over UDP in fragments or a '
                'segment of Fast DDS\'s default 512 KiB, and a best-effort reader such as '
                '`ros2 topic hz` loses most of them. Fix: a <transport_descriptor> of <type>SHM'
                f'</type> with <segment_size>{SHM_SEGMENT_BYTES}</segment_size>, named in '
                '<userTransports>')
        return any([_merge_segment(descriptor, path, added, shortfalls)
                    for descriptor in shared])
    if descriptors is None:
        descriptors = ElementTree.Element('transport_descriptors')
        profiles.insert(0, descriptors)
    builtin = _text(rtps, 'useBuiltinTransports')
    names = [_free_id(by_id, 'acres_bridge_shm')]
    _descriptor(descriptors, names[0], 'SHM', segment=True)
    if builtin is None:
        ElementTree.SubElement(rtps, 'useBuiltinTransports').text = 'false'
        if not local_discovery:
            # Replacing the built-in transports keeps both kinds: UDPv4 goes back in.
            names.append(_free_id(by_id, 'acres_bridge_udp'))
            _descriptor(descriptors, names[1], 'UDPv4', segment=False)
    users = _child(rtps, 'userTransports')
    for name in names:
        ElementTree.SubElement(users, 'transport_id').text = name
    added.append(f'a {SHM_SEGMENT_BYTES >> 20} MiB shared-memory segment')
    return True


def _merge_segment(descriptor: ElementTree.Element, path: str, added: list[str],
                   shortfalls: list[str]) -> bool:
    """Give a user's shared-memory transport the bridge's segment; return whether it has one."""
    name = _text(descriptor, 'transport_id')
    size = _text(descriptor, 'segment_size')
    if size is None:
        ElementTree.SubElement(descriptor, 'segment_size').text = str(SHM_SEGMENT_BYTES)
        if descriptor.find('maxMessageSize') is None:
            ElementTree.SubElement(descriptor, 'maxMessageSize').text = str(SHM_SEGMENT_BYTES)
        added.append(f'a {SHM_SEGMENT_BYTES >> 20} MiB segment for the shared-memory '
                     f'transport "{name}"')
        sized = True
    elif not size.isdigit() or int(size) < SHM_SEGMENT_BYTES:
        shortfalls.append(
            f'the shared-memory segment stays {size} bytes (the transport "{name}" of {path}): '
            'clouds (0.9 MB) and images (1.4 MB) fill it, and a best-effort reader such as '
            '`ros2 topic hz` loses them (7 of 31 clouds with the 512 KiB default). Fix: '
            f'<segment_size>{SHM_SEGMENT_BYTES}</segment_size> in that transport_descriptor')
        sized = False
    else:
        sized = True
    if descriptor.find('port_queue_capacity') is None:
        ElementTree.SubElement(descriptor, 'port_queue_capacity').text = str(
            SHM_PORT_QUEUE_CAPACITY)
        added.append(f'a port queue of {SHM_PORT_QUEUE_CAPACITY}')
    return sized


def _descriptor(descriptors: ElementTree.Element, name: str, kind: str, *, segment: bool) -> None:
    descriptor = ElementTree.SubElement(descriptors, 'transport_descriptor')
    ElementTree.SubElement(descriptor, 'transport_id').text = name
    ElementTree.SubElement(descriptor, 'type').text = kind
    if segment:
        ElementTree.SubElement(descriptor, 'segment_size').text = str(SHM_SEGMENT_BYTES)
        ElementTree.SubElement(descriptor, 'port_queue_capacity').text = str(
            SHM_PORT_QUEUE_CAPACITY)
        ElementTree.SubElement(descriptor, 'maxMessageSize').text = str(SHM_SEGMENT_BYTES)


# --- helpers ---------------------------------------------------------------------------------


def _local(tag: str) -> str:
    return tag.rpartition('}')[2]


def _is_default(profile: ElementTree.Element) -> bool:
    return profile.get('is_default_profile', '').strip().lower() == 'true'


def _child(parent: ElementTree.Element, tag: str) -> ElementTree.Element:
    child = parent.find(tag)
    return child if child is not None else ElementTree.SubElement(parent, tag)


def _text(parent: ElementTree.Element, path: str) -> str | None:
    element = parent.find(path)
    if element is None:
        return None
    return (element.text or '').strip()


def _free_name(profiles: ElementTree.Element, name: str) -> str:
    taken = {element.get('profile_name') for element in profiles}
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f'{name}_{number}'
    return candidate


def _free_id(by_id: dict, name: str) -> str:
    candidate, number = name, 1
    while candidate in by_id:
        number += 1
        candidate = f'{name}_{number}'
    return candidate


def _duration_s(element: ElementTree.Element) -> float | None:
    """Return a Fast DDS duration (``<sec>``, ``<nanosec>``) in seconds; None if unreadable."""
    total = 0.0
    for part, scale in (('sec', 1.0), ('nanosec', 1e-9)):
        value = _text(element, part)
        if value is None:
            continue
        if value.upper() == 'DURATION_INFINITY':
            return float('inf')
        try:
            total += int(value) * scale
        except ValueError:
            return None
    return total
