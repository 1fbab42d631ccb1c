"""Kafka's request and response framing: sizes, headers, and the message type of each API key and version.

A request on the wire (Kafka's protocol guide; ``RequestHeader.json``, ``ResponseHeader.json``, 3.8.0)::

    int32 size                      the bytes that follow; at most socket.request.max.bytes
    int16 request_api_key
    int16 request_api_version
    int32 correlation_id
    string client_id                nullable, int16 length (even in header v2)
    tagged fields                   header v2 only: the request versions that are flexible
    the request body                the API's request message at that version

and its response::

    int32 size
    int32 correlation_id
    tagged fields                   header v1 only: flexible response versions, but never ApiVersions'
    the response body

A request's header version is 2 when its API's version is flexible, else 1; a response's 1 when flexible, else 0,
except ApiVersions, whose response header is always 0 so that a client that does not yet know the broker's versions
can read it (``ApiKeys.responseHeaderVersion``, KIP-511).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any, Final

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map

from .codec import MalformedRequestError, entity_reader, read_nullable_legacy_string, skip_tagged_fields
from .wire_writer import entity_writer

__all__ = ["API_VERSIONS_KEY", "ApiKey", "CloseConnection", "ErrorCode", "MalformedRequestError", "RequestHeader",
           "encode_response", "kio_versions", "parse_request_header", "request_reader", "response_class"]

API_VERSIONS_KEY: Final = 18
_HEADER_PREFIX = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")


class CloseConnection(ConnectionError):
    """Raised by a handler to end its connection without an answer (Kafka: ``RequestChannel.closeConnection``), as a
    produce with ``acks=0`` that failed does, so that the client notices.  A ``ConnectionError``: the connection
    loop ends the connection quietly, as it does when the client goes away."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A request's header: what every request carries before its body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def kio_versions(api_key: int) -> tuple[int, int] | None:
    """The versions of ``api_key`` kio has types for (Kafka 4's supported range), or ``None`` for an unknown key."""
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = schema_name_map[name].keys()
    return min(versions), max(versions)


@functools.lru_cache(maxsize=4096)
def _flexible(api_key: int, version: int, kind: str) -> bool:
    """Whether ``version`` of ``api_key``'s request (``kind`` "request") or response is flexible; a version past
    kio's newest is taken as flexible (every API's newest versions are: Kafka's ``requestHeaderVersion`` for a
    version it does not know answers so too).  Cached, as every request's header asks; bounded, as a client may
    send any of 65,536 versions."""
    lo_hi = kio_versions(api_key)
    assert lo_hi is not None
    lo, hi = lo_hi
    clamped = min(max(version, lo), hi)
    schema = (load_request_schema if kind == "request" else load_response_schema)(api_key, clamped)
    if version > hi:
        return True
    return bool(schema.__flexible__)


@functools.cache
def _known_api(api_key: int) -> bool:
    return kio_versions(api_key) is not None


def parse_request_header(frame: memoryview) -> tuple[RequestHeader, int]:
    """The header at the start of ``frame`` and where the body starts.

    ``RequestHeader`` v1 (int16 key, int16 version, int32 correlation id, then the client id: a nullable string of
    int16 length) or v2 (the same, then tagged fields, of which the header knows none: each is skipped within the
    frame), read field by field rather than through a generic reader, as every request has one.

    Raises:
        MalformedRequestError: an unknown API key, or a header that does not read.
    """
    if len(frame) < _HEADER_PREFIX.size:
        raise MalformedRequestError(f"A request of {len(frame)} byte(s) is too short for a header")
    api_key, api_version, correlation_id = _HEADER_PREFIX.unpack_from(frame, 0)
    if not _known_api(api_key):
        raise MalformedRequestError(f"Unknown API key {api_key}")
    client_id, pos = read_nullable_legacy_string(frame, _HEADER_PREFIX.size)
    if _flexible(api_key, api_version, "request"):
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


_request_readers: dict[tuple[int, int], Any] = {}


def request_reader(api_key: int, version: int) -> Any:
    """The reader of ``api_key``'s request at ``version`` (which kio must have)."""
    reader = _request_readers.get((api_key, version))
    if reader is None:
        reader = _request_readers[(api_key, version)] = entity_reader(load_request_schema(api_key, version))
    return reader


@functools.cache
def response_class(api_key: int, version: int) -> type[Any]:
    """The kio class of ``api_key``'s response at ``version`` (``kio.schema.<api>.v<version>.response``), which kio
    must have: the one lookup of a response type, for the dispatch (a handler's ``ctx.response``) and the
    coordinators (``response_class(request.__api_key__, request.__version__)``, the request's own version).
    Cached: a handful of (key, version) pairs, asked for by every request."""
    return load_response_schema(api_key, version)


_response_flexible: dict[tuple[int, int], bool] = {}


def encode_response(api_key: int, version: int, correlation_id: int, response: Any) -> bytes:
    """The whole frame of ``response`` (size, header, body) to the request with ``correlation_id``.

    The body is written by :mod:`~kafkalog.broker.wire_writer` (kio's bytes, as a list of pieces in which a Fetch's
    record bytes are the ones read from the segment), and the pieces are joined once.
    """
    flexible = _response_flexible.get((api_key, version))
    if flexible is None:
        flexible = _response_flexible[(api_key, version)] = bool(type(response).__flexible__)
    parts: list[Any] = [b"", _SIZE.pack(correlation_id)]
    if flexible and api_key != API_VERSIONS_KEY:
        parts.append(b"\0")  # no tagged fields in the header
    entity_writer(type(response))(parts, response)
    parts[0] = _SIZE.pack(sum(map(len, parts)))
    return b"".join(parts)


class ApiKey:
    """The API keys the broker answers, by name."""

    PRODUCE: Final = 0
    FETCH: Final = 1
    LIST_OFFSETS: Final = 2
    METADATA: Final = 3
    OFFSET_COMMIT: Final = 8
    OFFSET_FETCH: Final = 9
    FIND_COORDINATOR: Final = 10
    JOIN_GROUP: Final = 11
    HEARTBEAT: Final = 12
    LEAVE_GROUP: Final = 13
    SYNC_GROUP: Final = 14
    DESCRIBE_GROUPS: Final = 15
    LIST_GROUPS: Final = 16
    API_VERSIONS: Final = 18
    CREATE_TOPICS: Final = 19
    DELETE_TOPICS: Final = 20
    DELETE_RECORDS: Final = 21
    INIT_PRODUCER_ID: Final = 22
    OFFSET_FOR_LEADER_EPOCH: Final = 23
    ADD_PARTITIONS_TO_TXN: Final = 24
    ADD_OFFSETS_TO_TXN: Final = 25
    END_TXN: Final = 26
    TXN_OFFSET_COMMIT: Final = 28
    DESCRIBE_CONFIGS: Final = 32
    ALTER_CONFIGS: Final = 33
    ALTER_REPLICA_LOG_DIRS: Final = 34
    DESCRIBE_LOG_DIRS: Final = 35
    CREATE_PARTITIONS: Final = 37
    DELETE_GROUPS: Final = 42
    OFFSET_DELETE: Final = 47
    ELECT_LEADERS: Final = 43
    INCREMENTAL_ALTER_CONFIGS: Final = 44
    ALTER_PARTITION_REASSIGNMENTS: Final = 45
    LIST_PARTITION_REASSIGNMENTS: Final = 46
    DESCRIBE_CLUSTER: Final = 60
    DESCRIBE_TRANSACTIONS: Final = 65
    LIST_TRANSACTIONS: Final = 66
    DESCRIBE_TOPIC_PARTITIONS: Final = 75
