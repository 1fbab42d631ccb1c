"""Java's UTF-8 decoding of malformed bytes (:mod:`kafkalog._java_utf8`), which Kafka's header keys, message
strings and the dump's ``StringDecoder`` go through.

The expected strings are what JDK 17's ``new String(bytes, StandardCharsets.UTF_8)`` returns for each input (run
once, by hand, to write this table; the dump oracle, tests/oracle/test_dump_oracle.py, checks the same bytes
through Kafka's own tool)."""

from __future__ import annotations

import struct
from types import ModuleType

import crcmod.predefined
import pytest

from kafkalog._java_utf8 import java_utf8
from kafkalog.record import MemoryRecords
from kafkalog.record.batch import build_default_batch

R = "\ufffd"
crc32c = crcmod.predefined.mkCrcFun("crc-32c")

#: input bytes, Java's string
JAVA = [
    (b"\xed\xa0\x80", R),  # an encoded surrogate: one replacement (Python's "replace" writes three)
    (b"\xed\xa0", R),  # a surrogate's lead cut short by the end: one (Python: two)
    (b"\xed\xa0A", R + "A"),
    (b"\xed\xbf\xbf", R),
    (b"\xc0\x80", R * 2),  # overlong forms: a replacement a byte
    (b"\xe0\x80\x80", R * 3),
    (b"\xf0\x80\x80\x80", R * 4),
    (b"\xf4\x90\x80\x80", R * 4),  # past U+10FFFF
    (b"\xe2\x82", R),
    (b"\xe2\x82A", R + "A"),
    (b"\xf0\x9f\x98A", R + "A"),
    (b"\xf0\x9fA", R + "A"),
    (b"\x80\x80", R * 2),
    (b"\xf8\x88\x80\x80\x80", R * 5),
    (b"\xc3", R),
    (b"\xf0\x9f\x98", R),
    (b"\xe0\xa0", R),
    (b"\xe0\xa0A", R + "A"),
    (b"\xf0\x9f\x98\x80", "\U0001F600"),
    (b"ok \xe2\x82\xac", "ok \u20ac"),
]


@pytest.mark.parametrize(("data", "text"), JAVA, ids=[d.hex() for d, _ in JAVA])
def test_malformed_utf8_reads_as_javas_string(data: bytes, text: str) -> None:
    assert java_utf8(data) == text


def test_a_header_key_with_an_encoded_surrogate_reads_as_kafka_reads_it(impl: ModuleType) -> None:
    """Found by the dump oracle: Kafka 3.9.2's tool prints ``headerKeys: [\ufffd]`` for the key ``ED A0 80``, where
    the decoders printed three replacement characters; both kernel twins now decode as Java does."""
    placeholder = "\x01\x01\x01"
    batch = bytearray(build_default_batch([(b"k", b"v", 0, [(placeholder, b"h")])], base_offset=0))
    at = batch.index(placeholder.encode())
    batch[at:at + 3] = b"\xed\xa0\x80"
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    records = [record for b in MemoryRecords(bytes(batch)).batches() for record in b]
    assert [[key for key, _ in record.headers] for record in records] == [[R]]


def test_a_header_key_with_an_encoded_surrogate_reaches_arrow_as_kafka_reads_it(impl: ModuleType) -> None:
    """The Spark source's Arrow column of header keys (kafkalog.spark.arrow) takes the same string as the record
    reader above, Java's, where it used Python's ``"replace"`` (three replacement characters)."""
    pytest.importorskip("pyarrow")
    from kafkalog.spark.arrow import to_arrow

    placeholder = "\x01\x01\x01"
    batch = bytearray(build_default_batch([(b"k", b"v", 0, [(placeholder, b"h"), ("ok", b"")])], base_offset=0))
    at = batch.index(placeholder.encode())
    batch[at:at + 3] = b"\xed\xa0\x80"
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    rows = [row for columns in MemoryRecords(bytes(batch)).record_columns()
            for row in to_arrow(columns, topic="t", partition=0, include_headers=True).to_pylist()]
    assert [[h["key"] for h in row["headers"]] for row in rows] == [[R, "ok"]]
