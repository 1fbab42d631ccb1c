"""Text checkpoint files: the recovery points, high watermarks, log start offsets, cleaner positions and
leader epochs a broker keeps beside its logs.

Ports Kafka 0.10.1.1 ``core/.../kafka/server/OffsetCheckpoint.scala`` and, where they differ, the modern
classes (3.8.0): ``server-common/.../server/common/CheckpointFile.java`` (:class:`CheckpointFile`),
``storage/.../internals/checkpoint/CheckpointFileWithFailureHandler.java``
(:class:`CheckpointFileWithFailureHandler`), ``core/.../server/checkpoints/OffsetCheckpointFile.scala``
(moved to ``storage/.../internals/checkpoint/OffsetCheckpointFile.java`` after 3.8.0;
:class:`OffsetCheckpoint`, :class:`LazyOffsetCheckpoints`) and
``storage/.../internals/checkpoint/LeaderEpochCheckpointFile.java`` (:class:`LeaderEpochCheckpoint`).

The format (UTF-8, every line ended by '\\n', Java's ``BufferedWriter.newLine`` on a POSIX host)::

    0                   the version: must equal the expected one (0 for every file here)
    2                   the number of entries
    foo 0 5             one entry per line; offset checkpoints: "<topic> <partition> <offset>"
    bar 3 7             leader-epoch checkpoints: "<epoch> <start offset>"

Reading (``CheckpointReadBuffer.read``): an empty file, or one with a version line but no count line,
holds no entries.  Lines end at '\\n', '\\r' or '\\r\\n' (``BufferedReader.readLine``).  The version and
the count are Java ``int`` s; any other version is an error ("Unrecognised version…"); each further line
must parse as an entry (offset entries split at runs of whitespace, Java's ``\\s+``, into exactly three
fields) or the file is malformed; the number of entry lines must equal the count ("Expected [N] entries
… but found only [M]", whether there are fewer or more).  The rules live in one function,
:func:`parse_checkpoint`, over the file's bytes however they were read: :meth:`CheckpointFile.read` reads a
local file and parses it; a reader of objects at URLs reads the bytes with one ranged read and calls
:meth:`OffsetCheckpoint.parse` or :meth:`LeaderEpochCheckpoint.parse` (or :meth:`CheckpointFile.parse`).

Writing (``CheckpointFile.write`` + ``Utils.atomicMoveWithFallback``): the whole file goes to
``<file>.tmp``, which is flushed and fsynced, then renamed over the target (atomically; if that fails,
moved non-atomically, copy then unlink), and then the parent directory is fsynced so the
rename itself survives a crash.  A crash at any point leaves either the old or the new checkpoint in
place, and at worst a stale ``.tmp`` that the next write overwrites and every read ignores.

Where kafkalog departs from Kafka, on purpose:

* Errors.  Kafka's ``CheckpointFile`` throws ``IOException`` and ``CheckpointFileWithFailureHandler``
  wraps it in ``KafkaStorageException``; a bad number in an entry escapes as a bare
  ``NumberFormatException``.  Here :class:`CheckpointFile` itself raises :class:`KafkaStorageError` for
  I/O failures and :class:`CorruptCheckpointError` (a ``KafkaStorageError`` and a ``ValueError``) for
  bad content, numbers in entries included, always naming the file and, for a bad line, its line number.
* Numbers are read as Java's ``Integer.parseInt`` / ``Long.parseLong`` read them (optional sign, digits,
  in range) but with ASCII digits only (Java also takes other Unicode decimal digits).
* ``write`` refuses (``IllegalArgumentError``) an entry whose text holds a line break, and an offset
  entry whose topic holds whitespace or whose numbers do not fit Java's ``int``/``long``: Kafka would
  write such a file and then fail to read it back.
* Read-only mode (``read_only=True``), which Kafka does not have: the file is never created, written or
  renamed, a missing file reads as empty, and ``write`` raises :class:`~kafkalog.errors.ReadOnlyError`.
  This is how kafkalog opens a broker's directory without changing a byte.
* The 0.10.1.1 reader counted distinct partitions, so a partition listed twice failed the count check;
  like modern Kafka the count here is of lines, and in :meth:`OffsetCheckpoint.read` the later line for
  a partition wins.  0.10.1.1 also wrote in the platform charset and did not fsync the directory; the
  modern UTF-8 and directory fsync are followed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

from ._common import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from .errors import IllegalArgumentError, KafkaStorageError, ReadOnlyError
from .topic import TopicPartition

if TYPE_CHECKING:
    from .log_dir_failure_channel import LogDirFailureChannel

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT_FILE",
    "FIRST_ENTRY_LINE",
    "LEADER_EPOCH_CHECKPOINT_FILE",
    "LOG_START_OFFSET_CHECKPOINT_FILE",
    "RECOVERY_POINT_CHECKPOINT_FILE",
    "REPLICATION_OFFSET_CHECKPOINT_FILE",
    "CheckpointFile",
    "CheckpointFileWithFailureHandler",
    "CorruptCheckpointError",
    "EntryFormatter",
    "EpochEntry",
    "LazyOffsetCheckpointMap",
    "LazyOffsetCheckpoints",
    "LeaderEpochCheckpoint",
    "LeaderEpochCheckpointFormatter",
    "OffsetCheckpoint",
    "OffsetCheckpointFormatter",
    "parse_checkpoint",
]

_log = logging.getLogger(__name__)

# --- file names (LogManager, ReplicaManager, LogCleanerManager, LeaderEpochCheckpointFile) -----------
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
#: Per partition directory, written from 0.11.
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
#: The 1-based line of a checkpoint's first entry (the version and the count come before it): the entry
#: :func:`parse_checkpoint` returns at index ``i`` is on line ``FIRST_ENTRY_LINE + i``.
FIRST_ENTRY_LINE = 3

_TMP_SUFFIX = ".tmp"
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
# Java's \s (no UNICODE_CHARACTER_CLASS): space, \t, \n, \x0B, \f, \r.
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_JAVA_LINE_END = re.compile(r"\r\n|\r|\n")

T = TypeVar("T")


class CorruptCheckpointError(KafkaStorageError, ValueError):
    """A checkpoint file whose content is not a checkpoint: unknown version, malformed line, wrong count.

    ``path`` is the file, ``line_number`` (1-based) and ``line`` the offending line when there is one.
    Kafka raises an ``IOException`` that ``CheckpointFileWithFailureHandler`` wraps in a
    ``KafkaStorageException``; this is both at once, and also a ``ValueError``.
    """

    def __init__(
        self, message: str, path: str, line_number: int | None = None, line: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line_number = line_number
        self.line = line


class EntryFormatter(Protocol[T]):
    """Turns an entry into its line and back (Kafka: ``CheckpointFile.EntryFormatter``).

    ``from_string`` returns ``None`` for a line that is not an entry (Kafka: ``Optional.empty()``); it
    may also raise ``ValueError``, which the reader reports as a malformed line.
    """

    def to_string(self, entry: T) -> str: ...

    def from_string(self, line: str) -> T | None: ...


def _java_split(line: str) -> list[str]:
    """``Pattern.compile("\\\\s+").split(line)``: a leading empty field when the line starts with
    whitespace, trailing empty fields removed, the whole line when there is no whitespace."""
    if _JAVA_WHITESPACE.search(line) is None:
        return [line]
    fields = _JAVA_WHITESPACE.split(line)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def _parse_java_int(text: str, low: int, high: int) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` (ASCII digits only): ``ValueError`` when it would throw."""
    if _JAVA_INT.fullmatch(text) is None:
        raise ValueError(f"For input string: {text!r}")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"Value out of range. Value:{text!r}")
    return value


def _java_lines(text: str) -> list[str]:
    """The lines ``BufferedReader.readLine`` returns: split at '\\n', '\\r' or '\\r\\n', no empty
    last line."""
    if not text:
        return []
    lines = _JAVA_LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def _flush_dir(path: Path) -> None:
    """Kafka: ``Utils.flushDir``: fsync a directory so a rename in it is durable (not on Windows)."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _non_atomic_move(source: Path, target: Path) -> None:
    """Java's ``Files.move(source, target, REPLACE_EXISTING)`` when a rename is refused: copy, sync,
    unlink."""
    shutil.copyfile(source, target)
    with open(target, "rb") as copied:
        os.fsync(copied.fileno())
    os.unlink(source)


def _atomic_move_with_fallback(source: Path, target: Path) -> None:
    """Kafka: ``Utils.atomicMoveWithFallback(source, target, needFlushParentDir=true)``.

    ``os.replace`` is the atomic move; if it fails while the source still exists, a non-atomic move
    (copy over the target, then remove the source) is tried, as modern Kafka does.  (0.10.1.1 and
    0.8.2 deleted the target and renamed again, which loses the checkpoint if the second rename fails.)
    The parent directory is fsynced afterwards in every case, as Kafka does in a ``finally``.
    """
    try:
        try:
            os.replace(source, target)
        except OSError as outer:
            if not source.exists():
                raise
            _log.warning("Failed atomic move of %s to %s retrying with a non-atomic move", source, target)
            try:
                _non_atomic_move(source, target)
            except OSError as inner:
                raise inner from outer
    finally:
        _flush_dir(target.parent)


def _malformed(location: str, line_number: int, line: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(
        f"Malformed line in checkpoint file [{location}]: {line!r} (line {line_number})",
        location,
        line_number,
        line,
    )


def parse_checkpoint(data: bytes, version: int, formatter: EntryFormatter[T], location: str) -> list[T]:
    """The entries of the bytes of a checkpoint file (Kafka: ``CheckpointReadBuffer.read``), read as a whole
    wherever they came from: a local file (:meth:`CheckpointFile.read`) or an object read by URL
    (:func:`kafkalog.urls.partition.read_offset_checkpoint`).

    ``version`` is the version the file must carry, ``formatter`` reads each entry line, and ``location``
    names the file in every error (a path or a URL).  The rules are the module docstring's: no bytes, or a
    version line alone, hold no entries.

    Raises:
        CorruptCheckpointError: bytes that are not UTF-8, a version other than ``version``, a malformed
            version, count or entry line (its 1-based number given), a negative count, or a count that is
            not the number of entry lines.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptCheckpointError(
            f"Checkpoint file [{location}] is not UTF-8: byte {e.start} cannot be decoded", location
        ) from e
    lines = _java_lines(text)
    if not lines:
        return []
    try:
        read_version = _parse_java_int(lines[0], INT32_MIN, INT32_MAX)
    except ValueError:
        raise _malformed(location, 1, lines[0]) from None
    if read_version != version:
        raise CorruptCheckpointError(
            f"Unrecognised version:{read_version}, expected version: {version} "
            f"in checkpoint file at: {location}",
            location,
            1,
            lines[0],
        )
    if len(lines) < 2:
        return []
    try:
        expected_size = _parse_java_int(lines[1], INT32_MIN, INT32_MAX)
    except ValueError:
        raise _malformed(location, 2, lines[1]) from None
    if expected_size < 0:
        raise CorruptCheckpointError(
            f"Negative entry count [{expected_size}] in checkpoint file [{location}] (line 2)",
            location,
            2,
            lines[1],
        )
    entries: list[T] = []
    for number, line in enumerate(lines[2:], start=FIRST_ENTRY_LINE):
        try:
            entry = formatter.from_string(line)
        except ValueError:
            entry = None
        if entry is None:
            raise _malformed(location, number, line)
        entries.append(entry)
    if len(entries) != expected_size:
        raise CorruptCheckpointError(
            f"Expected [{expected_size}] entries in checkpoint file [{location}], "
            f"but found only [{len(entries)}]",
            location,
        )
    return entries


class CheckpointFile(Generic[T]):
    """A versioned list of entries in a text file (Kafka: ``org.apache.kafka.server.common.CheckpointFile``).

    ``path`` is the file, ``version`` the version it must carry, ``formatter`` an
    :class:`EntryFormatter`.  Opened writable (the default) the file is created empty if it does not
    exist, as Kafka's constructor does (``Files.createFile``).  With ``read_only=True`` nothing on disk
    is ever created or changed: a missing file reads as empty and :meth:`write` raises
    :class:`~kafkalog.errors.ReadOnlyError`.

    Errors: :class:`CorruptCheckpointError` for content that is not a checkpoint,
    :class:`~kafkalog.errors.KafkaStorageError` for an I/O failure; both name the file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        version: int,
        formatter: EntryFormatter[T],
        *,
        read_only: bool = False,
    ) -> None:
        self._version = version
        self._formatter = formatter
        self._read_only = read_only
        self._lock = threading.Lock()
        self._path = Path(os.path.abspath(path))
        self._temp_path = Path(str(self._path) + _TMP_SUFFIX)
        if not read_only:
            try:
                fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                pass
            except OSError as e:
                raise KafkaStorageError(f"Error while creating checkpoint file {self._path}: {e}") from e
            else:
                os.close(fd)

    @property
    def path(self) -> Path:
        """The checkpoint file, absolute."""
        return self._path

    @property
    def temp_path(self) -> Path:
        """``<file>.tmp``, where :meth:`write` puts the new content before the rename."""
        return self._temp_path

    @property
    def version(self) -> int:
        return self._version

    @property
    def read_only(self) -> bool:
        return self._read_only

    def __repr__(self) -> str:
        mode = ", read_only=True" if self._read_only else ""
        return f"{type(self).__name__}({str(self._path)!r}, version={self._version}{mode})"

    def _encode(self, entries: Iterable[T]) -> bytes:
        """Kafka: ``CheckpointWriteBuffer.write``: version, count, one line per entry."""
        lines = [self._formatter.to_string(entry) for entry in entries]
        for line in lines:
            if "\n" in line or "\r" in line:
                raise IllegalArgumentError(
                    f"Checkpoint entry {line!r} for {self._path} holds a line break: "
                    "it could not be read back"
                )
        text = f"{self._version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
        return text.encode("utf-8")

    def write(self, entries: Iterable[T]) -> None:
        """Replace the file's entries with ``entries`` (Kafka: ``CheckpointFile.write``).

        Writes ``<file>.tmp``, flushes and fsyncs it, renames it over the file and fsyncs the parent
        directory.  A failure (a full disk, say) leaves the previous checkpoint whole and removes the
        temporary file.
        """
        if self._read_only:
            raise ReadOnlyError(f"Checkpoint file {self._path} was opened read-only")
        data = self._encode(entries)
        with self._lock:
            try:
                with open(self._temp_path, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                _atomic_move_with_fallback(self._temp_path, self._path)
            except OSError as e:
                # A half-written temporary file is of no use, and on a full disk it holds space: remove it.
                with contextlib.suppress(OSError):
                    self._temp_path.unlink()
                raise KafkaStorageError(f"Error while writing to checkpoint file {self._path}: {e}") from e

    def read(self) -> list[T]:
        """The file's entries, in file order (Kafka: ``CheckpointFile.read``)."""
        with self._lock:
            try:
                from .fsutil import read_regular  # here: fsutil imports this module

                data = read_regular(self._path)
            except FileNotFoundError as e:
                if self._read_only:
                    return []
                raise KafkaStorageError(f"Error while reading checkpoint file {self._path}: {e}") from e
            except OSError as e:
                raise KafkaStorageError(f"Error while reading checkpoint file {self._path}: {e}") from e
        return self.parse(data)

    def parse(self, data: bytes) -> list[T]:
        """The entries of ``data``, the bytes of this file read elsewhere (:func:`parse_checkpoint` with this
        file's version, formatter and path)."""
        return parse_checkpoint(data, self._version, self._formatter, str(self._path))


class CheckpointFileWithFailureHandler(Generic[T]):
    """A :class:`CheckpointFile` that reports I/O failures to the log dir's failure channel.

    Kafka: ``org.apache.kafka.storage.internals.checkpoint.CheckpointFileWithFailureHandler``.  Every
    :class:`~kafkalog.errors.KafkaStorageError` from the file (content errors included) is passed to
    ``log_dir_failure_channel`` (:class:`~kafkalog.log_dir_failure_channel.LogDirFailureChannel`) when one is
    given, which takes ``log_dir`` offline, then raised.  ``log_dir``
    defaults to the file's directory.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        version: int,
        formatter: EntryFormatter[T],
        log_dir_failure_channel: LogDirFailureChannel | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        self._failure_channel = log_dir_failure_channel
        self.log_dir = os.fspath(log_dir) if log_dir is not None else os.path.dirname(os.path.abspath(path))
        self.checkpoint = CheckpointFile(path, version, formatter, read_only=read_only)

    @property
    def file(self) -> Path:
        """The checkpoint file, absolute."""
        return self.checkpoint.path

    def _report(self, error: KafkaStorageError) -> None:
        if self._failure_channel is not None:
            self._failure_channel.maybe_add_offline_log_dir(self.log_dir, str(error), error)

    def write(self, entries: Iterable[T]) -> None:
        """Kafka: ``CheckpointFileWithFailureHandler.write``."""
        try:
            self.checkpoint.write(entries)
        except KafkaStorageError as e:
            self._report(e)
            raise

    def write_if_dir_exists(self, entries: Iterable[T]) -> None:
        """Like :meth:`write`, but a missing directory is only logged (``writeIfDirExists``): the partition
        may be being deleted, its directory renamed away under an asynchronous write."""
        try:
            self.checkpoint.write(entries)
        except KafkaStorageError as e:
            if isinstance(e.__cause__, FileNotFoundError):
                _log.warning(
                    "Failed to write to checkpoint file %s. "
                    "This is ok if the topic/partition is being deleted",
                    self.file,
                )
                return
            self._report(e)
            raise

    def read(self) -> list[T]:
        """Kafka: ``CheckpointFileWithFailureHandler.read``."""
        try:
            return self.checkpoint.read()
        except KafkaStorageError as e:
            self._report(e)
            raise


class OffsetCheckpointFormatter:
    """``"<topic> <partition> <offset>"`` (Kafka: ``OffsetCheckpointFile.Formatter``)."""

    def to_string(self, entry: tuple[TopicPartition, int]) -> str:
        tp, offset = entry
        topic, partition = tp
        if _JAVA_WHITESPACE.search(topic) is not None:
            raise IllegalArgumentError(f"Topic {topic!r} holds whitespace: it cannot go in a checkpoint")
        if not INT32_MIN <= partition <= INT32_MAX:
            raise IllegalArgumentError(f"Partition {partition} of {topic!r} does not fit a Java int")
        if not INT64_MIN <= offset <= INT64_MAX:
            raise IllegalArgumentError(f"Offset {offset} for {topic}-{partition} does not fit a Java long")
        return f"{topic} {int(partition)} {int(offset)}"

    def from_string(self, line: str) -> tuple[TopicPartition, int] | None:
        fields = _java_split(line)
        if len(fields) != 3:
            return None
        topic, partition, offset = fields
        return (
            TopicPartition(topic, _parse_java_int(partition, INT32_MIN, INT32_MAX)),
            _parse_java_int(offset, INT64_MIN, INT64_MAX),
        )


class OffsetCheckpoint:
    """A map of partition to offset in a checkpoint file (Kafka: ``OffsetCheckpointFile``; 0.10.1.1:
    ``OffsetCheckpoint``).

    Used for ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
    ``log-start-offset-checkpoint`` and ``cleaner-offset-checkpoint``, all version 0::

        0
        2
        foo 0 5
        bar 3 7

    ``read_only=True`` never creates or writes the file (a missing file reads as empty).
    """

    CURRENT_VERSION = 0
    FORMATTER = OffsetCheckpointFormatter()

    def __init__(
        self,
        path: str | os.PathLike[str],
        read_only: bool = False,
        *,
        log_dir_failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        abs_path = os.path.abspath(path)
        self.checkpoint: CheckpointFileWithFailureHandler[tuple[TopicPartition, int]] = (
            CheckpointFileWithFailureHandler(
                abs_path,
                self.CURRENT_VERSION,
                self.FORMATTER,
                log_dir_failure_channel,
                os.path.dirname(abs_path),
                read_only=read_only,
            )
        )

    @property
    def file(self) -> Path:
        return self.checkpoint.file

    def __repr__(self) -> str:
        return f"OffsetCheckpoint({str(self.file)!r})"

    def write(self, offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int]) -> None:
        """Replace the file with ``offsets``, in the mapping's order (Kafka:
        ``OffsetCheckpointFile.write``)."""
        self.checkpoint.write([(TopicPartition(*tp), offset) for tp, offset in offsets.items()])

    def read(self) -> dict[TopicPartition, int]:
        """The offsets in the file; a partition listed twice keeps its later offset (Kafka: ``read``)."""
        return dict(self.checkpoint.read())

    @classmethod
    def parse(cls, data: bytes, location: str) -> dict[TopicPartition, int]:
        """The offsets in ``data``, the bytes of an offset checkpoint named ``location`` read elsewhere (an
        object at a URL), as :meth:`read` reads the file: a partition listed twice keeps its later offset.

        Raises:
            CorruptCheckpointError: see :func:`parse_checkpoint`.
        """
        return dict(parse_checkpoint(data, cls.CURRENT_VERSION, cls.FORMATTER, location))


class LazyOffsetCheckpointMap:
    """One log dir's offsets, read on first use (Kafka: ``LazyOffsetCheckpointMap``)."""

    def __init__(self, checkpoint: OffsetCheckpoint) -> None:
        self._checkpoint = checkpoint
        self._offsets: dict[TopicPartition, int] | None = None

    def fetch(self, topic_partition: TopicPartition) -> int | None:
        if self._offsets is None:
            self._offsets = self._checkpoint.read()
        return self._offsets.get(topic_partition)


class LazyOffsetCheckpoints:
    """Offsets by log dir, each dir's file read once, when first asked (Kafka: ``LazyOffsetCheckpoints``)."""

    def __init__(self, checkpoints_by_log_dir: Mapping[str, OffsetCheckpoint]) -> None:
        self._by_log_dir = {d: LazyOffsetCheckpointMap(c) for d, c in checkpoints_by_log_dir.items()}

    def fetch(self, log_dir: str, topic_partition: TopicPartition) -> int | None:
        """The offset of ``topic_partition`` in ``log_dir``'s file, or ``None`` when it has none."""
        lazy = self._by_log_dir.get(log_dir)
        if lazy is None:
            raise IllegalArgumentError(f"No checkpoint file for log dir {log_dir}")
        return lazy.fetch(topic_partition)


class EpochEntry(NamedTuple):
    """A leader epoch and the first offset written in it (Kafka: ``EpochEntry``)."""

    epoch: int
    start_offset: int


class LeaderEpochCheckpointFormatter:
    """``"<epoch> <start offset>"`` (Kafka: ``LeaderEpochCheckpointFile.Formatter``)."""

    def to_string(self, entry: EpochEntry) -> str:
        epoch, start_offset = entry
        if not INT32_MIN <= epoch <= INT32_MAX:
            raise IllegalArgumentError(f"Leader epoch {epoch} does not fit a Java int")
        if not INT64_MIN <= start_offset <= INT64_MAX:
            raise IllegalArgumentError(f"Start offset {start_offset} does not fit a Java long")
        return f"{int(epoch)} {int(start_offset)}"

    def from_string(self, line: str) -> EpochEntry | None:
        fields = _java_split(line)
        if len(fields) != 2:
            return None
        return EpochEntry(
            _parse_java_int(fields[0], INT32_MIN, INT32_MAX),
            _parse_java_int(fields[1], INT64_MIN, INT64_MAX),
        )


class LeaderEpochCheckpoint:
    """A partition's ``leader-epoch-checkpoint`` (Kafka: ``LeaderEpochCheckpointFile``), version 0::

        0
        2
        0 0
        3 1944

    Kafka reports failures against the log dir, the parent of the partition directory; so does this.
    ``read_only=True`` never creates or writes the file (a missing file reads as empty).
    """

    CURRENT_VERSION = 0
    FORMATTER = LeaderEpochCheckpointFormatter()

    def __init__(
        self,
        path: str | os.PathLike[str],
        read_only: bool = False,
        *,
        log_dir_failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        abs_path = os.path.abspath(path)
        self.checkpoint: CheckpointFileWithFailureHandler[EpochEntry] = CheckpointFileWithFailureHandler(
            abs_path,
            self.CURRENT_VERSION,
            self.FORMATTER,
            log_dir_failure_channel,
            os.path.dirname(os.path.dirname(abs_path)),
            read_only=read_only,
        )

    @staticmethod
    def new_file(directory: str | os.PathLike[str]) -> Path:
        """``<dir>/leader-epoch-checkpoint`` (Kafka: ``LeaderEpochCheckpointFile.newFile``)."""
        return Path(directory) / LEADER_EPOCH_CHECKPOINT_FILE

    @property
    def file(self) -> Path:
        return self.checkpoint.file

    def __repr__(self) -> str:
        return f"LeaderEpochCheckpoint({str(self.file)!r})"

    def write(self, epochs: Iterable[EpochEntry] | Iterable[tuple[int, int]]) -> None:
        """Replace the file with ``epochs``, in order (Kafka: ``LeaderEpochCheckpointFile.write``)."""
        self.checkpoint.write([EpochEntry(*e) for e in epochs])

    def write_for_truncation(self, epochs: Iterable[EpochEntry] | Iterable[tuple[int, int]]) -> None:
        """Like :meth:`write`, but a directory renamed away meanwhile is not an error
        (Kafka: ``writeForTruncation``)."""
        self.checkpoint.write_if_dir_exists([EpochEntry(*e) for e in epochs])

    def read(self) -> list[EpochEntry]:
        """The entries in file order (Kafka: ``LeaderEpochCheckpointFile.read``)."""
        return self.checkpoint.read()

    @classmethod
    def parse(cls, data: bytes, location: str) -> list[EpochEntry]:
        """The entries of ``data``, the bytes of a ``leader-epoch-checkpoint`` named ``location`` read
        elsewhere (an object at a URL), as :meth:`read` reads the file.

        Raises:
            CorruptCheckpointError: see :func:`parse_checkpoint`.
        """
        return parse_checkpoint(data, cls.CURRENT_VERSION, cls.FORMATTER, location)
