"""The bytes of a message to a peer, never an exception: an answer the serialiser cannot write
becomes -32012 (an incident id only) for its request; any other such message is dropped.
"""

from __future__ import annotations

import logging
import secrets

from mcpward.protocol import errors, jsonrpc
from mcpward.protocol.jsonrpc import Message, NotSerialisable

log = logging.getLogger("mcpward.protocol")


def encode_outgoing(message: Message) -> tuple[Message, bytes] | None:
    """(the message that leaves, its bytes), or None if nothing can leave (drop it)."""
    try:
        return message, jsonrpc.dumps(message)
    except NotSerialisable as exc:
        incident = secrets.token_hex(6)
        log.error("internal error %s: a message to a peer is %s; failed closed", incident, exc)
        request_id = message.get("id")
        if "method" in message or not isinstance(request_id, (str, int)):
            return None
        replacement = jsonrpc.error(
            request_id,
            errors.GATEWAY_INTERNAL,
            f"internal error in mcpward (incident {incident}); failed closed",
            {"incident": incident},
        )
        return replacement, jsonrpc.dumps(replacement)
