"""Kafka's messages: the records of its internal topics (and, to come, of its wire protocol), read as Kafka's
generated message classes read them, from Kafka's own JSON message schemas (:mod:`kafkalog.messages.reader`), and
written as those classes write them (:mod:`kafkalog.messages.writer`).

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
    read_version_prefix,
    schema,
    schema_names,
    to_json,
)
from .writer import MessageWriteError, write_message, write_version_prefixed

__all__ = ["FieldSpec", "MessageReadError", "MessageSchema", "MessageWriteError", "Reader", "StructSpec",
           "java_double", "read_api_message", "read_version_prefix", "schema", "schema_names", "to_json",
           "write_message", "write_version_prefixed"]
