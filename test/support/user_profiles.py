# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Fast DDS profiles as users write them, for the tests of the bridge's DDS configuration."""

# A profile that only sets transports, as one that whitelists interfaces does: UDPv4 on the
# loopback interface plus shared memory, no built-in transports, and nothing about writers
# (heartbeat, data sharing) or the segment size. Both Fast DDS 2.x and 3.x read every tag.
TRANSPORTS_ONLY = '''<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <transport_descriptors>
      <transport_descriptor>
        <transport_id>loopback_udp</transport_id>
        <type>UDPv4</type>
        <interfaceWhiteList>
          <address>127.0.0.1</address>
        </interfaceWhiteList>
      </transport_descriptor>
      <transport_descriptor>
        <transport_id>local_shm</transport_id>
        <type>SHM</type>
      </transport_descriptor>
    </transport_descriptors>
    <participant profile_name="loopback_only" is_default_profile="true">
      <rtps>
        <useBuiltinTransports>false</useBuiltinTransports>
        <userTransports>
          <transport_id>loopback_udp</transport_id>
          <transport_id>local_shm</transport_id>
        </userTransports>
      </rtps>
    </participant>
  </profiles>
</dds>
'''


def write_transports_only(folder) -> str:
    """Write :data:`TRANSPORTS_ONLY` into ``folder`` (a pathlib.Path); return the file's path."""
    path = folder / 'transports_only.xml'
    path.write_text(TRANSPORTS_ONLY)
    return str(path)
