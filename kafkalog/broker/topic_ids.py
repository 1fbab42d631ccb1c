"""Kafka's UUIDs as the broker writes and reads them: topic ids, cluster ids, directory ids.

Kafka prints a ``Uuid`` as its 16 bytes in URL-safe base64 without padding (``Uuid.toString``): 22 characters, the
form of ``partition.metadata``, ``meta.properties`` and the metadata log.  The protocol carries the 16 bytes.  A new
id is never the zero UUID nor Kafka's reserved ``AAAAAAAAAAAAAAAAAAAAAQ``, and never starts with ``-`` (a command
line would read it as an option), as ``Uuid.randomUuid`` ensures.
"""

from __future__ import annotations

import base64
import uuid

__all__ = ["new_id", "topic_id_text", "topic_uuid"]

_RESERVED = frozenset({"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ"})


def topic_uuid(text: str) -> uuid.UUID:
    """A Kafka UUID in its text form as a :class:`uuid.UUID`."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def topic_id_text(value: uuid.UUID) -> str:
    """A UUID in Kafka's text form (``Uuid.toString``)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def new_id() -> uuid.UUID:
    """A new random id (Kafka: ``Uuid.randomUuid``)."""
    while True:
        value = uuid.uuid4()
        text = topic_id_text(value)
        if text not in _RESERVED and not text.startswith("-"):
            return value
