"""The producer's record inputs: the ``split_records`` and ``encode_v2_record_inputs`` kernels, with each twin.

Every accepted form of a record must give the columns and the records section the column kernel
(``encode_v2_records``) gives; every bad record must raise the plain twin's error, and the first bad
record in input order must be the one reported, before any field is converted or encoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple

import pytest

from kafkalog import _core_py


class Row(NamedTuple):
    key: Any
    value: Any
    timestamp: Any = None


class Produced:
    """A record given as an object with attributes, as a consumer's Record is."""

    def __init__(self, key: Any, value: Any, timestamp: Any = None, headers: Any = None) -> None:
        self.key, self.value, self.timestamp, self.headers = key, value, timestamp, headers


class KeyValueOnly:
    def __init__(self, key: Any, value: Any) -> None:
        self.key, self.value = key, value


def good_records() -> list[Any]:
    return [
        (b"k0", b"v0"),
        (b"k1", b"v1", 1_700_000_000_000),
        [b"k2", bytearray(b"v2"), 5, [("h", b"x"), ("empty", None)]],
        (None, None, -1, []),
        (memoryview(b"k4"), b"", None, None),
        Row(b"k5", b"v5", 9),
        Produced(b"k6", memoryview(bytearray(b"v6")), 2**63 - 1, [["list-pair", bytearray(b"y")]]),
        KeyValueOnly(b"k7", None),
        (b"k8", b"v" * 300, 3, ()),
        (b"k9", b"v9", True),
        (b"k10", b"v10", 7, [("\u00e9t\u00e9", b"unicode key")]),
    ]


def test_split_records_gives_the_plain_columns(impl: ModuleType) -> None:
    keys, values, timestamps, headers = impl.split_records(good_records())
    expected = _core_py.split_records(good_records())
    assert (keys, values, timestamps, headers) == expected
    assert timestamps[:4] == [-1, 1_700_000_000_000, 5, -1]
    assert headers[2] == [("h", b"x"), ("empty", None)] and headers[3] is None and headers[8] is None
    assert impl.split_records([]) == ([], [], [], [])


@pytest.mark.parametrize("base_timestamp", [None, 1_000])
def test_encode_record_inputs_is_the_column_encode(impl: ModuleType, base_timestamp: int | None) -> None:
    keys, values, timestamps, headers = _core_py.split_records(good_records())
    base = timestamps[0] if base_timestamp is None else base_timestamp
    expected = _core_py.encode_v2_records(timestamps, keys, values, headers, base)
    body, count, first, largest = impl.encode_v2_record_inputs(good_records(), base_timestamp)
    assert body == expected
    assert (count, first, largest) == (len(keys), -1, 2**63 - 1)


def test_encode_record_inputs_from_a_generator_and_nothing(impl: ModuleType) -> None:
    def generated() -> Iterator[tuple[bytes, bytes, int]]:
        for i in range(3000):  # past the compiled twin's first array sizes
            yield b"key-%d" % i, b"value-%d" % i, 100 + i % 7

    body, count, first, largest = impl.encode_v2_record_inputs(generated())
    keys, values, timestamps, headers = _core_py.split_records(generated())
    assert body == _core_py.encode_v2_records(timestamps, keys, values, headers, 100)
    assert (count, first, largest) == (3000, 100, 106)
    assert impl.encode_v2_record_inputs([]) == (b"", 0, -1, -1)
    assert impl.encode_v2_record_inputs((), 5) == (b"", 0, -1, -1)


BAD = [
    ((b"k",), ValueError, "got a sequence of 1"),
    ([b"k", b"v", 1, [], "x"], ValueError, "got a sequence of 5"),
    (b"not-a-record", TypeError, "not bytes"),
    (5, TypeError, "not int"),
    ({"key": b"k", "value": b"v"}, TypeError, "not dict"),
    ((b"k", b"v", 1.5), TypeError, "timestamp is an int (milliseconds), not float"),
    (("k", 5, "ts"), TypeError, "not str"),  # the timestamp's type is checked first
    (("k", b"v"), TypeError, "A record key must be bytes-like or None, not str"),
    ((b"k", 5), TypeError, "A record value must be bytes-like or None, not int"),
    ((b"k", b"v", -2), ValueError, "Invalid negative timestamp -2"),
    ((b"k", b"v", -(2**70)), ValueError, f"Invalid negative timestamp {-(2**70)}"),
    ((b"k", b"v", 2**63), ValueError, f"Invalid timestamp {2**63}: larger than a Java long holds"),
    ((b"k", b"v", 1, [("h", b"x", b"y")]), TypeError, "header is a (key, value) pair"),
    ((b"k", b"v", 1, ["hx"]), TypeError, "header is a (key, value) pair"),
    ((b"k", b"v", 1, [(None, b"x")]), ValueError, "Invalid null header key found in headers"),
    ((b"k", b"v", 1, [(b"h", b"x")]), TypeError, "A header key is a str, not bytes"),
    ((b"k", b"v", 1, [("h", "x")]), TypeError, "A header value is bytes-like or None, not str"),
    (Produced("k", b"v"), TypeError, "A record key must be bytes-like or None, not str"),
]


@pytest.mark.parametrize(("record", "error", "message"), BAD)
@pytest.mark.parametrize("kernel", ["split_records", "encode_v2_record_inputs"])
def test_bad_records_raise_the_plain_errors(impl: ModuleType, kernel: str, record: Any, error: type[Exception],
                                            message: str) -> None:
    records = [(b"fine", b"fine", 1)] * 3 + [record] + [(b"fine", b"fine", 1)]
    with pytest.raises(error) as raised:
        getattr(impl, kernel)(records)
    with pytest.raises(error) as plain:
        getattr(_core_py, kernel)(records)
    assert message in str(raised.value)
    assert str(raised.value) == str(plain.value)


def test_the_first_bad_record_is_reported_before_any_encode(impl: ModuleType) -> None:
    """A header key UTF-8 cannot encode fails only in the encode, after every record passed its checks: a later
    record's type error wins, as in the plain twin, which checks them all first."""
    records = [(b"k", b"v", 1, [("\ud800", b"x")]), (b"k", "str value")]
    with pytest.raises(TypeError, match="value must be bytes-like"):
        impl.encode_v2_record_inputs(records)
    with pytest.raises(UnicodeEncodeError):
        impl.encode_v2_record_inputs(records[:1])

    consumed = []

    def stops_at_the_bad_one() -> Iterator[Any]:
        for record in [(b"a", b"1"), (b"b", 2), (b"c", b"3")]:
            consumed.append(record)
            yield record

    with pytest.raises(TypeError, match="value must be bytes-like or None, not int"):
        impl.encode_v2_record_inputs(stops_at_the_bad_one())
    assert len(consumed) == 2
