"""``kafkalog dump``: Kafka's ``kafka-dump-log.sh``, line for line.

Port of ``kafka.tools.DumpLogSegments`` (core, tag 3.8.0, with the KRaft control records of 3.9): the
same options, the same lines on stdout (the 3.3+ text: ``Log starting offset``, ``baseOffset: ...``
batch lines, ``| offset: ...`` record lines) and the same reports on stderr at the end (index
mismatches, time-index errors, non-consecutive offsets).  Files are dispatched on the text after the
last ``.`` of their name: ``.log`` and KRaft ``.checkpoint``, ``.index``, ``.timeindex``, ``.snapshot``
and ``.txnindex``.

``--files`` takes local paths and URLs (``s3://bucket/logs/topic-0/00000000000000000000.log``, with
``--storage-option NAME=VALUE``: :mod:`kafkalog.urls`, read by range, never mapped or changed).
It also takes a partition dir: its segment files (``.log``, ``.index``, ``.timeindex``,
``.txnindex``; not the snapshots), by base offset, as if named one by one.  A partition dir with no segment
yet is a valid, empty partition: a note on stderr, nothing dumped, exit 0.

Where Kafka's tool would stop with a Java stack trace (a name that is not an offset, a corrupt batch
header, a record that does not decode), this one writes one line naming the file and the problem to
stderr and goes on with the next batch or file; a file that does not exist stops it before it prints
anything (``kafkalog dump: error: FILE: no such file or directory``).  Unlike Kafka's tool it sets its
exit status: 0 when everything read back whole, 1 when it found corruption, invalid bytes or an index whose
lookups go wrong, 2 when a file could not be read or dumped.  A file whose suffix it does not know gets
Kafka's ``Ignoring unknown file ...`` line, but where Kafka's tool then exits 0, this one exits 2: a
file named for dumping and not dumped is an error.  Kafka's index check is stricter than a broker needs: it
reports an entry whose offset is the last offset of a *later* batch of the same append as a mismatch, which
brokers write, and reads the first slot of a time index that holds no entry yet as an entry.  The reports keep
Kafka's lines, but the exit status of an offset or time index dumped comes from the rule lookups rely on,
``kafkalog verify``'s (:func:`~kafkalog.tools.verify.verify_segment_index`).

``--offsets-decoder``, ``--transaction-log-decoder`` and ``--cluster-metadata-decoder`` decode the records of
Kafka's internal topics as Kafka 3.8's parsers do, ``--remote-log-metadata-decoder`` the ``__remote_log_metadata``
topic's as Kafka 3.9's does (:mod:`kafkalog.tools.dump_decoders`).

``--json`` gives the same facts, one JSON object per line, keyed by the labels of the text (``type``
says which line it stands for; the stderr reports come last as ``problem`` objects).
"""

from __future__ import annotations

import argparse
import base64
import errno
import json
import os
import re
import struct
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from .._common import INT32_MAX, INT64_MAX, INT64_MIN, MAGIC_V2, NO_TIMESTAMP
from .._java_utf8 import java_utf8
from ..dir_layout import SEGMENT_FILE_NAME
from ..errors import KafkaLogError, StorageNotFoundError
from ..index import OffsetIndex, TimeIndex
from ..producer_state.entry import decrement_sequence
from ..record import MemoryRecords
from ..record.batch import RecordBatch, increment_sequence
from ..record.kraft import kraft_control_json
from ..record.legacy import LegacyRecordBatch
from ..record.types import ControlRecordType, EndTransactionMarker
from ..tools.dump_decoders import DECODERS, DecoderError, MessageParser
from ..tools.partition_dir import partition_name
from ..tools.verify import Severity, verify_segment_index
from ..transaction_index import aborted_txns_of, sanity_check_entries
from ..urls.files import (
    AnyFile,
    absolute,
    iter_producer_snapshot,
    iter_txn_index_entries,
    open_index_file,
    open_log_file,
    sibling,
)
from ..urls.location import StorageLocation, is_url, locate
from .console import EXIT_FOUND, EXIT_OK, EXIT_USAGE, Console, counted
from .storage_option import add_storage_option_argument, storage_options

__all__ = ["DumpLogSegments", "DumpOptions", "add_parser", "run"]

RECORD_INDENT = "|"
_T = TypeVar("_T")
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP_SNAPSHOT = "bootstrap.checkpoint"
#: Producer-snapshot rows made Python values at a time, while printed.
_SNAPSHOT_PRINT_ROWS = 4096

EXIT_UNREADABLE = EXIT_USAGE  # a file that could not be read at all


# -- decoders (Kafka: org.apache.kafka.tools.api.*Decoder) -------------------------------------------

def _string(data: bytes) -> str:
    """Kafka: ``StringDecoder``, ``new String(bytes, UTF_8)``, malformed bytes replaced as Java replaces them."""
    return java_utf8(data)


def _fixed(fmt: str, what: str) -> Callable[[bytes], str]:
    """Kafka: ``IntegerDecoder`` and ``LongDecoder``, ``ByteBuffer.wrap(bytes).getInt()`` (``getLong()``): the
    first 4 (8) bytes, whatever follows them.  Fewer bytes is a ``BufferUnderflowException`` that stops Kafka's
    tool; here a :class:`~kafkalog.tools.dump_decoders.DecoderError` the dump reports before going on."""
    codec = struct.Struct(fmt)

    def decode(data: bytes) -> str:
        if len(data) < codec.size:
            raise DecoderError(f"{counted(len(data), 'byte')} {'does' if len(data) == 1 else 'do'} not hold {what} "
                                   f"({codec.size} bytes)")
        return str(codec.unpack_from(data)[0])

    return decode


_DECODERS: dict[str, Callable[[bytes], str]] = {
    "string": _string,
    "int": _fixed(">i", "an int"),
    "long": _fixed(">q", "a long"),
    "hex": lambda data: data.hex(),
}
# Kafka's class names for the same decoders; the old kafka.serializer ones print a deprecation line.
_DECODER_CLASSES = {
    "org.apache.kafka.tools.api.StringDecoder": "string",
    "org.apache.kafka.tools.api.IntegerDecoder": "int",
    "org.apache.kafka.tools.api.LongDecoder": "long",
    "org.apache.kafka.tools.api.DefaultDecoder": "hex",
}
_DEPRECATED_DECODERS = {
    "kafka.serializer.StringDecoder": "org.apache.kafka.tools.api.StringDecoder",
    "kafka.serializer.IntegerDecoder": "org.apache.kafka.tools.api.IntegerDecoder",
    "kafka.serializer.LongDecoder": "org.apache.kafka.tools.api.LongDecoder",
    "kafka.serializer.DefaultDecoder": "org.apache.kafka.tools.api.DefaultDecoder",
}


class DumpUsageError(KafkaLogError, ValueError):
    """Options the tool cannot honour."""


def resolve_decoder(name: str, notes: list[str]) -> Callable[[bytes], str]:
    """A decoder by Kafka class name or short name (string, int, long, hex).

    Kafka's ``DefaultDecoder`` yields raw bytes, which its tool prints as a JVM object id; here it
    prints them as hex.
    """
    if name in _DEPRECATED_DECODERS:
        notes.append(f"{name} is deprecated. Please use {_DEPRECATED_DECODERS[name]} instead")
        name = _DEPRECATED_DECODERS[name]
    short = _DECODER_CLASSES.get(name, name)
    if short not in _DECODERS:
        raise DumpUsageError(f"Unknown decoder {name!r}: use string, int, long or hex, or Kafka's class names "
                             f"({', '.join(_DECODER_CLASSES)})")
    return _DECODERS[short]


@dataclass
class DumpOptions:
    """The options of ``DumpLogSegmentsOptions``, resolved (print-data-log implies deep iteration)."""

    files: list[str]
    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX
    skip_record_metadata: bool = False
    key_decoder: Callable[[bytes], str] = _string
    value_decoder: Callable[[bytes], str] = _string
    #: An internal topic's decoder (``--offsets-decoder`` and friends), used instead of the two above.
    parser: MessageParser | None = None
    json: bool = False
    #: The options of the filesystem URL arguments are read through (``--storage-option``).
    storage_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.print_data_log:
            self.deep_iteration = True


def _java_file_string(arg: str) -> str:
    """What ``new File(arg).toString`` prints: repeated separators collapsed, a trailing one dropped (a URL is
    printed as given)."""
    if is_url(arg):
        return arg
    text = re.sub("/+", "/", arg)
    return text[:-1] if len(text) > 1 and text.endswith("/") else text


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


def _optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


#: The files of a segment, in the order ``--files DIR`` dumps them within one segment.
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def segment_files(directory: str) -> list[str]:
    """The segment files of a partition dir (``<20-digit offset>.log``, ``.index``, ``.timeindex``,
    ``.txnindex``), by base offset and in :data:`SEGMENT_SUFFIXES` order within a segment; other files (the
    producer snapshots, checkpoints, ``.deleted``/``.cleaned``/``.swap`` files) are left out."""
    return [os.path.join(directory, name) for name in segment_file_names(os.listdir(directory))]


def segment_file_names(names: Iterable[str]) -> list[str]:
    """The segment files among ``names`` in the order of :func:`segment_files`."""
    found = [(int(m.group(1)), SEGMENT_SUFFIXES.index("." + m.group(2)), name) for name in names
             if (m := SEGMENT_FILE_NAME.match(name)) and "." + m.group(2) in SEGMENT_SUFFIXES]
    return [name for _base, _rank, name in sorted(found)]


def _base_offset_of(path: AnyFile) -> int:
    """The offset in a segment file's name (Kafka: ``name.split("\\.")(0).toLong``)."""
    stem = path.name.split(".", 1)[0]
    if not re.fullmatch(r"-?\d+", stem) or not INT64_MIN <= int(stem) <= INT64_MAX:
        raise DumpUsageError(f"{path.name} is not named after an offset (expected e.g. 00000000000000000000"
                             f"{Path(path.name).suffix})")
    return int(stem)


@dataclass
class _TimeIndexDumpErrors:
    """Kafka: ``DumpLogSegments.TimeIndexDumpErrors`` (kept in file order)."""

    mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.mismatches or self.out_of_order or self.not_found)


@dataclass
class _DeepRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    crc: int | None = None  # legacy records only
    valid: bool | None = None


class _Pairs:
    """The ``(a, b)`` pairs a dump reports after its last file, newest first, as Kafka prints its Scala lists
    (``pairs ::= (a, b)`` prepends).

    Adding is O(1), where the port's ``list.insert(0, ...)`` was O(pairs), which made a compacted segment's
    deep dump quadratic in its offset gaps.  And a segment can have a gap at every record, tens of millions
    of them for a few hundred KB of gzip: the pairs are kept as 16 bytes each, and past :attr:`IN_MEMORY`
    pairs they go to an unnamed temporary file, read back from its end when they are reported, so what the
    dump holds is bounded whatever the number of gaps.
    """

    IN_MEMORY = 1 << 16

    def __init__(self) -> None:
        self._tail = array("q")  # the newest pairs, flattened
        self._spill: IO[bytes] | None = None
        self._spilled = 0

    def add(self, a: int, b: int) -> None:
        self._tail.append(a)
        self._tail.append(b)
        if len(self._tail) >= 2 * self.IN_MEMORY:
            if self._spill is None:
                self._spill = tempfile.TemporaryFile(prefix="kafkalog-dump-")  # noqa: SIM115 (closed by close())
            self._tail.tofile(self._spill)
            self._spilled += len(self._tail) // 2
            self._tail = array("q")

    def __len__(self) -> int:
        return self._spilled + len(self._tail) // 2

    def newest_first(self) -> Iterator[tuple[int, int]]:
        tail = self._tail
        for i in range(len(tail) - 2, -1, -2):
            yield tail[i], tail[i + 1]
        if self._spill is None:
            return
        pair_bytes = 2 * tail.itemsize
        end = self._spilled
        while end > 0:
            start = max(0, end - self.IN_MEMORY)
            self._spill.seek(start * pair_bytes)
            piece = array("q")
            piece.fromfile(self._spill, 2 * (end - start))
            for i in range(len(piece) - 2, -1, -2):
                yield piece[i], piece[i + 1]
            end = start

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None


class DumpLogSegments:
    """One run of the tool over ``options.files``; :meth:`run` returns the exit status."""

    def __init__(self, options: DumpOptions, console: Console) -> None:
        self.options = options
        self.console = console
        self.index_mismatches: dict[str, _Pairs] = {}
        self.time_index_errors = _TimeIndexDumpErrors()
        self.non_consecutive: dict[str, _Pairs] = {}
        # The offset and time indexes dumped whole, whose exit status verify's rule gives (see _print_reports).
        self.dumped_indexes: list[AnyFile] = []
        self.status = EXIT_OK

    # -- output -------------------------------------------------------------------------------------

    def _emit(self, text: str, kind: str, **facts: Any) -> None:
        if self.options.json:
            self.console.json_line({"type": kind, **facts})
        else:
            self.console.print(text)

    def _problem(self, file: AnyFile | str, message: str, status: int = EXIT_FOUND) -> None:
        """A problem Kafka's tool would have died on: reported at once, and the run goes on."""
        self.status = max(self.status, status)
        if self.options.json:
            self.console.json_line({"type": "problem", "file": str(file), "message": message})
        else:
            self.console.error(f"kafkalog dump: {file}: {message}")

    # -- the run (Kafka: DumpLogSegments.main) --------------------------------------------------------

    def _locate(self, arg: str) -> AnyFile:
        return locate(arg, self.options.storage_options or None)

    def _expand(self, arg: str) -> list[str]:
        """``arg``, or the segment files of a partition dir ``arg`` names, in the order to dump them."""
        where = self._locate(arg)
        if not where.is_dir():
            if isinstance(where, StorageLocation) and not where.exists():
                raise StorageNotFoundError(f"{arg}: no such object or directory")
            return [arg]
        if isinstance(where, StorageLocation):
            files = [f"{arg.rstrip('/')}/{name}" for name in segment_file_names(
                [name for name, kind, _size in where.entries() if kind == "file"])]
        else:
            files = segment_files(arg)
        if files:
            return files
        if partition_name(Path(where.name)) is not None:
            # A partition that has no segment on disk yet (or only its checkpoints) is a valid, empty
            # partition, which every reader of kafkalog opens: there is nothing to dump, and nothing wrong.
            message = "a partition dir without segment files: nothing to dump"
            if self.options.json:
                self.console.json_line({"type": "note", "file": arg, "message": message})
            else:
                self.console.error(f"kafkalog dump: {arg}: {message}")
        else:
            self._problem(arg, "a directory without segment files (<offset>" + ", ".join(SEGMENT_SUFFIXES) + ")",
                          EXIT_UNREADABLE)
        return files

    def run(self) -> int:
        try:
            files = []
            for arg in self.options.files:
                try:
                    files.extend(self._expand(arg))
                except (OSError, KafkaLogError) as e:
                    # A URL is checked here, through its filesystem (a local path is checked before the run).
                    self.console.error(f"kafkalog dump: error: {_describe(e)}")
                    return EXIT_UNREADABLE
            with self.console.progress(len(files), "dump", unit="file") as bar:
                for arg in files:
                    file = self._locate(arg)
                    self._emit(f"Dumping {_java_file_string(arg)}", "file", file=_java_file_string(arg))
                    try:
                        self._dump_file(file)
                    except BrokenPipeError:
                        raise
                    except (OSError, KafkaLogError) as e:
                        self._problem(file, _describe(e), EXIT_FOUND if isinstance(e, KafkaLogError)
                                      and not isinstance(e, OSError | DumpUsageError) else EXIT_UNREADABLE)
                    bar.update()
            self._print_reports()
        finally:
            for pairs in (*self.index_mismatches.values(), *self.non_consecutive.values()):
                pairs.close()
        return self.status

    def _dump_file(self, file: AnyFile) -> None:
        name = file.name
        dot = name.rfind(".")
        suffix = name[dot:] if dot >= 0 else ""
        if suffix in (".log", ".checkpoint"):
            self.dump_log(file)
        elif suffix == ".index":
            self.dump_index(file)
            if not self.options.index_sanity_check:
                self.dumped_indexes.append(file)
        elif suffix == ".timeindex":
            self.dump_time_index(file)
            if not self.options.index_sanity_check:
                self.dumped_indexes.append(file)
        elif suffix == ".snapshot":
            self.dump_producer_snapshot(file)
        elif suffix == ".txnindex":
            self.dump_txn_index(file)
        else:
            # Kafka's message, but not its exit status 0: a file named for dumping and not dumped is an error.
            self.console.error(f"Ignoring unknown file {_java_file_string(str(file))}")
            self.status = max(self.status, EXIT_UNREADABLE)

    def _print_reports(self) -> None:
        """The stderr reports Kafka prints after the last file, in its order."""
        emit_json = self.options.json

        def report(header: str, line: str, kind: str, file: str, pairs: Iterable[tuple[int, int]],
                   names: tuple[str, str]) -> None:
            if emit_json:
                for a, b in pairs:
                    self.console.json_line({"type": "problem", "kind": kind, "file": file, names[0]: a, names[1]: b})
                return
            self.console.error(header)
            for a, b in pairs:
                self.console.error(line.format(a, b))

        for file, found in self.index_mismatches.items():
            report(f"Mismatches in :{file}", "  Index offset: {}, log offset: {}", "indexMismatch", file,
                   found.newest_first(), ("indexOffset", "logOffset"))
        errors = self.time_index_errors
        for file, pairs in errors.mismatches.items():
            report(f"Found timestamp mismatch in :{file}", "  Index timestamp: {}, log timestamp: {}",
                   "timestampMismatch", file, pairs, ("indexTimestamp", "logTimestamp"))
        for file, pairs in errors.out_of_order.items():
            report(f"Found out of order timestamp in :{file}",
                   "  Index timestamp: {}, Previously indexed timestamp: {}",
                   "outOfOrderTimestamp", file, pairs, ("indexTimestamp", "previousIndexTimestamp"))
        for file, pairs in errors.not_found.items():
            report("The following indexed offsets are not found in the log.",
                   "Indexed offset: {}, found log offset: {}",
                   "indexedOffsetNotFound", file, pairs, ("indexedOffset", "foundLogOffset"))
        for file, found in self.non_consecutive.items():
            report(f"Non-consecutive offsets in {file}", "  {} is followed by {}", "nonConsecutiveOffsets", file,
                   found.newest_first(), ("offset", "followedBy"))
        # Kafka's index reports hold entries a broker writes (an append of several batches indexed by its last
        # offset at its first batch; a first time-index slot that is the zero tail): the exit status says whether
        # lookups through the index would go wrong, by verify's rule, whatever Kafka's lines say.
        for index in self.dumped_indexes:
            try:
                log = open_log_file(sibling(index, f"{index.name.split('.', 1)[0]}.log"))
                findings = verify_segment_index(index, log)
            except (OSError, KafkaLogError) as e:
                self._problem(index, _describe(e), EXIT_UNREADABLE)
                continue
            if any(finding.severity is Severity.ERROR for finding in findings):
                self.status = max(self.status, EXIT_FOUND)

    # -- .txnindex and .snapshot ----------------------------------------------------------------------

    def dump_txn_index(self, file: AnyFile) -> None:
        """Kafka: ``dumpTxnIndex``, the entries read a chunk at a time.  With ``--index-sanity-check``, Kafka's
        ``TransactionIndex.sanityCheck`` instead (the check a broker's open rebuilds the index on, and without
        which kafkalog's read-only readers do not trust it): ``<file> passed sanity check.``, as for the other
        indexes, or the check's error.  (Kafka's tool ignores the option for a ``.txnindex`` and prints it.)"""
        start_offset = _base_offset_of(file)
        if self.options.index_sanity_check:
            for chunk in iter_txn_index_entries(file):
                sanity_check_entries(chunk, start_offset, str(absolute(file)))
            self._emit(f"{_java_file_string(str(file))} passed sanity check.", "sanityCheckPassed")
            return
        for txn in (txn for chunk in iter_txn_index_entries(file) for txn in aborted_txns_of(chunk)):
            self._emit(f"version: {txn.version} producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
                       f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}",
                       "abortedTxn", version=txn.version, producerId=txn.producer_id,
                       firstOffset=txn.first_offset, lastOffset=txn.last_offset,
                       lastStableOffset=txn.last_stable_offset)

    def dump_producer_snapshot(self, file: AnyFile) -> None:
        """Kafka: ``dumpProducerIdSnapshot`` (a corrupt snapshot is reported, as Kafka does, on stderr, and nothing
        of it is printed).  The entries are read a chunk of rows at a time and printed from the rows: memory is a
        chunk, whatever the snapshot's size (:func:`~kafkalog.urls.files.iter_producer_snapshot`)."""
        rows = (chunk[start:start + _SNAPSHOT_PRINT_ROWS] for chunk in iter_producer_snapshot(file)
                for start in range(0, len(chunk), _SNAPSHOT_PRINT_ROWS))
        for block in rows:
            for (producer_id, producer_epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
                 txn_first) in block.tolist():
                # The fields of the entry readSnapshot makes of the row: its last timestamp is the row's, its
                # open transaction only when the offset is not negative, its batch only when the last offset is not.
                current_txn_first_offset = txn_first if txn_first >= 0 else None
                text = (f"producerId: {producer_id} producerEpoch: {producer_epoch} "
                        f"coordinatorEpoch: {coordinator_epoch} "
                        f"currentTxnFirstOffset: {_optional_long(current_txn_first_offset)} "
                        f"lastTimestamp: {timestamp} ")
                facts: dict[str, Any] = {
                    "producerId": producer_id, "producerEpoch": producer_epoch,
                    "coordinatorEpoch": coordinator_epoch, "currentTxnFirstOffset": current_txn_first_offset,
                    "lastTimestamp": timestamp}
                if last_offset >= 0:
                    first_seq = decrement_sequence(last_seq, offset_delta)
                    text += (f"firstSequence: {first_seq} lastSequence: {last_seq} "
                             f"lastOffset: {last_offset} offsetDelta: {offset_delta} "
                             f"timestamp: {timestamp}")
                    facts.update(firstSequence=first_seq, lastSequence=last_seq, lastOffset=last_offset,
                                 offsetDelta=offset_delta, timestamp=timestamp)
                self._emit(text, "producerState", **facts)

    # -- .index --------------------------------------------------------------------------------------

    def dump_index(self, file: AnyFile) -> None:
        """Kafka: ``dumpIndex``: each entry's batch must be at its position with its offset as last offset."""
        start_offset = _base_offset_of(file)
        log_file = sibling(file, f"{file.name.split('.', 1)[0]}.log")
        if not file.exists():
            raise FileNotFoundError(errno.ENOENT, "No such file", str(file))
        with open_log_file(log_file) as records:
            index = open_index_file(OffsetIndex, file, start_offset)
            try:
                if index.entries == 0:
                    self._emit(f"{_java_file_string(str(file))} is empty.", "indexEmpty")
                    return
                if self.options.index_sanity_check:
                    index.sanity_check()
                    self._emit(f"{_java_file_string(str(file))} passed sanity check.", "sanityCheckPassed")
                    return
                key = str(absolute(file))
                for i in range(index.entries):
                    entry = index.entry(i)
                    # A crashed broker leaves a zero-filled tail: its first zero entry ends the index.
                    if entry.offset == index.base_offset and i > 0:
                        return
                    last_offset = -1
                    if entry.position < records.size_in_bytes():
                        # Only the first batch of the window is wanted: scan no further than it.
                        window = records.read(entry.position, self.options.max_message_size)
                        first = window.scan(check_crc=False, stop_on_invalid=False,
                                            max_entry_size=self.options.max_message_size, max_batches=1).batches
                        last_offset = int(first["last_offset"][0]) if len(first) else -1
                    if last_offset != entry.offset:
                        self._pairs(self.index_mismatches, key).add(entry.offset, last_offset)
                    if not self.options.verify_index_only:
                        self._emit(f"offset: {entry.offset} position: {entry.position}", "indexEntry",
                                   offset=entry.offset, position=entry.position)
            finally:
                index.close_handler()

    # -- .timeindex -----------------------------------------------------------------------------------

    def dump_time_index(self, file: AnyFile) -> None:
        """Kafka: ``dumpTimeIndex``: each entry's offset must be a batch's last offset, its timestamp that
        batch's largest, and timestamps must rise."""
        start_offset = _base_offset_of(file)
        stem = file.name.split(".", 1)[0]
        if not file.exists():
            raise FileNotFoundError(errno.ENOENT, "No such file", str(file))
        with open_log_file(sibling(file, f"{stem}.log")) as records:
            index = open_index_file(OffsetIndex, sibling(file, f"{stem}.index"), start_offset)
            time_index = open_index_file(TimeIndex, file, start_offset)
            try:
                if self.options.index_sanity_check:
                    time_index.sanity_check()
                    self._emit(f"{_java_file_string(str(file))} passed sanity check.", "sanityCheckPassed")
                    return
                key = str(absolute(file))
                errors = self.time_index_errors
                previous = NO_TIMESTAMP
                for i in range(time_index.entries):
                    entry = time_index.entry(i)
                    if entry.offset == time_index.base_offset and i > 0:
                        return
                    position = index.lookup(entry.offset).position
                    # The search kernel stops at the first batch that reaches the offset, as Kafka's
                    # lazy iteration does.
                    found = records.search_for(entry.offset, position) \
                        if position < records.size_in_bytes() else None
                    if found is None:
                        errors.not_found.setdefault(key, []).append((entry.offset, -1))
                    elif found.offset != entry.offset:
                        errors.not_found.setdefault(key, []).append((entry.offset, found.offset))
                    else:
                        data = records.read_bytes(found.position - records.start, found.size)
                        batch = next(MemoryRecords(data).batches())
                        max_timestamp = NO_TIMESTAMP
                        for columns in batch.column_chunks(check_crcs=False):
                            if len(columns):
                                max_timestamp = max(max_timestamp, int(columns.records["timestamp"].max()))
                        if max_timestamp != entry.timestamp:
                            errors.mismatches.setdefault(key, []).append((entry.timestamp, max_timestamp))
                        if previous >= entry.timestamp:
                            errors.out_of_order.setdefault(key, []).append((entry.timestamp, previous))
                    if not self.options.verify_index_only:
                        self._emit(f"timestamp: {entry.timestamp} offset: {entry.offset}", "timeIndexEntry",
                                   timestamp=entry.timestamp, offset=entry.offset)
                    previous = entry.timestamp
            finally:
                index.close_handler()
                time_index.close_handler()

    # -- .log and .checkpoint --------------------------------------------------------------------------

    def dump_log(self, file: AnyFile) -> None:
        """Kafka: ``dumpLog``: every batch, and with deep iteration every record, from position 0."""
        name = file.name
        if name.endswith(".log"):
            start_offset = _base_offset_of(file)
            self._emit(f"Log starting offset: {start_offset}", "logStart", startingOffset=start_offset)
        elif name == BOOTSTRAP_SNAPSHOT:
            self._emit("KRaft bootstrap snapshot", "bootstrapSnapshot")
        else:
            match = _SNAPSHOT_NAME.match(name)
            if match is None:
                raise DumpUsageError(f"{name} is not a KRaft snapshot name (<20-digit offset>-<10-digit epoch>"
                                     ".checkpoint)")
            end_offset, epoch = int(match.group(1)), int(match.group(2))
            self._emit(f"Snapshot end offset: {end_offset}, epoch: {epoch}", "snapshotStart",
                       endOffset=end_offset, epoch=epoch)
        options = self.options
        with open_log_file(file) as whole:
            records = whole.read(0, options.max_bytes)
            valid_bytes = 0
            last_offset = -1
            key = str(absolute(file))
            with self.console.progress(records.size_in_bytes(), name, unit="B", unit_scale=True) as bar:
                try:
                    for batch in records.batches():
                        self._print_batch_level(batch, valid_bytes)
                        if not batch.is_valid():
                            self.status = max(self.status, EXIT_FOUND)
                        if options.deep_iteration:
                            last_offset = self._print_records(file, key, batch, last_offset)
                        valid_bytes += batch.size_in_bytes
                        bar.update(batch.size_in_bytes)
                except KafkaLogError as e:
                    self._problem(file, _describe(e))
            trailing = records.size_in_bytes() - valid_bytes
            if trailing > 0 and options.max_bytes == INT32_MAX:
                self.status = max(self.status, EXIT_FOUND)
                self._emit(f"Found {trailing} invalid bytes at the end of {name}", "invalidBytes",
                           bytes=trailing, fileName=name)

    def _print_batch_level(self, batch: RecordBatch, accumulative_bytes: int) -> None:
        """Kafka: ``printBatchLevel``."""
        facts: dict[str, Any] = {}
        if batch.magic >= MAGIC_V2:
            facts.update(baseOffset=batch.base_offset, lastOffset=batch.last_offset, count=batch.count,
                         baseSequence=batch.base_sequence, lastSequence=batch.last_sequence,
                         producerId=batch.producer_id, producerEpoch=batch.producer_epoch,
                         partitionLeaderEpoch=batch.partition_leader_epoch,
                         isTransactional=batch.is_transactional, isControl=batch.is_control)
            text = " ".join(f"{label}: {_text(value)}" for label, value in facts.items())
            horizon = batch.delete_horizon_ms
            text += f" deleteHorizonMs: {_optional_long(horizon)}"
            facts["deleteHorizonMs"] = horizon
        else:
            facts["offset"] = batch.last_offset
            text = f"offset: {batch.last_offset}"
        timestamp_type = str(batch.timestamp_type)
        valid = batch.is_valid()
        compression = batch.compression.kafka_name
        text += (f" position: {accumulative_bytes} {timestamp_type}: {batch.max_timestamp} "
                 f"size: {batch.size_in_bytes} magic: {batch.magic} compresscodec: {compression} "
                 f"crc: {batch.crc} isvalid: {_java_bool(valid)}")
        facts.update(position=accumulative_bytes, timestampType=timestamp_type, maxTimestamp=batch.max_timestamp,
                     size=batch.size_in_bytes, magic=batch.magic, compresscodec=compression, crc=batch.crc,
                     isvalid=valid)
        self._emit(text, "batch", **facts)

    def _pairs(self, reports: dict[str, _Pairs], key: str) -> _Pairs:
        found = reports.get(key)
        if found is None:
            found = reports[key] = _Pairs()
        return found

    def _print_records(self, file: AnyFile, key: str, batch: RecordBatch, last_offset: int) -> int:
        """The deep part of ``dumpLog``: one line per record; returns the last offset seen.  The records are
        decoded a chunk at a time as they are printed (a batch may hold tens of millions); a batch that fails
        to decode is reported after the records before the failure."""
        options = self.options
        if batch.magic >= MAGIC_V2 and not batch.is_control and not (options.json or options.print_data_log
                                                                     or options.skip_record_metadata):
            return self._print_record_lines(file, key, batch, last_offset)
        return self._print_record_objects(file, key, batch, last_offset)

    def _print_record_objects(self, file: AnyFile, key: str, batch: RecordBatch, last_offset: int) -> int:
        """:meth:`_print_records` for every case: a record object and a line (or a JSON object) at a time."""
        options = self.options
        timestamp_type = str(batch.timestamp_type)
        is_v2 = batch.magic >= MAGIC_V2
        gaps: _Pairs | None = None
        for record in self._until_undecodable(file, batch, _deep_records(batch)):
            if last_offset != -1 and record.offset != last_offset + 1:
                if gaps is None:
                    gaps = self._pairs(self.non_consecutive, key)
                gaps.add(last_offset, record.offset)
            last_offset = record.offset
            text = ""
            facts: dict[str, Any] = {}
            prefix = f"{RECORD_INDENT} "
            if not options.skip_record_metadata:
                key_size = -1 if record.key is None else len(record.key)
                value_size = -1 if record.value is None else len(record.value)
                text = (f"{prefix}offset: {record.offset} {timestamp_type}: {record.timestamp} "
                        f"keySize: {key_size} valueSize: {value_size}")
                facts.update(offset=record.offset, timestampType=timestamp_type, timestamp=record.timestamp,
                             keySize=key_size, valueSize=value_size)
                prefix = " "
                if is_v2:
                    sequence = -1 if batch.base_sequence < 0 else \
                        increment_sequence(batch.base_sequence, record.offset - batch.base_offset)
                    header_keys = [k for k, _v in record.headers]
                    text += f" sequence: {sequence} headerKeys: [{','.join(header_keys)}]"
                    facts.update(sequence=sequence, headerKeys=header_keys)
                if record.crc is not None:
                    text += f" isValid: {_java_bool(bool(record.valid))} crc: {record.crc}}}"
                    facts.update(isValid=record.valid, crc=record.crc)
                    if not record.valid:
                        self.status = max(self.status, EXIT_FOUND)
                if batch.is_control:
                    control_text, control_facts = self._control_part(file, batch, record)
                    text += control_text
                    facts.update(control_facts)
            if options.print_data_log and not batch.is_control:
                key_text, payload = self._parse(file, record)
                if key_text is not None:
                    text += f"{prefix}key: {key_text}"
                    facts["key"] = self._json_fact(key_text)
                    prefix = " "
                if payload is not None:
                    text += f" payload: {payload}"
                    facts["payload"] = self._json_fact(payload)
                if options.json and record.headers:
                    facts["headers"] = [{"key": k, "value": None if v is None else base64.b64encode(v).decode()}
                                        for k, v in record.headers]
            self._emit(text, "record", **facts)
        return last_offset

    def _until_undecodable(self, file: AnyFile, batch: RecordBatch, decoded: Iterator[_T]) -> Iterator[_T]:
        """What ``decoded`` (a batch's records or their columns, decoded as they are asked for) yields, up to a part
        that fails to decode, which is reported and ends the batch."""
        try:
            yield from decoded
        except KafkaLogError as e:
            self._problem(file, f"batch at position {batch.position}: {_describe(e)}")

    def _print_record_lines(self, file: AnyFile, key: str, batch: RecordBatch, last_offset: int) -> int:
        """:meth:`_print_records` for what a deep dump mostly prints, the records of a v2 data batch as text with
        their metadata and no payload: the same lines, made a chunk of records at a time from the decoded columns
        (the kernel's record rows) and written as one string, rather than a record object and a line at a time."""
        timestamp_type = str(batch.timestamp_type)
        base_sequence, base_offset = batch.base_sequence, batch.base_offset
        for columns in self._until_undecodable(file, batch, batch.column_chunks(check_crcs=False)):
            rows = columns.records
            if not len(rows):
                continue
            offsets = rows["offset"].tolist()
            if last_offset != -1 or len(offsets) > 1:
                previous = [last_offset, *offsets[:-1]]
                gaps = [(a, b) for a, b in zip(previous, offsets, strict=True) if a != -1 and b != a + 1]
                if gaps:
                    pairs = self._pairs(self.non_consecutive, key)
                    for a, b in gaps:
                        pairs.add(a, b)
            last_offset = offsets[-1]
            if base_sequence < 0:
                sequences: Iterable[int] = [-1] * len(offsets)
            else:
                sequences = [increment_sequence(base_sequence, offset - base_offset) for offset in offsets]
            header_keys = self._header_keys(columns)
            lines = [f"{RECORD_INDENT} offset: {offset} {timestamp_type}: {timestamp} keySize: {key_size} "
                     f"valueSize: {value_size} sequence: {sequence} headerKeys: [{keys}]"
                     for offset, timestamp, key_size, value_size, sequence, keys
                     in zip(offsets, rows["timestamp"].tolist(), rows["key_len"].tolist(),
                            rows["value_len"].tolist(), sequences, header_keys, strict=True)]
            lines.append("")
            self.console.write("\n".join(lines))
        return last_offset

    @staticmethod
    def _header_keys(columns: Any) -> list[str]:
        """Each record's header keys as the dump prints them (joined by commas), from the decoded columns."""
        rows = columns.records
        if not len(columns.headers):
            return [""] * len(rows)
        data, headers = columns.data, columns.headers
        key_pos, key_len = headers["key_pos"].tolist(), headers["key_len"].tolist()
        return [",".join(java_utf8(data[key_pos[h]:key_pos[h] + key_len[h]]) for h in range(first, first + count))
                for first, count in zip(rows["header_index"].tolist(), rows["header_count"].tolist(), strict=True)]

    def _json_fact(self, text: str) -> Any:
        """A decoded key or payload for ``--json``: the object itself where an internal topic's decoder printed
        JSON (so a reader does not parse it twice), else the text as printed."""
        if self.options.parser is None or not text.startswith("{"):
            return text
        try:
            return json.loads(text)
        except ValueError:
            return text

    def _parse(self, file: AnyFile, record: _DeepRecord) -> tuple[str | None, str | None]:
        """Kafka: ``MessageParser.parse``: the key and payload text, either absent.  A record an internal
        topic's decoder cannot print at all (where Kafka's tool would stop) is reported, and the line goes
        without them."""
        parser = self.options.parser
        if parser is None:
            try:
                return (None if record.key is None else self.options.key_decoder(record.key),
                        None if record.value is None else self.options.value_decoder(record.value))
            except DecoderError as e:
                self._problem(file, f"record at offset {record.offset}: {e}")
                return None, None
        try:
            return parser(record.offset, record.key, record.value)
        except DecoderError as e:
            self._problem(file, str(e))
            return None, None

    def _control_part(self, file: AnyFile, batch: RecordBatch, record: _DeepRecord) -> tuple[str, dict[str, Any]]:
        try:
            control_type = ControlRecordType.parse(record.key)
            if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                marker = EndTransactionMarker.deserialize(record.key, record.value)
                name = marker.control_type.name
                return (f" endTxnMarker: {name} coordinatorEpoch: {marker.coordinator_epoch}",
                        {"endTxnMarker": name, "coordinatorEpoch": marker.coordinator_epoch})
            kraft = kraft_control_json(control_type, record.value)
            if kraft is not None:
                return f" {kraft[0]} {kraft[1]}", {kraft[0]: kraft[1]}
            assert record.key is not None
            type_id = ControlRecordType.type_id(record.key)
            return f" controlType: {control_type.name}({type_id})", {"controlType": f"{control_type.name}({type_id})"}
        except KafkaLogError as e:
            self._problem(file, f"control record at offset {record.offset}: {_describe(e)}")
            return "", {}


def _text(value: Any) -> str:
    return _java_bool(value) if isinstance(value, bool) else str(value)


def _describe(error: BaseException) -> str:
    if isinstance(error, FileNotFoundError):
        return f"No such file: {error.filename or error}"
    if isinstance(error, PermissionError):
        return f"Permission denied: {error.filename or error}"
    if isinstance(error, IsADirectoryError):
        return f"Is a directory: {error.filename or error}"
    return str(error)


def _deep_records(batch: RecordBatch) -> Iterator[_DeepRecord]:
    """A batch's records as deep iteration sees them, decoded a chunk at a time; legacy records carry their
    own CRC and validity (Kafka's deep iterator yields each legacy message as a batch of its own)."""
    if not isinstance(batch, LegacyRecordBatch):
        for chunk in batch.record_chunks(check_crcs=False):
            for r in chunk:
                yield _DeepRecord(r.offset, r.timestamp, r.key, r.value, list(r.headers))
        return
    for records, crcs, valid in batch.entry_chunks():
        for r, crc, ok in zip(records, crcs, valid, strict=True):
            yield _DeepRecord(r.offset, r.timestamp, r.key, r.value, [], crc, ok)


# -- the subcommand ----------------------------------------------------------------------------------

#: Decoders of Kafka releases after 3.8, for topics kafkalog does not decode.
_UNSUPPORTED_DECODERS = ("share_group_state_decoder",)
#: ``--offsets-decoder`` and friends, in the order Kafka lets one win over the next.
_DECODER_HELP = {
    "offsets_decoder": "decode the records as the __consumer_offsets topic's (group metadata and offset "
                       "commits, as JSON); implies --print-data-log",
    "transaction_log_decoder": "decode the records as the __transaction_state topic's (transaction metadata); "
                               "implies --print-data-log",
    "cluster_metadata_decoder": "decode the records as KRaft __cluster_metadata records (by record type, as "
                                "JSON); implies --print-data-log",
    "remote_log_metadata_decoder": "decode the records as the __remote_log_metadata topic's (tiered storage's "
                                   "RemoteLogSegmentMetadata and friends, as Kafka 3.9 prints them); implies "
                                   "--print-data-log",
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dump", help="print segment, index and snapshot files as Kafka's kafka-dump-log does",
        description="Parse log, index, time index, producer snapshot and transaction index files and print "
                    "them as Kafka's kafka-dump-log.sh (DumpLogSegments) does. Exit status: 0 all read back "
                    "whole, 1 corruption, invalid bytes or an index whose lookups go wrong (kafkalog verify's "
                    "rule: Kafka's mismatch lines alone do not count), 2 a file could not be read "
                    "or dumped (unlike Kafka's tool, a file of unknown suffix is an error: it prints Kafka's "
                    "'Ignoring unknown file' and exits 2).")
    parser.add_argument("--files", required=True, metavar="FILE1,FILE2,...",
                        help="REQUIRED: the comma separated list of data and index log files to be dumped; a "
                             "partition dir stands for its .log, .index, .timeindex and .txnindex files, by base "
                             "offset")
    parser.add_argument("--print-data-log", action="store_true",
                        help="print the messages' keys and payloads (implies --deep-iteration)")
    parser.add_argument("--deep-iteration", action="store_true", help="print every record, not only batches")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="check the index against the log without printing its entries")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="run the check a broker runs on startup to decide whether to rebuild an index")
    parser.add_argument("--max-message-size", type=_positive_int, default=DEFAULT_MAX_MESSAGE_SIZE,
                        metavar="SIZE", help="size of the largest message (default %(default)s)")
    parser.add_argument("--max-bytes", type=_positive_int, default=INT32_MAX, metavar="SIZE",
                        help="read at most this many bytes of each .log file")
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="print only keys and payloads for each record")
    parser.add_argument("--key-decoder-class", metavar="DECODER",
                        help="decode keys as string (default), int, long or hex (Kafka class names work too); "
                             "implies --print-data-log")
    parser.add_argument("--value-decoder-class", metavar="DECODER",
                        help="decode payloads as string (default), int, long or hex; implies --print-data-log")
    for name, text in _DECODER_HELP.items():
        parser.add_argument(f"--{name.replace('_', '-')}", action="store_true", help=text)
    for name in _UNSUPPORTED_DECODERS:
        parser.add_argument(f"--{name.replace('_', '-')}", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true",
                        help="print the same facts as one JSON object per line, problems included")
    add_storage_option_argument(parser)
    parser.set_defaults(run=run, streaming_output=True, input_paths=lambda a: _file_args(a.files))
    return parser


def _file_args(text: str) -> list[str]:
    """The paths of ``--files`` (comma separated, empty entries dropped)."""
    return [f for f in text.split(",") if f]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 < value <= INT32_MAX:
        raise argparse.ArgumentTypeError(f"must be between 1 and {INT32_MAX}: {value}")
    return value


def run(args: argparse.Namespace, console: Console) -> int:
    for name in _UNSUPPORTED_DECODERS:
        if getattr(args, name):
            console.error(f"kafkalog dump: --{name.replace('_', '-')} is not supported: kafkalog decodes keys and "
                          "payloads as string, int, long or hex (--key-decoder-class, --value-decoder-class), "
                          "or as Kafka's internal topics (--offsets-decoder, --transaction-log-decoder, "
                          "--cluster-metadata-decoder, --remote-log-metadata-decoder)")
            return EXIT_UNREADABLE
    notes: list[str] = []
    try:
        key_decoder = resolve_decoder(args.key_decoder_class or "string", notes)
        value_decoder = resolve_decoder(args.value_decoder_class or "string", notes)
    except DumpUsageError as e:
        console.error(f"kafkalog dump: {e}")
        return EXIT_UNREADABLE
    files = _file_args(args.files)
    if not files:
        console.error("kafkalog dump: --files names no file")
        return EXIT_UNREADABLE
    for note in notes:
        console.print(note)
    # As Kafka's DumpLogSegmentsOptions.messageParser: the first internal-topic decoder named wins over the
    # next and over the key and value decoders.
    internal = next((DECODERS[name]() for name in _DECODER_HELP if getattr(args, name)), None)
    options = DumpOptions(
        files=files,
        print_data_log=args.print_data_log or args.key_decoder_class is not None
        or args.value_decoder_class is not None or internal is not None, parser=internal,
        deep_iteration=args.deep_iteration, verify_index_only=args.verify_index_only,
        index_sanity_check=args.index_sanity_check, max_message_size=args.max_message_size,
        max_bytes=args.max_bytes, skip_record_metadata=args.skip_record_metadata,
        key_decoder=key_decoder, value_decoder=value_decoder, json=args.json, storage_options=storage_options(args))
    return DumpLogSegments(options, console).run()
