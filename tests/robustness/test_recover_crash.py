"""``kafkalog recover --full`` killed with SIGKILL part way (issue 28): the next ordinary open must not trust
what the full recovery had torn down.

A full recovery rebuilds every segment's indexes, those below the checkpointed recovery point too, and a
segment's rebuild starts by emptying its ``.txnindex`` (Kafka: ``LogSegment.recover`` calls
``txnIndex.reset()`` before it appends the aborts again).  A broker's open recovers only the segments from
the checkpointed recovery point on, so a kill between the reset and the rebuild of a segment below that point
used to leave an empty ``.txnindex`` the next open trusted, and read_committed readers got the records of
aborted transactions.

The window is made to happen on purpose, not by timing: the child runs ``python -c`` with
``TransactionIndex.reset`` wrapped so that, right after it has emptied the ``.txnindex`` of the chosen segment,
the process kills itself with SIGKILL.  The parent then opens the log dir as a broker's restart does (a
:class:`~kafkalog.manager.log_manager.LogManager`, which reads the recovery-point checkpoint and finds no clean-shutdown
marker) and reads it read_committed.  The child runs the twin the test runs (``KAFKALOG_PURE_PYTHON`` for the
plain one).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import kafkalog
from kafkalog import MemoryRecords
from kafkalog.checkpoint import RECOVERY_POINT_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.filenames import CLEAN_SHUTDOWN_FILE
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.topic import TopicPartition

TP = TopicPartition("txns", 0)
CHILD_TIMEOUT_S = 60.0

#: ``python -c CHILD PARTITION_DIR TXNINDEX_NAME``: ``kafkalog recover --full PARTITION_DIR``, killed by itself
#: right after the first reset that empties the ``.txnindex`` named ``TXNINDEX_NAME``.
CHILD = r"""
import os, signal, sys
from kafkalog.cli import main
from kafkalog.transaction_index import TransactionIndex

partition_dir, target = sys.argv[1], sys.argv[2]
reset = TransactionIndex.reset


def reset_then_die(self):
    held_entries = self.file.name == target and self.file.stat().st_size > 0
    reset(self)
    if held_entries:
        os.kill(os.getpid(), signal.SIGKILL)


TransactionIndex.reset = reset_then_die
sys.exit(main(["--no-progress", "recover", "--full", partition_dir]))
"""

#: Records whose producer set no timestamp (``RecordBatch.NO_TIMESTAMP``, legal in every format): the segments' time
#: indexes hold no entry, and a reset one (grown to its full size, all zeros) passes the next open's checks, as does
#: a reset offset index, so only the checkpointed recovery point can tell the next open to rebuild the segment.
NO_TIMESTAMP = -1

#: What a read_committed reader is given of the log :func:`_write_log` writes.
COMMITTED = [b"plain", b"committed", b"after", b"last"]
#: ``(producer id, first offset)`` of its aborted transactions.
ABORTED = [(7, 1), (9, 6)]


def _append(log: Log, value: bytes, producer_id: int | None = None) -> None:
    txn: dict[str, Any] = {} if producer_id is None else {
        "producer_id": producer_id, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True}
    offset = log.log_end_offset
    log.append(MemoryRecords.with_records([(None, value, NO_TIMESTAMP)], base_offset=offset,
                                          partition_leader_epoch=0, **txn), assign_offsets=False)


def _end(log: Log, producer_id: int, kind: ControlRecordType) -> None:
    offset = log.log_end_offset
    log.append(MemoryRecords.with_end_transaction_marker(producer_id, 0, EndTransactionMarker(kind, 0),
                                                         base_offset=offset, timestamp=NO_TIMESTAMP,
                                                         partition_leader_epoch=0), assign_offsets=False)


def _write_log(root: Path) -> tuple[Path, int]:
    """A log dir as a broker leaves it after a clean shutdown: one partition of nine segments of one batch each,
    the recovery point checkpointed at the log end.  Producer 7's transaction is aborted by the marker of segment
    2, producer 9's by that of segment 7, so those two segments' ``.txnindex`` files hold one entry each (and no
    time index any entry).  Returns the partition dir and the log end offset."""
    with LogManager(root, LogConfig()) as manager:
        log = manager.create_log(TP)
        for write in (lambda: _append(log, b"plain"), lambda: _append(log, b"aborted", 7),
                      lambda: _end(log, 7, ControlRecordType.ABORT), lambda: _append(log, b"committed", 8),
                      lambda: _end(log, 8, ControlRecordType.COMMIT), lambda: _append(log, b"after"),
                      lambda: _append(log, b"aborted too", 9), lambda: _end(log, 9, ControlRecordType.ABORT),
                      lambda: _append(log, b"last")):
            if log.log_end_offset > 0:
                log.roll()
            write()
        assert log.segments.base_offsets() == list(range(9))
        directory, end = log.dir, log.log_end_offset
    assert end == 9
    return directory, end


def _read_committed(root: Path) -> tuple[list[bytes | None], list[tuple[int, int]]]:
    """Open the log dir as a broker's restart does and read the partition read_committed; returns the values
    and the ``(producer id, first offset)`` of the aborted transactions the log answers."""
    with LogManager(root, LogConfig()) as manager:
        log = manager.get_log(TP)
        assert log is not None
        values = [record.value for record in log.records(isolation="read_committed")]
        aborted = [(txn.producer_id, txn.first_offset)
                   for txn in log.collect_aborted_transactions(0, log.log_end_offset)]
    return values, aborted


@pytest.mark.parametrize("segment", [2, 7])
def test_recover_full_killed_after_a_txnindex_reset(impl: ModuleType, tmp_path: Path, segment: int) -> None:
    """Kill ``recover --full`` right after it has emptied the ``.txnindex`` of segment 0 (the first it rebuilds)
    or of segment 8 (after segment 0 was rebuilt), both below the checkpointed recovery point: the next ordinary
    open recovers them again, and read_committed skips every aborted record."""
    root = tmp_path / "logs"
    directory, end = _write_log(root)
    assert (root / CLEAN_SHUTDOWN_FILE).exists()
    assert OffsetCheckpoint(root / RECOVERY_POINT_CHECKPOINT_FILE).read()[TP] == end
    assert _read_committed(root) == (COMMITTED, ABORTED)

    target = f"{segment:020d}.txnindex"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(kafkalog.__file__).resolve().parent.parent)
    env.pop("KAFKALOG_PURE_PYTHON", None)
    if impl.IMPLEMENTATION != "cython":
        env["KAFKALOG_PURE_PYTHON"] = "1"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(directory), target], env=env, capture_output=True,
                          timeout=CHILD_TIMEOUT_S, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    # The kill landed in the window: the segment's index emptied, not yet rebuilt.
    assert (directory / target).stat().st_size == 0

    assert _read_committed(root) == (COMMITTED, ABORTED)
    assert (directory / target).stat().st_size > 0
