"""LogOffsetMetadata against Kafka's LogOffsetMetadataTest (storage, 3.8.0:
``storage/src/test/java/org/apache/kafka/storage/internals/log/LogOffsetMetadataTest.java``).

Metadata made from an offset alone (``LogOffsetMetadata(1)``) knows no segment: Kafka's comparisons say
"no" for it and ``positionDiff`` refuses it with a ``KafkaException``, here a
:class:`~kafkalog.errors.KafkaLogError`.
"""

from __future__ import annotations

import pytest

from kafkalog.errors import KafkaLogError
from kafkalog.fetch import UNKNOWN_OFFSET_METADATA, LogOffsetMetadata


def test_on_older_segment() -> None:
    metadata1 = LogOffsetMetadata(1, 0, 1)
    metadata2 = LogOffsetMetadata(5, 4, 2)
    message_only_metadata = LogOffsetMetadata(1)
    assert not UNKNOWN_OFFSET_METADATA.on_older_segment(UNKNOWN_OFFSET_METADATA)
    assert not metadata1.on_older_segment(message_only_metadata)
    assert not message_only_metadata.on_older_segment(metadata1)
    assert not metadata1.on_older_segment(metadata1)
    assert not metadata2.on_older_segment(metadata1)
    assert metadata1.on_older_segment(metadata2)


def test_position_diff() -> None:
    metadata1 = LogOffsetMetadata(1)
    metadata2 = LogOffsetMetadata(5, 0, 5)
    with pytest.raises(KafkaLogError) as info:
        metadata1.position_diff(metadata2)
    assert str(info.value).endswith("since it only has message offset info")

    with pytest.raises(KafkaLogError) as info:
        metadata2.position_diff(metadata1)
    assert str(info.value).endswith("since it only has message offset info")

    metadata3 = LogOffsetMetadata(15, 10, 5)
    with pytest.raises(KafkaLogError) as info:
        metadata3.position_diff(metadata2)
    assert str(info.value).endswith("since they are not on the same segment")

    metadata4 = LogOffsetMetadata(40, 10, 100)
    assert metadata4.position_diff(metadata3) == 95


def test_message_offset_only() -> None:
    metadata1 = LogOffsetMetadata(1)
    metadata2 = LogOffsetMetadata(1, 0, 1)
    assert UNKNOWN_OFFSET_METADATA.message_offset_only
    assert not metadata2.message_offset_only
    assert metadata1.message_offset_only


def test_on_same_segment() -> None:
    metadata1 = LogOffsetMetadata(1, 0, 1)
    metadata2 = LogOffsetMetadata(5, 4, 2)
    metadata3 = LogOffsetMetadata(10, 4, 200)
    assert not metadata1.on_same_segment(metadata2)
    assert metadata2.on_same_segment(metadata3)

    metadata4 = LogOffsetMetadata(50)
    metadata5 = LogOffsetMetadata(100)
    assert not metadata4.on_same_segment(metadata5)


def test_str_is_kafkas_to_string() -> None:
    """The form Kafka's ``toString`` gives, which the ``positionDiff`` messages carry."""
    assert str(LogOffsetMetadata(40, 10, 100)) == "(offset=40, segment=[10:100])"
    assert str(LogOffsetMetadata(1)) == "(offset=1, segment=[-1:-1])"
    with pytest.raises(KafkaLogError, match=r"^\(offset=1, segment=\[-1:-1\]\) cannot compare its segment "
                                            r"position with \(offset=5, segment=\[0:5\]\)"):
        LogOffsetMetadata(1).position_diff(LogOffsetMetadata(5, 0, 5))
