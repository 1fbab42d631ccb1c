"""Bad bytes where the layouts expect a manifest, a chunk-size list or a ``__remote_log_metadata`` record: any
change of a valid one gives the layout's own error or reads, never another exception."""

from __future__ import annotations

import contextlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog.errors import CorruptRemoteSegmentError
from kafkalog.messages.reader import MessageReadError
from kafkalog.remote.aiven_manifest import decode_chunk_sizes, encode_chunk_sizes, parse_manifest
from kafkalog.remote.metadata import deserialize
from tests.remote.test_aiven_manifest import ENCODED_CHUNKS, manifest
from tests.remote.test_metadata import partition_delete, segment_metadata, segment_update, snapshot

VARIABLE = manifest(compression=True, chunkIndex={"type": "variable", "originalChunkSize": 100,
                                                  "originalFileSize": 250, "transformedChunks": ENCODED_CHUNKS})
RECORDS = [segment_metadata(custom=b"abc"), segment_update(), partition_delete(), snapshot()]


def mutate(data: bytes, cuts: list[tuple[int, int]], truncate: int | None) -> bytes:
    out = bytearray(data)
    for position, value in cuts:
        out[position % len(out)] = value
    return bytes(out[:truncate] if truncate is not None else out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
       st.none() | st.integers(0, 600))
def test_mutated_manifests(cuts: list[tuple[int, int]], truncate: int | None) -> None:
    with contextlib.suppress(CorruptRemoteSegmentError):
        parse_manifest(mutate(VARIABLE.encode(), cuts, truncate))


def test_deeply_nested_manifest() -> None:
    try:
        parse_manifest("[" * 100_000 + "]" * 100_000)
    except CorruptRemoteSegmentError:
        return
    raise AssertionError("a nested list is not a manifest")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**31 - 1), max_size=20),
       st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=3), st.none() | st.integers(0, 100))
def test_mutated_chunk_sizes(values: list[int], cuts: list[tuple[int, int]], truncate: int | None) -> None:
    data = encode_chunk_sizes(values)
    assert decode_chunk_sizes(data) == values
    try:
        decoded = decode_chunk_sizes(mutate(data, cuts, truncate))
    except CorruptRemoteSegmentError:
        return
    assert all(0 <= v < 2**31 for v in decoded)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(RECORDS), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=3),
       st.none() | st.integers(0, 100))
def test_mutated_metadata_records(record: bytes, cuts: list[tuple[int, int]], truncate: int | None) -> None:
    with contextlib.suppress(MessageReadError):
        str(deserialize(mutate(record, cuts, truncate)))


def test_manifest_fixture_is_json() -> None:
    assert json.loads(VARIABLE)["chunkIndex"]["type"] == "variable"
