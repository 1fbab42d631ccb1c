"""Kafka's messages: the records of its internal topics (and, to come, of its wire protocol), read as Kafka's
generated message classes read them, from Kafka's own JSON message schemas (:mod:`kafkalog.messages.reader`).

A layer of its own, below everything that decodes one: the tiered-storage metadata reader
(:mod:`kafkalog.remote.metadata`), dump's decoders and the KRaft metadata reader (:mod:`kafkalog.tools`).  It
imports nothing of kafkalog but its errors.
"""

from .reader import (
    FieldSpec,
    MessageReadError,
    MessageSchema,
    Reader,
    StructSpec,
    java_double,
    read_api_message,
    schema,
    schema_names,
    to_json,
)

__all__ = ["FieldSpec", "MessageReadError", "MessageSchema", "Reader", "StructSpec", "java_double",
           "read_api_message", "schema", "schema_names", "to_json"]
