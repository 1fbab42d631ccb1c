"""Running one scenario on both sides, op by op, and stopping at the first difference.

:func:`run_scenario` starts the log on each side in its own directory (``<work>/kafka/topic-0`` and
``<work>/kafkalog/topic-0``), sends each canonical op to Kafka's runner first, then to kafkalog's with the bytes
Kafka's builder made (the answer's ``"input"``), and compares the two answers and the two directories
(:mod:`tests.oracle.compare`); after the last op both logs are closed (``end``) and compared once more.  Without a
Kafka runner (``kafka=None``) only kafkalog runs: the answers are collected and nothing is compared, which is how
the harness's own tests check kafkalog's side alone.

A runner is anything with ``request(dict) -> dict`` (``tests/oracle/jvm.py``'s ``KafkaRunner``,
:class:`~tests.oracle.kafkalog_side.KafkalogRunner`); one runner serves many scenarios, one after the other.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tests.oracle.compare import (
    Difference,
    LogMatch,
    compare_answers,
    compare_dirs,
    compare_entries,
    producer_payloads,
    rules_for,
)
from tests.oracle.kafkalog_side import KafkalogRunner
from tests.oracle.scenario import Scenario, wire_op

__all__ = ["Outcome", "Runner", "RunnerError", "run_scenario", "size_decided_roll"]

#: The partition both logs live in: a topic-partition directory name, as Kafka's ``UnifiedLog`` requires.
PARTITION = "topic-0"


class Runner(Protocol):
    def request(self, message: dict[str, Any]) -> dict[str, Any]: ...


class RunnerError(RuntimeError):
    """A runner could not do what it was asked (its ``{"fatal": ...}`` answer, or an answer without a state)."""


@dataclass
class Outcome:
    """What running a scenario found: the first difference (``None``: identical) and the op it came after (its
    index; ``len(ops)`` for the final ``end``), how many requests were compared, and every answer pair
    (Kafka's is ``None`` without a Kafka runner)."""

    scenario: Scenario
    difference: Difference | None = None
    op_index: int | None = None
    compared: int = 0
    answers: list[tuple[dict[str, Any] | None, dict[str, Any]]] = field(default_factory=list)
    #: Why the comparison stopped early without a difference: the two logs went separate, legitimate ways at
    #: ``op_index`` (:func:`size_decided_roll`), so that nothing after it can be compared.
    diverged: str | None = None

    @property
    def op(self) -> dict[str, Any] | None:
        if self.op_index is None:
            return None
        if self.op_index >= len(self.scenario.ops):
            return {"cmd": "end"}
        return self.scenario.ops[self.op_index]

    def report(self) -> str:
        """The difference as the command prints it: the scenario, the op (index and JSON) and what differed."""
        if self.difference is None and self.diverged is not None:
            return (f"{self.scenario.source}: kafka {self.scenario.kafka}: identical up to ops[{self.op_index}] "
                    f"{json.dumps(self.op)}, not compared further ({self.compared} requests compared):\n"
                    f"  {self.diverged}")
        if self.difference is None:
            return f"{self.scenario.source}: identical ({self.compared} requests compared)"
        where = "start" if self.op_index == -1 else f"ops[{self.op_index}]"
        return (f"{self.scenario.source}: kafka {self.scenario.kafka}: {where} {json.dumps(self.op)}\n"
                f"  {self.difference.describe()}")


def _ask(runner: Runner, message: dict[str, Any], side: str) -> dict[str, Any]:
    try:
        answer = runner.request(message)
    except Exception as e:
        # jvm.py raises its own errors for a fatal answer, a dead or a silent JVM: one kind of failure here.
        raise RunnerError(f"{side} runner failed on {json.dumps(message)[:300]}: {e}") from e
    if "fatal" in answer:
        raise RunnerError(f"{side} runner refused {json.dumps(message)[:300]}: {answer['fatal']}")
    if "state" not in answer:
        raise RunnerError(f"{side} runner answered {json.dumps(answer)[:300]} to {json.dumps(message)[:300]}: "
                          "no state")
    return answer


def size_decided_roll(op: dict[str, Any], before: tuple[dict[str, Any], dict[str, Any]],
                      after: tuple[dict[str, Any], dict[str, Any]], segment_bytes: int) -> str | None:
    """Why an append rolled on one side only, when the sizes recompression gave the batches before it decided it
    (``None`` when that is not the case).  ``before`` and ``after`` are the (Kafka, kafkalog) states around the
    append, whose results were identical.  It is that case when both logs had the same segments (by base offset)
    before it, and on one side the append went into a new segment at the old log end because the active segment's
    size plus the batch's exceeded ``segment.bytes``, while on the other side the active segment's size plus the
    batch's did not and the append stayed in it.  The two logs are then laid out differently for good, both
    rightly."""
    if op.get("op") not in ("append", "marker"):
        return None
    old = [s.get("segments") for s in before]
    new = [s.get("segments") for s in after]
    if not all(isinstance(v, list) and v for v in (*old, *new)):
        return None
    bases = [[segment[0] for segment in segments] for segments in old]
    if bases[0] != bases[1]:
        return None
    end = before[0].get("logEndOffset")
    if end != before[1].get("logEndOffset"):
        return None
    sides = ("Kafka", "kafkalog")
    for rolled in (0, 1):
        stayed = 1 - rolled
        if [s[0] for s in new[rolled]] != bases[rolled] + [end] or [s[0] for s in new[stayed]] != bases[stayed]:
            continue
        if new[rolled][:-1] != old[rolled] or new[stayed][:-1] != old[stayed][:-1]:
            continue
        active = (old[rolled][-1][1], old[stayed][-1][1])
        batch = (new[rolled][-1][1], new[stayed][-1][1] - active[1])
        if active[0] > 0 and active[0] + batch[0] > segment_bytes >= active[1] + batch[1]:
            return (f"the logs part by size: {sides[rolled]} rolled a segment at offset {end} (active segment "
                    f"{active[0]} bytes + the batch's {batch[0]} > segment.bytes {segment_bytes}) where "
                    f"{sides[stayed]} did not ({active[1]} + {batch[1]}), the sizes differing by recompressed "
                    "batches")
    return None


def _appended_alike(kafka_dir: Path, kafkalog_dir: Path, before: tuple[dict[str, Any], dict[str, Any]] | None,
                    after: tuple[dict[str, Any], dict[str, Any]], digests: set[bytes]) -> bool:
    """Whether the batch a size-decided roll (:func:`size_decided_roll`) appended is the same on both sides (by
    the comparison's rules: decoded when recompressed): the bytes past each side's old active segment, in its
    last segment now.  Its own size may differ only by the runtime's compressor, never by its contents."""
    if before is None:
        return False
    appended = []
    for directory, old, new in zip((kafka_dir, kafkalog_dir), before, after, strict=True):
        old_last, new_last = old["segments"][-1], new["segments"][-1]
        start = old_last[1] if new_last[0] == old_last[0] else 0
        data = (directory / f"{new_last[0]:020d}.log").read_bytes()[:new_last[1]]
        appended.append(data[start:])
    difference, _ = compare_entries(appended[0], appended[1], "the appended batch", digests)
    return difference is None


#: The words of Kafka 3.9.2's ``IllegalStateException`` when its cleaner would keep an emptied v0/v1 entry.
LEGACY_EMPTY_BATCH = "Empty batches are only supported for magic v2 and above"


def legacy_empty_batch(op: dict[str, Any], kafka: dict[str, Any], kafkalog: dict[str, Any]) -> str | None:
    """kafkalog's documented deviation from 3.9.2 (``docs/oracle.rst``): a cleaning Kafka fails because the last
    entry of its round, a v0/v1 one, was emptied, and that kafkalog completes by dropping the entry.  ``None``
    unless the op is a ``clean``, Kafka threw ``IllegalStateException`` with those very words and kafkalog
    answered a cleaning's result."""
    error = kafka.get("error")
    if (op.get("op") != "clean" or not isinstance(error, dict) or error.get("class") != "IllegalStateException"
            or LEGACY_EMPTY_BATCH not in str(error.get("message"))
            or "endOffset" not in (kafkalog.get("result") or {})):
        return None
    return ("Kafka 3.9.2's cleaning failed on an emptied v0/v1 entry at the end of its round, which kafkalog drops "
            "(its deliberate deviation)")


def run_scenario(scenario: Scenario, work: Path, kafka: Runner | None = None,
                 kafkalog: KafkalogRunner | None = None,
                 on_op: Callable[[int, dict[str, Any] | None, dict[str, Any]], None] | None = None) -> Outcome:
    """Run ``scenario`` in ``work`` (a fresh directory is made under it and removed after) on kafkalog and, if
    ``kafka`` is given, on Kafka, comparing after every op.  ``on_op(index, kafka answer, kafkalog answer)`` is told
    of every op (``-1`` for the start, ``len(ops)`` for the end).

    Raises:
        RunnerError: a runner answered ``fatal`` or without a state.
    """
    outcome = Outcome(scenario)
    own_kafkalog = kafkalog is None
    kafkalog_runner = KafkalogRunner() if kafkalog is None else kafkalog
    kafka_dir = work / "kafka" / PARTITION
    kafkalog_dir = work / "kafkalog" / PARTITION
    for directory in (kafka_dir.parent, kafkalog_dir.parent):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
    digests: set[bytes] = set()
    rules = rules_for(scenario.kafka)
    resized = False
    started = False
    #: Each .log's resized correspondences so far (for the stale index entries of a truncation).
    earlier: dict[str, list[LogMatch]] = {}
    previous: tuple[dict[str, Any], dict[str, Any]] | None = None
    reopened = truncated_reopened = False
    segment_bytes = int(scenario.config.get("segment.bytes", 1024 ** 3))

    def step(index: int, message: dict[str, Any], kafkalog_message: dict[str, Any] | None = None) -> bool:
        """One request to each side (``kafkalog_message`` if it differs: the start's directory), compared;
        ``False`` once a difference is found."""
        nonlocal resized, previous, reopened, truncated_reopened
        op_kind = (message.get("op") or {}).get("op")
        reopened |= op_kind == "reopen"
        truncated_reopened |= reopened and op_kind in ("truncate_to", "truncate_fully_and_start_at")
        kafka_answer = None
        kafkalog_message = message if kafkalog_message is None else kafkalog_message
        if kafka is not None:
            kafka_answer = _ask(kafka, message, "Kafka's")
            given = kafka_answer.get("input")
            if isinstance(given, str):
                result = kafka_answer.get("result") or {}
                first, last = result.get("firstOffset"), result.get("lastOffset")
                if isinstance(first, int) and isinstance(last, int) and last >= 0:
                    # Keyed by the offsets the append got: the same records elsewhere are not the producer's.
                    op = message.get("op") or {}
                    digests.update(producer_payloads(base64.b64decode(given), first if first >= 0 else None, last,
                                                     leader=op.get("origin", "coordinator") != "replication"))
                kafkalog_message = {**kafkalog_message, "input": given}
        kafkalog_answer = _ask(kafkalog_runner, kafkalog_message, "kafkalog's")
        outcome.answers.append((kafka_answer, kafkalog_answer))
        if on_op is not None:
            on_op(index, kafka_answer, kafkalog_answer)
        if kafka_answer is None:
            return True
        dirs = compare_dirs(kafka_dir, kafkalog_dir, digests,
                            closed_untrimmed=rules.close_keeps_indexes and message.get("cmd") == "end",
                            earlier=earlier, truncated_reopened=truncated_reopened,
                            closed=message.get("cmd") == "end")
        difference = compare_answers(kafka_answer, kafkalog_answer, dirs, resized_before=resized,
                                     producer_digests=digests, rules=rules) or dirs.difference
        resized |= dirs.resized
        for name, match in dirs.logs.items():
            kept = earlier.setdefault(name, [])
            if match.resized and (not kept or kept[-1].kafka_positions != match.kafka_positions
                                  or kept[-1].kafkalog_positions != match.kafkalog_positions):
                kept.append(match)
        outcome.compared += 1
        state_pair = (kafka_answer.get("state", {}), kafkalog_answer.get("state", {}))
        if difference is not None:
            outcome.op_index = index
            why = None
            if (difference.kind == "state" and previous is not None
                    and compare_answers({"result": kafka_answer.get("result")},
                                        {"result": kafkalog_answer.get("result")}, dirs, resized_before=resized,
                                        producer_digests=digests, rules=rules) is None):
                why = size_decided_roll(kafkalog_message.get("op") or {}, previous, state_pair, segment_bytes)
            if why is None and kafka_answer.get("error") is not None:
                why = legacy_empty_batch(kafkalog_message.get("op") or {}, kafka_answer, kafkalog_answer)
            if why is not None and not _appended_alike(kafka_dir, kafkalog_dir, previous, state_pair, digests):
                why = None
            if why is not None:
                outcome.diverged = why
            else:
                outcome.difference = difference
            return False
        previous = state_pair
        return True

    try:
        start = {"cmd": "start", "config": dict(scenario.config), "time_ms": scenario.time_ms}
        started = True
        if not step(-1, {**start, "dir": str(kafka_dir.resolve())}, {**start, "dir": str(kafkalog_dir.resolve())}):
            return outcome
        for index, op in enumerate(scenario.ops):
            if not step(index, {"cmd": "op", "op": wire_op(op)}, {"cmd": "op", "op": op}):
                return outcome
        started = False
        step(len(scenario.ops), {"cmd": "end"})
        return outcome
    finally:
        if started:
            # A difference or an error left both logs open: end them, answers unread.
            for runner in ((kafka, kafkalog_runner) if kafka is not None else (kafkalog_runner,)):
                with contextlib.suppress(Exception):  # the run's own outcome or error is what is reported
                    runner.request({"cmd": "end"})
        if own_kafkalog:
            kafkalog_runner.close()
        shutil.rmtree(work / "kafka", ignore_errors=True)
        shutil.rmtree(work / "kafkalog", ignore_errors=True)
