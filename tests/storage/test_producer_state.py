"""Producer-state snapshot files (kafkalog.producer_state) against Kafka's ``ProducerStateManager.readSnapshot``
(storage 3.8.0), and the Kafka suites of the producer state that kafkalog does not keep yet.

kafkalog reads the ``<offset>.snapshot`` files a broker writes (for ``kafkalog dump`` and ``verify``); the tests
below write snapshots byte by byte, in Kafka's schema version 1, and read them back, good and bad, and read the
empty snapshots of the golden broker directories.

Kafka tests not ported:

- ``testBasicIdMapping``, ``testAppendTxnMarkerWithNoProducerState``, ``testProducerSequenceWrapAround``,
  ``testProducerSequenceWithWrapAroundBatchRecord``, ``testProducerSequenceInvalidWrapAround``,
  ``testNoValidationOnFirstEntryWhenLoadingLog``, ``testControlRecordBumpsProducerEpoch``,
  ``testTxnFirstOffsetMetadataCached``, ``testSkipEmptyTransactions``, ``testHasLateTransaction``,
  ``testHasLateTransactionInitializedAfterReload``, ``testHasLateTransactionUpdatedAfterPartialTruncation``,
  ``testHasLateTransactionUpdatedAfterFullTruncation``, ``testLastStableOffsetCompletedTxn``,
  ``testPrepareUpdateDoesNotMutate``, ``updateProducerTransactionState``,
  ``testOutOfSequenceAfterControlRecordEpochBump``, ``testNonTransactionalAppendWithOngoingTransaction``,
  ``testTruncateAndReloadRemovesOutOfRangeSnapshots``, ``testTakeSnapshot``, ``testFetchSnapshotEmptySnapShot``,
  ``testRecoverFromSnapshotUnfinishedTransaction``, ``testRecoverFromSnapshotFinishedTransaction``,
  ``testRecoverFromSnapshotEmptyTransaction``, ``testProducerStateAfterFencingAbortMarker``,
  ``testRemoveExpiredPidsOnReload``, ``testAcceptAppendWithoutProducerStateOnReplica``,
  ``testAcceptAppendWithSequenceGapsOnReplica``, ``testDeleteSnapshotsBefore``, ``testTruncateFullyAndStartAt``,
  ``testReloadSnapshots``, ``testFirstUnstableOffsetAfterTruncation``,
  ``testLoadFromSnapshotRetainsNonExpiredProducers``, ``testSkipSnapshotIfOffsetUnchanged``,
  ``testPidExpirationTimeout``, ``testFirstUnstableOffset``, ``testProducersWithOngoingTransactionsDontExpire``,
  ``testSequenceNotValidatedForGroupMetadataTopic``, ``testOldEpochForControlRecord``, ``testCoordinatorFencing``,
  ``testCoordinatorFencedAfterReload``, ``testLoadFromEmptySnapshotFile``, ``testLoadFromTruncatedSnapshotFile``,
  ``testLoadFromCorruptSnapshotFile``, ``testAppendEmptyControlBatch``,
  ``testRemoveStraySnapshotsKeepCleanShutdownSnapshot``, ``testRemoveAllStraySnapshots``,
  ``testRemoveAndMarkSnapshotForDeletion``, ``testRemoveAndMarkSnapshotForDeletionAlreadyDeleted``,
  ``testEntryForVerification``, ``testSequenceAndEpochInVerificationEntry``,
  ``testThrowOutOfOrderSequenceWithVerificationSequenceCheck``, ``testVerificationStateEntryExpiration``: Kafka's
  ProducerStateManager (sequence and epoch checks, transactions and the first unstable offset, expiration,
  snapshots taken, loaded, truncated and removed with the log), which kafkalog does not keep yet; it comes with the
  producer-state issue (issue 20).
- ``testEqualsAndHashCode``, ``testVerify``: ``VerificationGuard``, the transaction-verification token of the
  producer state (KIP-890), which comes with it (issue 20).
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog import _impl
from kafkalog.producer_state import BatchMetadata, CorruptSnapshotError, ProducerStateEntry, read_snapshot
from tests.support.golden_data import SHARAWEIL

_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")


def snapshot(entries: list[tuple[int, ...]], version: int = 1) -> bytes:
    """A snapshot as ``ProducerStateManager.writeSnapshot`` lays it out: version, CRC-32C of everything after
    the CRC field, entry count, then the entries (producer id, epoch, last sequence, last offset, offset delta,
    timestamp, coordinator epoch, current transaction's first offset)."""
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", version, _impl.core.crc32c(body)) + body


def test_read_snapshot(impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000042.snapshot"
    path.write_bytes(snapshot([(7, 2, 9, 41, 4, 1_700_000_000_000, 3, 38), (8, 0, -1, -1, 0, -1, -1, -1)]))
    assert read_snapshot(path) == [
        ProducerStateEntry(7, 2, 3, 1_700_000_000_000, BatchMetadata(9, 41, 4, 1_700_000_000_000), 38),
        ProducerStateEntry(8, 0, -1, -1, None, None),
    ]
    assert read_snapshot(path)[0].batch_metadata.first_seq == 5  # type: ignore[union-attr]
    # A sequence that wrapped past Integer.MAX_VALUE (DefaultRecordBatch.decrementSequence).
    assert BatchMetadata(2, 100, 5, 0).first_seq == 2**31 - 3


def test_golden_snapshots_are_empty(golden: Path) -> None:
    """The broker-written snapshots of the golden dirs: version 1, a valid CRC, no producer (DETAILS.md)."""
    snapshots = sorted(golden.glob(f"{SHARAWEIL}/**/*.snapshot"))
    assert len(snapshots) == 3
    for path in snapshots:
        assert path.read_bytes()[:2] == b"\x00\x01"
        assert read_snapshot(path) == []


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda data: data[:5], "shorter than the 10-byte header"),
    (lambda data: b"\x00\x02" + data[2:], "unknown file version 2"),
    (lambda data: data[:-1] + bytes([data[-1] ^ 1]), "CRC is no longer valid"),
    (lambda data: data + b"\x00" * 3, "CRC is no longer valid"),
])
def test_bad_snapshots_are_refused(impl: ModuleType, tmp_path: Path, mutate: object, message: str) -> None:
    """Kafka's ``readSnapshot``: an unknown version or a bad CRC is a CorruptSnapshotException."""
    path = tmp_path / "00000000000000000001.snapshot"
    path.write_bytes(mutate(snapshot([(7, 2, 9, 41, 4, 5, 3, -1)])))  # type: ignore[operator]
    with pytest.raises(CorruptSnapshotError, match=message):
        read_snapshot(path)


def test_entry_count_must_match_the_size(impl: ModuleType, tmp_path: Path) -> None:
    """A count the bytes do not hold (negative, or more entries than follow) fails the schema check, even with
    a CRC that matches, instead of reading past the file."""
    for count in (-1, 2, 2**31 - 1):
        body = struct.pack(">i", count) + _ENTRY.pack(7, 2, 9, 41, 4, 5, 3, -1)
        path = tmp_path / f"count{count}.snapshot"
        path.write_bytes(struct.pack(">hI", 1, _impl.core.crc32c(body)) + body)
        with pytest.raises(CorruptSnapshotError, match="failed schema validation"):
            read_snapshot(path)
