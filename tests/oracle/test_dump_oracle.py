"""Kafka's own ``DumpLogSegments`` as the oracle of ``kafkalog dump`` (issue 29).

Kafka's tool runs from the oracle's jars (:mod:`tests.oracle.dump_tool`, one JVM a version) and
``kafkalog dump`` runs in this process on the same files with the same flags; the two outputs are compared
file by file, line for line, and so are the reports both print on stderr after the last file.  The files are
logs kafkalog writes for the purpose (:mod:`tests.oracle.dump_inputs`) and a copy of every golden broker
directory.

Which Kafka: ``kafkalog dump`` prints what Kafka 3.x's tool prints (docs/cli.rst, the spec's §6), and Kafka
3.9.2's is compared as it is, for every flag set.  Kafka 4.x's tool prints some things differently; those
differences are listed in docs/cli.rst, and :func:`as_kafka_3` rewrites 4.4.0's output by that list, rule by
rule, before it is compared: what is left must be equal, so the list is complete for these files.  Where 4.x
changed a decoder's whole text (the transaction log as JSON) or its error wording, 4.4.0 is compared only on
the records both versions print alike.

Where Kafka's tool stops on an exception (a stack trace, exit status 1), ``kafkalog dump`` reports the problem
on stderr and goes on, as docs/cli.rst says: for such a file, what Kafka printed before it stopped must be what
kafkalog printed up to there, kafkalog must name the file in a problem line or a report, and its exit status
must not be 0.  Kafka's other stderr lines are kafkalog's too: ``Ignoring unknown file ...`` as Kafka prints
it, a corrupt snapshot's message behind kafkalog's ``kafkalog dump: <file>: `` prefix.  kafkalog's one
deliberate differences in what it prints for a file (``--index-sanity-check`` on a ``.txnindex``, the wording
of a tagged-field count past the bytes) are applied to Kafka's text the same way (:func:`expected_lines`).

Kafka's side of every case starts when the module's first test asks for it and runs beside the kafkalog side
(the two versions' JVMs at once); a case of generated files takes Kafka a fraction of a second, the golden
folder's deep iteration a few seconds.
"""

from __future__ import annotations

import copy
import io
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.cli import main
from kafkalog.tools.verify import Severity, verify_segment_index
from tests.oracle.conftest import oracle_unavailable
from tests.oracle.dump_inputs import DumpInputs, GoldenInputs, golden_inputs, write_inputs
from tests.oracle.dump_tool import (
    KAFKA_VERSIONS,
    REPORT_HEADERS,
    KafkaDump,
    OracleUnavailable,
    close_servers,
    jar_dir,
    parse_reports,
    run_dump,
    split_by_file,
)
from tests.support.golden_data import GOLDEN

#: The Kafka whose text kafkalog follows (docs/cli.rst) and the later one compared through :func:`as_kafka_3`.
KAFKA_3, KAFKA_4 = KAFKA_VERSIONS["3.9"], KAFKA_VERSIONS["4"]
PROBLEM = "kafkalog dump: "


def require_kafka(version: str) -> None:
    """Skip without Java or the jars, saying how to get them; fail instead under ``KAFKALOG_REQUIRE_ORACLE=1``
    (CI): the oracle's one rule, ``oracle_unavailable`` in tests/oracle/conftest.py."""
    try:
        jar_dir(version)
    except OracleUnavailable as e:
        oracle_unavailable(str(e))


# -- the cases ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One flag set over some of the inputs, against some Kafka versions."""

    name: str
    flags: tuple[str, ...]
    groups: tuple[str, ...]  # DumpInputs / GoldenInputs attributes, "golden." for the latter
    versions: tuple[str, ...] = (KAFKA_3, KAFKA_4)

    @property
    def golden(self) -> bool:
        return any(g.startswith("golden.") for g in self.groups)


DEEP = ("--deep-iteration", "--print-data-log")
INTEGERS = ("--key-decoder-class", "org.apache.kafka.tools.api.LongDecoder",
            "--value-decoder-class", "org.apache.kafka.tools.api.IntegerDecoder")
CASES = [
    Case("deep", DEEP, ("segments",)),
    Case("shallow", (), ("segments",)),
    Case("deep-iteration", ("--deep-iteration",), ("logs",)),
    Case("verify-index-only", ("--verify-index-only",), ("indexes",)),
    Case("index-sanity-check", ("--index-sanity-check",), ("indexes",)),
    Case("max-bytes", ("--max-bytes", "700", *DEEP), ("logs",)),
    Case("skip-record-metadata", ("--skip-record-metadata", *DEEP), ("logs",)),
    Case("integer-decoders", INTEGERS, ("numbers",)),
    Case("offsets-decoder", ("--offsets-decoder",), ("offsets", "offsets_errors"), (KAFKA_3,)),
    Case("offsets-decoder-well-formed", ("--offsets-decoder",), ("offsets",), (KAFKA_4,)),
    # Kafka 4 prints the transaction log as JSON (docs/cli.rst).
    Case("transaction-log-decoder", ("--transaction-log-decoder",), ("transactions", "transactions_errors"),
         (KAFKA_3,)),
    Case("cluster-metadata-decoder", ("--cluster-metadata-decoder",), ("metadata",)),
    Case("golden-deep", DEEP, ("golden.segments",)),
    Case("golden-verify-index-only", ("--verify-index-only",), ("golden.indexes",)),
    Case("golden-index-sanity-check", ("--index-sanity-check",), ("golden.indexes",)),
    Case("golden-offsets-decoder", ("--offsets-decoder",), ("golden.offsets",)),
    Case("golden-cluster-metadata-decoder", ("--cluster-metadata-decoder",), ("golden.metadata",)),
]


@dataclass
class Oracle:
    """The inputs, and Kafka's dumps of them, started in the background once and shared by the tests."""

    inputs: DumpInputs
    golden: GoldenInputs | None
    pool: ThreadPoolExecutor
    runs: dict[tuple[str, str], Future[KafkaDump]] = field(default_factory=dict)
    #: kafkalog's dump of a case with each kernel twin: the same whichever Kafka it is compared with.
    ours: dict[tuple[str, str], OurDump] = field(default_factory=dict)

    def files(self, case: Case) -> list[str]:
        out: list[str] = []
        for group in case.groups:
            if group.startswith("golden."):
                assert self.golden is not None
                out += getattr(self.golden, group.removeprefix("golden."))
            else:
                out += getattr(self.inputs, group)
        return out

    def start(self, case: Case, version: str) -> None:
        key = (case.name, version)
        if key not in self.runs and (self.golden is not None or not case.golden):
            self.runs[key] = self.pool.submit(run_dump, version, self.files(case), case.flags)

    def kafka(self, case: Case, version: str) -> KafkaDump:
        self.start(case, version)
        return self.runs[(case.name, version)].result()


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    root = tmp_path_factory.mktemp("dump-oracle")
    inputs = write_inputs(root / "inputs")
    golden = None
    if GOLDEN.is_dir():
        # Kafka's tool opens an index's sibling files and may create a missing one: it reads a copy.
        copy = root / "golden"
        shutil.copytree(GOLDEN, copy)
        golden = golden_inputs(copy)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="kafka-dump") as pool:
        oracle = Oracle(inputs, golden, pool)
        available = []
        for version in (KAFKA_3, KAFKA_4):
            try:
                jar_dir(version)
                available.append(version)
            except OracleUnavailable:
                pass
        # The slow cases first, so they run while the quick ones are compared.
        for case in sorted(CASES, key=lambda c: not c.golden):
            for version in case.versions:
                if version in available:
                    oracle.start(case, version)
        yield oracle
        for run in oracle.runs.values():
            run.cancel()
    close_servers()


# -- kafkalog's side ------------------------------------------------------------------------------------------

@dataclass
class OurDump:
    status: int
    files: dict[str, list[str]]
    problems: list[str]  # "kafkalog dump: <file>: <message>" lines
    inline_errors: list[str]
    reports: list[tuple[str, ...]]


def kafkalog_dump(flags: tuple[str, ...], files: list[str]) -> OurDump:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", "dump", *flags, "--files", ",".join(files)], stdout=out, stderr=err)
    stderr = err.getvalue().splitlines()
    problems = [line for line in stderr if line.startswith(PROBLEM)]
    inline, reports = parse_reports([line for line in stderr if not line.startswith(PROBLEM)])
    parts = {name: part.lines for name, part in split_by_file(out.getvalue(), files).items()}
    return OurDump(status, parts, problems, inline, reports)


# -- Kafka 4's text as Kafka 3's (each rule is a difference docs/cli.rst lists) -----------------------------------

_LEGACY_CRC = re.compile(r"( isValid: (?:true|false) crc: \d+)(?!})")
_LEADER_CHANGE = re.compile(r" LeaderChange: \{.*\}$")
_SNAPSHOT_ENTRY = re.compile(r"^producerId: .* lastTimestamp: -?\d+$")
_NOT_FOUND_4 = "The following indexed offsets are not found in :"


def as_kafka_3(dump: KafkaDump, flags: tuple[str, ...]) -> KafkaDump:
    """Kafka 4.x's output rewritten by the differences docs/cli.rst lists, into Kafka 3's text (a copy: the
    dump itself is shared by the tests of both kernel twins)."""
    dump = copy.deepcopy(dump)
    # (Only with --skip-record-metadata: otherwise such a line is a payload's own text after a line break.)
    skipped_metadata = "--skip-record-metadata" in flags
    for part in dump.files.values():
        lines = []
        for line in part.lines:
            if line.startswith("| offset: "):
                line = _LEGACY_CRC.sub(r"\1}", line)  # 3.x closes a legacy record's crc with a stray "}"
                line = _LEADER_CHANGE.sub(" controlType: LEADER_CHANGE(2)", line)  # 3.x does not decode it
            elif skipped_metadata and line.startswith("| payload: "):
                line = line[1:]  # a record without a key: 3.x opens the line with " payload:"
            elif _SNAPSHOT_ENTRY.match(line):
                line += " "  # 3.x ends an entry without batch metadata with a space
            lines.append(line)
        part.lines = lines
    reports = []
    for block in dump.reports:
        header, rows = block[0], list(block[1:])
        if header.startswith(_NOT_FOUND_4):
            header = "The following indexed offsets are not found in the log."
        elif header.startswith("Non-consecutive offsets in "):
            # 4.x counts from -1, so a log that does not start at offset 0 reports "-1 is followed by ..." where
            # 3.x starts counting at the first record; 4.x lists the pairs oldest first, 3.x newest first.
            rows = [row for row in rows if not row.startswith("  -1 is followed by ")][::-1]
            if not rows:
                continue
        reports.append((header, *rows))
    dump.reports = sorted(reports)
    return dump


# -- the comparison -------------------------------------------------------------------------------------------

#: kafkalog's documented wordings where Kafka's says little (docs/cli.rst, :mod:`kafkalog.messages.reader`):
#: a tagged-field count past what the bytes left can hold fails before the first field is read (Kafka reads the
#: first one, an unknown tag of size -6 here, and fails on ``new byte[-6]``: ``NegativeArraySizeException: -6``).
DELIBERATE_WORDINGS = {
    "due to: -6.": "due to: Tried to read 2147483647 tagged field(s), but there are only 6 bytes remaining..",
}


def expected_lines(flags: tuple[str, ...], name: str, kafka_lines: list[str]) -> list[str]:
    """What kafkalog prints for a file Kafka dumped whole: Kafka's lines, but for kafkalog's documented
    differences: ``--index-sanity-check`` checks a ``.txnindex`` (Kafka's tool prints its entries), and the
    :data:`DELIBERATE_WORDINGS` of a record that does not decode."""
    if "--index-sanity-check" in flags and name.endswith(".txnindex"):
        return [kafka_lines[0], f"{name} passed sanity check."]
    out = []
    for line in kafka_lines:
        for kafka_end, ours_end in DELIBERATE_WORDINGS.items():
            if line.startswith("| offset: ") and line.endswith(kafka_end):
                line = line[:-len(kafka_end)] + ours_end
        out.append(line)
    return out


def _names(name: str, lines: list[str] | tuple[str, ...]) -> bool:
    return any(name in line for line in lines)


def _lookups_go_wrong(index: str) -> bool:
    """Whether verify's rule finds an entry of the offset or time index ``index`` that sends lookups astray."""
    return any(finding.severity is Severity.ERROR for finding in verify_segment_index(Path(index)))


def compare(flags: tuple[str, ...], kafka: KafkaDump, ours: OurDump) -> list[str]:
    """Every difference between Kafka's dump and kafkalog's, described; empty when they agree."""
    found: list[str] = []
    stopped = {name for name, part in kafka.files.items() if part.exception is not None}
    for name, part in kafka.files.items():
        mine = ours.files.get(name, [])
        if part.exception is None:
            want = expected_lines(flags, name, part.lines)
            if mine != want:
                at = next((i for i, (a, b) in enumerate(zip(want, mine, strict=False)) if a != b),
                          min(len(want), len(mine)))
                found.append(f"{name}, line {at + 1}:\n  Kafka:    {want[at] if at < len(want) else '<end>'}\n"
                             f"  kafkalog: {mine[at] if at < len(mine) else '<end>'}")
            continue
        # Kafka stopped here: its lines are kafkalog's up to there (the last one may be a line it had begun).
        head, last = part.lines[:-1], part.lines[-1]
        if mine[:len(head)] != head or len(mine) <= len(head) or not mine[len(head)].startswith(last):
            found.append(f"{name}: Kafka stopped ({part.exception}) after lines kafkalog does not print first")
        if not (_names(name, ours.problems) or any(_names(name, block[:1]) for block in ours.reports)
                or f"Ignoring unknown file {name}" in ours.inline_errors):
            found.append(f"{name}: Kafka stopped ({part.exception}); kafkalog reports no problem with the file")
    # Kafka's stderr lines while dumping: kafkalog's as they are, or (a message about a file) its problem lines.
    # A name without a dot stops Kafka 3.x's tool; kafkalog ignores it as unknown, as 4.x does (docs/cli.rst).
    unknown = [line for line in kafka.inline_errors if line.startswith("Ignoring unknown file ")]
    ours_unknown = [line for line in ours.inline_errors
                    if not any(line == f"Ignoring unknown file {name}" and "." not in Path(name).name
                               for name in stopped)]
    if ours_unknown != unknown:
        found.append(f"stderr: Kafka {unknown}, kafkalog {ours.inline_errors}")
    messages = [line.split(": ", 2)[-1] for line in ours.problems]
    for line in kafka.inline_errors:
        if line not in unknown and line not in messages:
            found.append(f"stderr: Kafka says {line!r}, kafkalog not")
    for line in ours.problems:
        if not any(_names(name, [line]) for name in stopped) and line.split(": ", 2)[-1] not in kafka.inline_errors:
            found.append(f"stderr: kafkalog says {line!r}, where Kafka's tool goes on without a word")
    # The reports after the last file: Kafka prints none for a file it stopped on (nor any, after stopping).
    ours_reports = [block for block in ours.reports if not any(_names(name, block[:1]) for name in stopped)]
    if ours_reports != kafka.reports:
        found.append("reports differ:\n  Kafka:    " + "\n            ".join(map(" | ".join, kafka.reports))
                     + "\n  kafkalog: " + "\n            ".join(map(" | ".join, ours_reports)))
    # kafkalog's exit status says whether anything was wrong.
    # Non-consecutive offsets are what compaction leaves: kafkalog prints Kafka's report but exits 0 for it.  Kafka's
    # index reports include entries brokers write: an index dumped whole counts by verify's rule, as in kafkalog.
    problem_reports = [block for block in kafka.reports if not block[0].startswith(REPORT_HEADERS)]
    wrong = bool(stopped or problem_reports or kafka.inline_errors) or any(
        (line.startswith("Found ") and " invalid bytes at the end of " in line) or " isvalid: false" in line
        or " isValid: false" in line for part in kafka.files.values() for line in part.lines) or (
        "--index-sanity-check" not in flags and any(
            _lookups_go_wrong(name) for name in kafka.files if name.endswith((".index", ".timeindex"))
            and name not in stopped))
    if (ours.status != 0) != wrong:
        found.append(f"exit status {ours.status}, where Kafka's output {'shows' if wrong else 'shows no'} problem")
    return found


def _check(oracle: Oracle, case: Case, version: str, impl: ModuleType) -> None:
    require_kafka(version)
    if case.golden and oracle.golden is None:
        pytest.skip(f"golden data not found at {GOLDEN}")
    kafka = oracle.kafka(case, version)
    if version != KAFKA_3:
        kafka = as_kafka_3(kafka, case.flags)
    key = (case.name, impl.__name__)
    if key not in oracle.ours:
        oracle.ours[key] = kafkalog_dump(case.flags, oracle.files(case))
    ours = oracle.ours[key]
    differences = compare(case.flags, kafka, ours)
    assert not differences, (f"kafkalog dump {' '.join(case.flags)} differs from Kafka {version}'s DumpLogSegments "
                             f"({len(differences)} differences):\n" + "\n".join(differences[:12]))


@pytest.mark.parametrize(("case", "version"), [pytest.param(c, v, id=f"{c.name}-{v}") for c in CASES
                                               for v in c.versions if not c.golden])
def test_dump_prints_what_kafkas_tool_prints(oracle: Oracle, case: Case, version: str, impl: ModuleType) -> None:
    """The generated logs, each flag set, both kernel twins."""
    _check(oracle, case, version, impl)


@pytest.mark.slow
@pytest.mark.parametrize(("case", "version"), [pytest.param(c, v, id=f"{c.name}-{v}") for c in CASES
                                               for v in c.versions if c.golden])
def test_dump_prints_what_kafkas_tool_prints_for_golden(oracle: Oracle, case: Case, version: str,
                                                         impl: ModuleType) -> None:
    """Every golden broker directory (a copy), each flag set, both kernel twins."""
    _check(oracle, case, version, impl)


def test_stopped_kafka_runs_are_resumed(oracle: Oracle) -> None:
    """The harness itself: a file Kafka's tool stops on is recorded with its exception, the files after it are
    dumped in another run, and all the others once more for their reports, so each file is compared whatever
    comes before it."""
    require_kafka(KAFKA_3)
    dump = oracle.kafka(CASES[0], KAFKA_3)
    stopped = [part for part in dump.files.values() if part.exception is not None]
    # The corrupt gzip payload stops the log's dump and its time index's (whose check reads the batches); the
    # torn log's offset index points past its last whole batch; a name without a dot is the last file.
    assert sorted((Path(p.path).parent.name, Path(p.path).suffix) for p in stopped) == [
        ("codecs-0", ""), ("corrupt-0", ".log"), ("corrupt-0", ".timeindex"), ("torn-0", ".index")]
    assert stopped[0].exception is not None and stopped[0].exception.startswith("KafkaException: ")
    assert stopped[-1].exception is not None and stopped[-1].exception.startswith("StringIndexOutOfBoundsException")
    # One run to each stop (the last file is the last), one of every other file for the reports.
    assert dump.tool_runs == len(stopped) + 1
    assert all(part.lines and part.lines[0] == f"Dumping {name}" for name, part in dump.files.items())

