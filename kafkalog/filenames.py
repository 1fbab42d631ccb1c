"""The names of a log's files (Kafka: the ``Log`` companion object in 0.10.1, ``LogFileUtils`` now).

A segment's files share a base name, its base offset as 20 zero-padded decimal digits, and differ in
suffix: ``.log`` (the entries), ``.index`` (offset index), ``.timeindex`` (time index), ``.txnindex``
(aborted transactions, from 0.11).  While a file is being replaced or removed a second suffix follows the
first: ``.cleaned`` (cleaner output in progress), ``.swap`` (ready to be swapped in), ``.deleted``
(waiting for asynchronous deletion).  A partition's producer-state snapshots are named the same way, for
the offset they were taken at (``<offset>.snapshot``), so completing an interrupted swap deletes those
inside the swapped range with the replaced segments' files, as Kafka's loader does.

A log dir's root holds three files of the broker's besides its checkpoints (whose names sit with their
format in :mod:`kafkalog.checkpoint`): ``meta.properties``, the broker's identity and the dir's id (read by
:mod:`kafkalog.manager.meta_properties`), ``.lock``, the file a broker locks to own the dir (Kafka:
``LogManager.LockFile`` in 0.10.1.1, ``LogManager.LockFileName`` in 3.8.0), and ``.kafka_cleanshutdown``,
the marker a clean shutdown leaves (Kafka: ``Log.CleanShutdownFile`` in 0.10.1.1,
``CleanShutdownFileHandler.CLEAN_SHUTDOWN_FILE_NAME`` in 3.8.0).
"""

from __future__ import annotations

import os
from pathlib import Path

from ._common import INT64_MAX
from .errors import IllegalArgumentError

__all__ = [
    "CLEANED_FILE_SUFFIX",
    "CLEAN_SHUTDOWN_FILE",
    "DELETED_FILE_SUFFIX",
    "INDEX_FILE_SUFFIX",
    "LOCK_FILE",
    "META_PROPERTIES_FILE",
    "LOG_FILE_SUFFIX",
    "PRODUCER_SNAPSHOT_FILE_SUFFIX",
    "SWAP_FILE_SUFFIX",
    "TIME_INDEX_FILE_SUFFIX",
    "TXN_INDEX_FILE_SUFFIX",
    "filename_prefix_from_offset",
    "index_filename",
    "log_filename",
    "offset_from_file",
    "offset_from_file_name",
    "producer_snapshot_filename",
    "replace_suffix",
    "segment_file_offset",
    "time_index_filename",
    "txn_index_filename",
]

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
#: A producer-state snapshot, named for the offset it was taken at (Kafka:
#: ``LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX``).
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"

#: The clean-shutdown marker in a log dir's root: empty up to 3.6, ``{"version":0,"brokerEpoch":N}`` from 3.7.
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: The file in a log dir's root that the owning process holds an exclusive lock on.
LOCK_FILE = ".lock"
#: The broker's identity file in a log dir (Kafka: ``MetaPropertiesEnsemble.META_PROPERTIES_NAME``).
META_PROPERTIES_FILE = "meta.properties"


def filename_prefix_from_offset(offset: int) -> str:
    """``offset`` as 20 zero-padded digits, no grouping (Kafka: ``filenamePrefixFromOffset``)."""
    if offset < 0:
        raise IllegalArgumentError(f"A segment file name cannot hold the negative offset {offset}")
    return f"{offset:020d}"


def _file(directory: str | os.PathLike[str], offset: int, suffix: str, extra: str) -> Path:
    return Path(directory) / f"{filename_prefix_from_offset(offset)}{suffix}{extra}"


def log_filename(directory: str | os.PathLike[str], offset: int, suffix: str = "") -> Path:
    """``<dir>/<offset>.log[suffix]`` (Kafka: ``logFilename`` / ``LogFileUtils.logFile``)."""
    return _file(directory, offset, LOG_FILE_SUFFIX, suffix)


def index_filename(directory: str | os.PathLike[str], offset: int, suffix: str = "") -> Path:
    """``<dir>/<offset>.index[suffix]`` (Kafka: ``indexFilename`` / ``LogFileUtils.offsetIndexFile``)."""
    return _file(directory, offset, INDEX_FILE_SUFFIX, suffix)


def time_index_filename(directory: str | os.PathLike[str], offset: int, suffix: str = "") -> Path:
    """``<dir>/<offset>.timeindex[suffix]`` (Kafka: ``timeIndexFilename``, ``LogFileUtils.timeIndexFile``)."""
    return _file(directory, offset, TIME_INDEX_FILE_SUFFIX, suffix)


def txn_index_filename(directory: str | os.PathLike[str], offset: int, suffix: str = "") -> Path:
    """``<dir>/<offset>.txnindex[suffix]`` (Kafka: ``transactionIndexFile``)."""
    return _file(directory, offset, TXN_INDEX_FILE_SUFFIX, suffix)


def producer_snapshot_filename(directory: str | os.PathLike[str], offset: int) -> Path:
    """``<dir>/<offset>.snapshot`` (Kafka: ``LogFileUtils.producerSnapshotFile``)."""
    return _file(directory, offset, PRODUCER_SNAPSHOT_FILE_SUFFIX, "")


def offset_from_file_name(name: str) -> int:
    """The base offset a segment file is named for: the digits before the first '.' (Kafka:
    ``offsetFromFileName``, which is ``Long.parseLong`` of them).

    Raises:
        IllegalArgumentError: the prefix is not ASCII digits, or is a number past ``Long.MaxValue``
            (``99999999999999999999.log`` has the 20 digits of a segment name, but ``parseLong`` throws
            ``NumberFormatException`` on it; kafkalog's message names the file and the bound).
    """
    prefix = os.path.basename(name).split(".", 1)[0]
    if not (prefix.isascii() and prefix.isdigit()):
        raise IllegalArgumentError(
            f"{name!r} is not named for an offset: expected 20 digits before the first '.'"
        )
    offset = int(prefix)
    if offset > INT64_MAX:
        raise IllegalArgumentError(
            f"{name!r} is not named for an offset: {prefix} is past the largest offset a log can hold, "
            f"{INT64_MAX} (Long.MaxValue)"
        )
    return offset


def offset_from_file(path: str | os.PathLike[str]) -> int:
    """The base offset a segment file is named for (Kafka: ``LogFileUtils.offsetFromFile``)."""
    return offset_from_file_name(Path(path).name)


def segment_file_offset(name: str) -> int:
    """The base offset of a file named as a segment's files are: exactly the 20 digits
    :func:`filename_prefix_from_offset` writes for an offset in ``[0, Long.MaxValue]``.

    What the loaders (``Log``, and through it ``LogManager`` and the commands) ask of a file before they
    take it for part of a segment.  Kafka's loader takes any prefix ``parseLong`` reads and then opens the
    segment by its canonical name, so ``5.log`` and ``000000000000000000005.log`` are read as offset 5
    while the files it opens are ``00000000000000000005.*``, and a prefix past ``Long.MaxValue`` stops the
    load.  kafkalog's loaders skip such a file with a warning instead, leaving it alone, as they do every
    file that is not a segment's.

    Raises:
        IllegalArgumentError: the name is not a segment file's, saying why.
    """
    offset = offset_from_file_name(name)
    prefix = os.path.basename(name).split(".", 1)[0]
    if prefix != filename_prefix_from_offset(offset):
        raise IllegalArgumentError(
            f"{name!r} is not named for an offset the way a segment's files are: offset {offset} is "
            f"{filename_prefix_from_offset(offset)}, 20 digits"
        )
    return offset


def replace_suffix(path: str | os.PathLike[str], old_suffix: str, new_suffix: str) -> Path:
    """``path`` with ``old_suffix`` at its end replaced by ``new_suffix``.

    Kafka: ``CoreUtils.replaceSuffix``.
    """
    text = str(path)
    if not text.endswith(old_suffix):
        raise IllegalArgumentError(f"Expected string to end with '{old_suffix}' but string is '{text}'")
    return Path(text[: len(text) - len(old_suffix)] + new_suffix)
