# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor path: one agent's stream from its socket to its topics.

A frame is read and parsed (protocol/), converted into a pooled message (message_pool,
conversions/), handed to a sender thread (outbox) and published from its bytes (rcl_publish);
images may also be compressed (image_encoder). agent_processes runs a stream in a process of its
own.
"""
