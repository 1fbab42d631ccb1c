"""The schema-driven message reader (:mod:`kafkalog.messages.reader`) on hostile bytes (issue 28).

Every decoder of ``kafkalog dump`` for Kafka's internal topics (offsets, transaction log, cluster metadata,
remote log metadata) reads through :class:`~kafkalog.messages.reader.Reader`.  A 30-odd-byte record
whose tagged-field section claimed 2^31 - 1 fields, the first of negative size, moved the reader's position
back to the tag it had just read, and the loop went round two billion times.  Kafka's reader fails at once
(``readArray`` of a negative size throws), and so must this one; and no count or length may make it read,
loop or allocate past what the bytes left can hold.

The reader is plain Python (no kernel twin), so these tests do not take the ``impl`` fixture.  A reader that
loops is caught by :func:`bounded_reads`, which counts the reader's primitive reads and fails the test past
a bound proportional to the input, instead of waiting for a hang.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog.messages.reader import MessageReadError, Reader, schema, schema_names
from tests.support.kraft_metadata import uvarint


def compact(text: str) -> bytes:
    return uvarint(len(text.encode()) + 1) + text.encode()


TOPIC_ID = bytes(range(16))
#: TopicRecord v0 (flexible) without its tagged-field section: a compact name, then the topic id.
TOPIC_BODY = compact("t") + TOPIC_ID
#: A tagged-field section that claims 2^31 - 1 fields; the first, of unknown tag 99, has size -6 (the varint
#: 2^32 - 6), which is the length of the tag and the size: read as a size, it goes back to the tag.
HOSTILE_TAGS = uvarint(2**31 - 1) + uvarint(99) + uvarint(2**32 - 6)


class RunawayReadError(AssertionError):
    """The reader made more primitive reads than its input can justify: it is looping."""


@contextlib.contextmanager
def bounded_reads(limit: int) -> Iterator[list[int]]:
    """Fail with :class:`RunawayReadError` when the reader takes bytes more than ``limit`` times (each read
    of a healthy reader moves forward; zero-byte reads are bounded by the lengths read before them).  Yields
    a one-item list holding the count."""
    calls = [0]
    real = Reader._take

    def counting(self: Reader, n: int) -> bytes:
        calls[0] += 1
        if calls[0] > limit:
            raise RunawayReadError(f"more than {limit} reads of a {len(self.data)}-byte message")
        return real(self, n)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Reader, "_take", counting)
        yield calls


def read_topic_record(body: bytes) -> dict[str, object]:
    return schema("TopicRecord").read(body, 0)[0]


def test_a_healthy_topic_record_reads() -> None:
    assert read_topic_record(TOPIC_BODY + b"\x00") == {"name": "t", "topicId": "AAECAwQFBgcICQoLDA0ODw"}


def test_tagged_field_count_past_the_bytes_left_fails_at_once() -> None:
    """The issue's record: before, two billion rounds over the same six bytes; now one error, after five
    reads (the count's varint)."""
    with bounded_reads(1000) as calls, pytest.raises(MessageReadError) as info:
        read_topic_record(TOPIC_BODY + HOSTILE_TAGS)
    assert str(info.value) == "Tried to read 2147483647 tagged field(s), but there are only 6 bytes remaining."
    assert calls[0] < 30


def test_tagged_field_count_is_bounded_by_two_bytes_a_field() -> None:
    """Each tagged field takes at least a one-byte tag and a one-byte size: three fields fit six bytes, four
    do not (and are refused before the first is read)."""
    three_empty = uvarint(3) + (uvarint(99) + uvarint(0)) * 3
    assert read_topic_record(TOPIC_BODY + three_empty)["name"] == "t"
    with pytest.raises(MessageReadError, match=r"Tried to read 4 tagged field\(s\), but there are only 6 bytes"):
        read_topic_record(TOPIC_BODY + uvarint(4) + (uvarint(99) + uvarint(0)) * 3)


def test_unknown_tagged_field_of_negative_size_fails() -> None:
    """A count the bytes can hold, then a negative size: Kafka's ``readArray`` throws (``new byte[-6]``);
    before, the position went back to the tag, the same field was read three times and the record read as
    if nothing were wrong."""
    with bounded_reads(1000), pytest.raises(MessageReadError,
                                            match=r"Error reading byte array of -6 byte\(s\): a negative size"):
        read_topic_record(TOPIC_BODY + uvarint(1) + uvarint(99) + uvarint(2**32 - 6))


def test_negative_tagged_field_count_reads_no_field() -> None:
    """A count past 2^31 - 1 is a negative Java int: Kafka's loop reads no field, and so does this one."""
    assert read_topic_record(TOPIC_BODY + uvarint(2**32 - 1))["name"] == "t"


def test_compact_length_wraps_as_a_java_int() -> None:
    """``readUnsignedVarint() - 1`` in Java: a varint of 2^31 is Integer.MIN_VALUE, less one is
    Integer.MAX_VALUE, a length Kafka refuses; before, it read as a null (here a non-nullable one)."""
    with pytest.raises(MessageReadError, match="string field name had invalid length 2147483647"):
        read_topic_record(uvarint(2**31) + b"t" + TOPIC_ID + b"\x00")
    # a varint of 2^31 + 1 and above is a negative length, a null, as Kafka reads it
    with pytest.raises(MessageReadError, match="non-nullable field name was serialized as null"):
        read_topic_record(uvarint(2**31 + 1) + TOPIC_ID + b"\x00")


def test_varint_bits_past_32_are_dropped_as_java_drops_them() -> None:
    """The fifth byte of an unsigned varint carries bits 28 to 34; Java's ``int`` keeps bits 28 to 31.  A
    count of 2^33 + 1 is one field."""
    assert read_topic_record(TOPIC_BODY + uvarint(2**33 + 1) + uvarint(99) + uvarint(0))["name"] == "t"


@pytest.mark.parametrize(("pos", "ok"), [(0, True), (len(TOPIC_BODY) + 1, True), (-1, False), (99, False)])
def test_reader_position_is_inside_the_message(pos: int, ok: bool) -> None:
    data = TOPIC_BODY + b"\x00"
    if ok:
        Reader(data, pos, schema("TopicRecord"))
    else:
        with pytest.raises(ValueError, match=f"position {pos} is outside"):
            Reader(data, pos, schema("TopicRecord"))


# -- fuzz ------------------------------------------------------------------------------------------

#: Byte runs that reach the length and count checks: small varints, the Java int edges as varints, a
#: varint that never ends, the int16/int32 -1 of a null, a long zero run.
TOKENS = [b"\x00", b"\x01", b"\x02", b"\x05", b"\x7f", uvarint(2**31 - 1), uvarint(2**31), uvarint(2**31 + 1),
          uvarint(2**32 - 6), uvarint(2**32 - 1), b"\xff\xff\xff\xff\xff\x01", b"\xff\xff", b"\xff\xff\xff\xff",
          b"\x00" * 8, TOPIC_ID]
VERSIONED = [(name, version) for name in schema_names()
             for version in range(schema(name).valid[0], min(schema(name).valid[1], 20) + 1)]


def read_bounded(name: str, version: int, data: bytes) -> None:
    """Read ``data`` as ``name`` at ``version``: a result or a MessageReadError, in a number of reads that
    grows with the input, never another exception and never a loop."""
    with bounded_reads(4 * len(data) + 100), contextlib.suppress(MessageReadError):
        schema(name).read(data, version)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VERSIONED), st.lists(st.sampled_from(TOKENS) | st.binary(max_size=6), max_size=24))
def test_fuzzed_messages_fail_cleanly_and_promptly(versioned: tuple[str, int], parts: list[bytes]) -> None:
    name, version = versioned
    read_bounded(name, version, b"".join(parts))


def test_every_schema_reads_nothing_cleanly() -> None:
    for name, version in VERSIONED:
        read_bounded(name, version, b"")
        read_bounded(name, version, HOSTILE_TAGS * 4)



#: A RegisterBrokerRecord v3 value as a 3.9 broker wrote it (a golden ``__cluster_metadata`` log, offset 7), after
#: its frame: its one tagged field is LogDirs, whose schema writes the tag as a JSON string ("tag": "0").
REGISTER_BROKER_V3 = bytes.fromhex(
    "0000000100445136d85c5f4249a26b942028cc7a920000000000000007030a504c41494e54455854066b61666b6171a400000009"
    "45585445524e414c0a6c6f63616c686f73742384000000060e67726f75702e76657273696f6e0000000100147472616e736163"
    "74696f6e2e76657273696f6e000000020021656c696769626c652e6c65616465722e7265706c696361732e76657273696f6e00"
    "000001000e6b726166742e76657273696f6e0000000100116d657461646174612e76657273696f6e0007001900000100010011"
    "023101e1b4685cf63d6770b336a6f975eb")


def test_a_tag_written_as_a_string_is_the_number() -> None:
    """Found by the dump oracle (Kafka 3.9.2's DumpLogSegments prints ``"logDirs":[...]``): a tagged field whose
    schema gives its tag as a string was taken for an unknown tag, skipped, and left out of the JSON."""
    message = Reader(REGISTER_BROKER_V3, 0, schema("RegisterBrokerRecord")).message(3)
    assert message["logDirs"] == ["MQHhtGhc9j1ncLM2pvl16w"]
    assert list(message)[-2:] == ["inControlledShutdown", "logDirs"]
