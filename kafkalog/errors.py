"""kafkalog's one error hierarchy.

Names follow Kafka's exceptions (``org.apache.kafka.common.errors`` and ``kafka.common``), with
``Exception`` spelled ``Error`` as Python does.  Where a built-in error means the same thing the class
also derives from it, so ``except ValueError`` keeps working for callers that do not know kafkalog.

Every message carries what a reader needs to find the problem: the file path when there is one, the
byte position, and the numbers that disagreed.

Storage, local or remote, is one branch; catch the class that says what you mean:

* :class:`KafkaStorageError` (an ``OSError``): anything that went wrong reading or writing storage, a local
  log dir, an object at a URL (:mod:`kafkalog.urls`) or a tiered-storage layout (:mod:`kafkalog.remote`);
* :class:`StorageNotFoundError` (a ``FileNotFoundError``): nothing at a URL, or an object a tiered-storage
  segment needs is missing (:class:`RemoteResourceNotFoundError` is one): the one class to catch for "not
  there", whichever reader raised it;
* :class:`RemoteStorageError`: a tiered-storage layout could not be read as it says (Kafka's
  ``RemoteStorageException``); its kinds are :class:`RemoteResourceNotFoundError`,
  :class:`RemoteLayoutError` (with :class:`CorruptRemoteSegmentError`) and :class:`EncryptedSegmentError`;
* :class:`StorageURLError` and :class:`StorageOptionError` (``ValueError`` s, not storage failures): a URL or
  a storage option kafkalog cannot use, found before anything is read.

So ``except StorageNotFoundError`` catches a missing object whether a URL's listing or a layout's read
found it missing, and ``except RemoteStorageError`` still catches every tiered-storage error as before.
"""

from __future__ import annotations

__all__ = [
    "KafkaLogError",
    "CorruptRecordError",
    "InvalidRecordError",
    "RecordTooLargeError",
    "RecordBatchTooLargeError",
    "UnsupportedCompressionError",
    "UnsupportedMagicError",
    "CorruptIndexError",
    "InvalidOffsetError",
    "IndexOffsetOverflowError",
    "OffsetOutOfRangeError",
    "UnknownTopicOrPartitionError",
    "InvalidRequestError",
    "LogDirNotFoundError",
    "UnexpectedAppendOffsetError",
    "LogSegmentOffsetOverflowError",
    "KafkaStorageError",
    "LogDirInUseError",
    "IllegalArgumentError",
    "IllegalStateError",
    "ReadOnlyError",
    "ConcurrentTruncationError",
    "RemoteStorageError",
    "RemoteResourceNotFoundError",
    "RemoteLayoutError",
    "CorruptRemoteSegmentError",
    "EncryptedSegmentError",
    "StorageURLError",
    "StorageOptionError",
    "StorageNotFoundError",
    "CorruptSnapshotError",
    "OutOfOrderSequenceError",
    "InvalidProducerEpochError",
    "InvalidTxnStateError",
    "TransactionCoordinatorFencedError",
    "MetadataLogError",
]


class KafkaLogError(Exception):
    """Base class of every error kafkalog raises on purpose."""


class CorruptRecordError(KafkaLogError, ValueError):
    """Bytes that claim to be a message, message set or record batch are not one.

    Kafka: ``CorruptRecordException``.  Raised for bad CRCs, sizes that do not fit, truncated data and
    malformed varints.  ``position`` is the byte offset in the buffer or file where the bad entry starts
    (``None`` when it is not known) and ``path`` the file, when the bytes came from one.
    """

    def __init__(self, message: str, position: int | None = None, path: str | None = None) -> None:
        where = []
        if path is not None:
            where.append(f"in {path}")
        if position is not None:
            where.append(f"at position {position}")
        super().__init__(f"{message} ({' '.join(where)})" if where else message)
        self.detail = message
        self.position = position
        self.path = path

    def at(self, position: int | None, path: str | None = None, note: str = "") -> CorruptRecordError:
        """The same error said of another place: a position in a file rather than in a buffer read from
        it, say.  ``note`` is added to the message."""
        moved = type(self)(self.detail + note, position, path if path is not None else self.path)
        moved.__cause__ = self
        return moved


class InvalidRecordError(CorruptRecordError):
    """A record inside a batch is malformed (Kafka: ``InvalidRecordException``)."""


class RecordTooLargeError(CorruptRecordError):
    """An entry, or what it decompresses to, is larger than the configured limit.

    Kafka: ``RecordTooLargeException``.  A compressed payload that would expand past the limit raises this
    before the memory is spent.
    """


class RecordBatchTooLargeError(RecordTooLargeError):
    """An append is larger than a whole segment (``segment.bytes``), so no segment could ever hold it.

    Kafka: ``RecordBatchTooLargeException`` (error code ``RECORD_LIST_TOO_LARGE``), which Kafka keeps apart
    from ``RecordTooLargeException``; here it is a kind of :class:`RecordTooLargeError`, so code that catches
    every size limit with that class still does.
    """


class UnsupportedCompressionError(CorruptRecordError):
    """The attributes name a codec this magic cannot carry.

    Kafka: ``UnsupportedCompressionTypeException``.
    """


class UnsupportedMagicError(CorruptRecordError):
    """A magic byte other than 0, 1 or 2 (Kafka: ``CorruptRecordException`` from the input streams)."""


class CorruptIndexError(KafkaLogError, ValueError):
    """An index file fails its sanity check (Kafka: ``CorruptIndexException``)."""


class InvalidOffsetError(KafkaLogError, ValueError):
    """An offset out of order or out of place (Kafka: ``InvalidOffsetException``)."""


class IndexOffsetOverflowError(KafkaLogError, OverflowError):
    """An offset too far from the segment's base to fit a 4-byte relative offset."""


class OffsetOutOfRangeError(KafkaLogError, ValueError):
    """A fetch offset outside the log's range (Kafka: ``OffsetOutOfRangeException``)."""


class UnknownTopicOrPartitionError(KafkaLogError, LookupError):
    """A topic or partition that has no log here (Kafka: ``UnknownTopicOrPartitionException``), for the
    producer and consumer of :mod:`kafkalog.clients`."""


class LogDirNotFoundError(KafkaLogError, LookupError):
    """A log directory that is not one of the broker's ``log.dirs`` (Kafka: ``LogDirNotFoundException``)."""


class InvalidRequestError(KafkaLogError, ValueError):
    """A request that reads but asks for something its API does not allow (Kafka: ``InvalidRequestException``):
    the broker answers it with its API's error response, INVALID_REQUEST in each item it named."""


class UnexpectedAppendOffsetError(InvalidOffsetError):
    """An append that keeps its offsets (a follower's, a Raft leader's) whose first offset, or the last
    offset of its first batch when the first is not known, is below the log end offset (Kafka:
    ``UnexpectedAppendOffsetException``).  ``first_offset`` and ``last_offset`` are the append's."""

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class LogSegmentOffsetOverflowError(KafkaLogError, OverflowError):
    """A segment holds offsets that do not fit its index (Kafka: ``LogSegmentOffsetOverflowException``)."""

    def __init__(self, message: str, segment: object = None, offset: int | None = None) -> None:
        super().__init__(message)
        self.segment = segment
        self.offset = offset


class KafkaStorageError(KafkaLogError, OSError):
    """An I/O failure on a log directory (Kafka: ``KafkaStorageException``).

    ``log_dir`` is set when the error took that log dir offline, or was raised because it is offline already
    (:mod:`kafkalog.log_dir_failure_channel`); ``None`` otherwise."""

    #: The log dir this error took offline or found offline, else ``None``.
    log_dir: str | None = None


class LogDirInUseError(KafkaStorageError):
    """A log directory's ``.lock`` is held by another writer, in this process or another (Kafka: the
    ``KafkaException`` of ``LogManager.lockLogDirs``, "Failed to acquire lock on file .lock in ...").

    ``path`` is the lock file, ``holder`` what holds it when this process does (``"a LogManager"``), ``pid``
    the holding process when it is known (this one's, or another's as the kernel reports it)."""

    def __init__(self, message: str, path: object = None, holder: str | None = None,
                 pid: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder
        self.pid = pid


class IllegalArgumentError(KafkaLogError, ValueError):
    """A call whose arguments break the method's contract (Kafka: ``IllegalArgumentException``), such as
    an append to a full index or a slice at a negative position."""


class IllegalStateError(KafkaLogError, RuntimeError):
    """An operation the object's state does not allow (Kafka: ``IllegalStateException``), such as a
    time-index entry whose timestamp goes backwards."""


class ReadOnlyError(KafkaLogError, PermissionError):
    """A write to a file opened read-only: opening a broker's files read-only must never change a byte."""


class ConcurrentTruncationError(KafkaLogError, RuntimeError):
    """A file was cut shorter than a set reading it believes it is, while the set was in use (Kafka: the
    ``KafkaException`` "has been truncated during write" of ``FileRecords.writeTo``, 0.10.1
    ``FileMessageSet.writeTo``).  ``path`` is the file, ``old_size`` the set's size and ``new_size`` what the
    file still holds of it."""

    def __init__(self, message: str, path: str | None = None, old_size: int = -1, new_size: int = -1) -> None:
        super().__init__(message)
        self.path = path
        self.old_size = old_size
        self.new_size = new_size


class StorageNotFoundError(KafkaStorageError, FileNotFoundError):
    """Nothing at a path or URL: no object or directory (:mod:`kafkalog.urls`), or an object a
    tiered-storage segment needs (:class:`RemoteResourceNotFoundError`, a subclass).  Catch this one for a
    missing object, whichever reader found it missing."""


class RemoteStorageError(KafkaStorageError):
    """A tiered-storage store could not be read as its layout says (Kafka: ``RemoteStorageException``).
    ``path`` is the object or directory, when there is one.  A :class:`KafkaStorageError` (so an
    ``OSError``), as every failure to read storage is."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(f"{message} ({path})" if path is not None else message)
        self.detail = message
        self.path = path


class RemoteResourceNotFoundError(RemoteStorageError, StorageNotFoundError):
    """An object a segment needs is not in the store (Kafka: ``RemoteResourceNotFoundException``).  Both a
    :class:`RemoteStorageError` (Kafka's family) and a :class:`StorageNotFoundError` (kafkalog's one "not
    there"), and so a ``FileNotFoundError``."""


class RemoteLayoutError(RemoteStorageError, ValueError):
    """A name or a structure that is not the layout's: a file that is not a remote log segment file, a
    directory that is not a topic-partition directory, a fileset missing a file (Kafka: the
    ``IllegalArgumentException`` and ``IllegalStateException`` of ``RemoteLogSegmentFileset`` and
    ``RemoteTopicPartitionDirectory``)."""


class CorruptRemoteSegmentError(RemoteLayoutError):
    """The bytes of an uploaded segment do not read as its layout says: a manifest that does not parse, a
    chunk index that does not add up, a chunk that does not decompress to its size, a range outside the
    object."""


class EncryptedSegmentError(RemoteStorageError):
    """A segment uploaded encrypted (Aiven's plugin with ``encryption.enabled``): kafkalog holds no key to
    read it."""


class StorageURLError(KafkaLogError, ValueError):
    """A URL kafkalog cannot read (:mod:`kafkalog.urls`): not a URL, a protocol fsspec does not know, or one
    whose filesystem package is not installed (the message names the extra to install)."""


class StorageOptionError(KafkaLogError, ValueError):
    """A storage option that is malformed (not ``NAME=VALUE``), given with a local path, or not taken (or
    refused) by the URL's filesystem."""


class CorruptSnapshotError(KafkaLogError, ValueError):
    """A producer-state snapshot that cannot be read: unknown version, bad CRC, bad size (Kafka:
    ``CorruptSnapshotException``)."""


class OutOfOrderSequenceError(KafkaLogError, ValueError):
    """An idempotent or transactional batch whose first sequence does not follow the producer's last one
    (Kafka: ``OutOfOrderSequenceException``)."""


class InvalidProducerEpochError(KafkaLogError, ValueError):
    """A batch or marker of a producer epoch older than the one the partition has seen (Kafka:
    ``InvalidProducerEpochException``, which 2.7 put in place of ``ProducerFencedException`` on this path)."""


class InvalidTxnStateError(KafkaLogError, ValueError):
    """A non-transactional batch from a producer whose transaction is open (Kafka:
    ``InvalidTxnStateException``)."""


class TransactionCoordinatorFencedError(KafkaLogError, ValueError):
    """A transaction marker from a coordinator epoch older than the last one seen (Kafka:
    ``TransactionCoordinatorFencedException``)."""


class MetadataLogError(KafkaLogError, ValueError):
    """A KRaft metadata log (``__cluster_metadata-0``) or one of its snapshots that cannot be replayed into the
    cluster's topics and configs: a record that does not decode, a snapshot that does not cover the log's
    start, a metadata transaction that does not nest (Kafka: the ``IllegalStateException`` or
    ``RuntimeException`` its metadata loader stops on).  The message names the file and the offset."""
