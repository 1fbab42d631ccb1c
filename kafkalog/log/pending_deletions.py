"""The files a log has marked for deletion and not deleted yet, which closing the log deletes.

Kafka deletes a segment, or a producer snapshot, in two steps: the files are renamed with the ``.deleted`` suffix
at once, and deleted after ``file.delete.delay.ms`` by a task on the scheduler (3.8.0 ``LocalLog.deleteSegmentFiles``
and ``UnifiedLog.deleteProducerSnapshots``: the "delete-file" and "delete-producer-snapshot" tasks), so that a
reader still holding the segment finishes with it first.  A broker that stops drops those tasks:
``KafkaScheduler.startup`` sets ``setExecuteExistingDelayedTasksAfterShutdownPolicy(false)``, so
``KafkaScheduler.shutdown`` runs no delayed task, and ``LogManager.shutdown`` flushes and closes each log without
looking at them.  The ``.deleted`` files stay on disk until the broker's next start deletes them
(``LogLoader.removeTempFilesAndCollectSwapFiles``).

kafkalog deliberately differs: closing a log finishes the deletions it scheduled (:meth:`PendingDeletions.finish`,
from :meth:`LocalLog.close <kafkalog.log.local_log.LocalLog.close>`).  A broker always starts again, soon; a kafkalog
command or script that ends may never open the log for writing again, and until something does the replaced
segments take the disk twice over (``kafkalog clean`` doubled a partition's footprint), while a read-only open
never removes them.  The delay protects readers of this log in this process, and once the log closes none is
left.  (A reader in another process keeps reading a deleted file through its open descriptor, as it would at the
end of the delay.)

The books: each file set is entered here when its deletion is scheduled; the scheduled task and the close each
take an entry out under the log's lock before they delete it, so a file set is deleted once, by whichever comes
first.  A file set that cannot be deleted at close is logged as a warning, its files released, and it is
returned as :class:`UndeletedFile` entries, the file and the reason, for the caller to report (``kafkalog clean``
and ``kafkalog recover`` print them); it stays ``.deleted``, for the next open to delete.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import KafkaLogError

if TYPE_CHECKING:
    from ..producer_state.snapshot import SnapshotFile
    from ..segment import LogSegment

__all__ = ["PendingDeletions", "UndeletedFile"]

logger = logging.getLogger(__name__)


class UndeletedFile(NamedTuple):
    """A file that closing its log could not delete, and why (the error's message)."""

    path: Path
    reason: str


@dataclass(frozen=True)
class _Entry:
    """One file set waiting for its deletion: how to delete it, release it, list its files, and move it."""

    item: object
    delete: Callable[[], object]
    release: Callable[[], None]
    files: Callable[[], list[Path]]
    move: Callable[[Path], None]


def _segment_entry(segment: LogSegment) -> _Entry:
    def files() -> list[Path]:
        return [segment.log.file, segment._lazy_offset_index.file, segment._lazy_time_index.file,
                segment.txn_index.file]

    return _Entry(segment, segment.delete, segment.close_handlers, files, segment.update_parent_dir)


def _snapshot_entry(snapshot: SnapshotFile) -> _Entry:
    return _Entry(snapshot, snapshot.delete_if_exists, lambda: None, lambda: [snapshot.file],
                  snapshot.update_parent_dir)


class PendingDeletions:
    """The segments and producer snapshots of one log renamed ``.deleted`` whose deletion task has not run yet
    (see the module docstring).  ``lock`` is the log's lock, which guards the books."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._entries: list[_Entry] = []

    def add_segments(self, segments: Iterable[LogSegment]) -> None:
        with self._lock:
            self._entries.extend(_segment_entry(segment) for segment in segments)

    def add_snapshots(self, snapshots: Iterable[SnapshotFile]) -> None:
        with self._lock:
            self._entries.extend(_snapshot_entry(snapshot) for snapshot in snapshots)

    def __contains__(self, item: object) -> bool:
        with self._lock:
            return any(entry.item is item for entry in self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def take(self, item: object) -> bool:
        """Take ``item`` out of the books, for its task to delete it; ``False`` if the close (or a deletion of
        the log) took it already."""
        with self._lock:
            for i, entry in enumerate(self._entries):
                if entry.item is item:
                    del self._entries[i]
                    return True
            return False

    def update_parent_dir(self, parent: str | os.PathLike[str]) -> None:
        """The log's directory was renamed: its waiting files are there now."""
        with self._lock:
            for entry in self._entries:
                entry.move(Path(parent))

    def _take_all(self) -> list[_Entry]:
        with self._lock:
            entries, self._entries = self._entries, []
        return entries

    def delete_all(self) -> None:
        """Delete every waiting file set now, raising the first failure (the log is being deleted: the caller's
        error handling takes the log dir offline, as Kafka's ``deleteAllSegments`` would)."""
        for entry in self._take_all():
            entry.delete()

    def finish(self, topic_partition: object = None) -> list[UndeletedFile]:
        """Delete every waiting file set now, as the log closes; returns the files that could not be deleted
        (each also logged as a warning, and released), which stay ``.deleted`` for the next open."""
        undeleted: list[UndeletedFile] = []
        for entry in self._take_all():
            try:
                entry.delete()
            except (OSError, KafkaLogError):
                # One file refused: the set's other files are still deleted, each failure with its own reason.
                entry.release()
                for path in entry.files():
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        continue
                    except OSError as e:
                        if any(file.path == path for file in undeleted):
                            continue  # a later set renamed .deleted over an earlier one's file: said once
                        reason = e.strerror or str(e)
                        logger.warning("Could not delete %s of %s as the log closed (%s): it stays, and the next "
                                       "open of the log deletes it", path, topic_partition, reason)
                        undeleted.append(UndeletedFile(path, reason))
        return undeleted

    def release(self) -> None:
        """Forget every waiting file set without deleting it, its files released (closing a log without writing:
        ``close_handlers``); the files stay ``.deleted`` for the next open."""
        for entry in self._take_all():
            entry.release()
