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

from tests.oracle.compare import Difference, compare_answers, compare_dirs, producer_payloads, rules_for
from tests.oracle.kafkalog_side import KafkalogRunner
from tests.oracle.scenario import Scenario, wire_op

__all__ = ["Outcome", "Runner", "RunnerError", "run_scenario"]

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

    @property
    def op(self) -> dict[str, Any] | None:
        if self.op_index is None:
            return None
        if self.op_index >= len(self.scenario.ops):
            return {"cmd": "end"}
        return self.scenario.ops[self.op_index]

    def report(self) -> str:
        """The difference as the command prints it: the scenario, the op (index and JSON) and what differed."""
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

    def step(index: int, message: dict[str, Any], kafkalog_message: dict[str, Any] | None = None) -> bool:
        """One request to each side (``kafkalog_message`` if it differs: the start's directory), compared;
        ``False`` once a difference is found."""
        nonlocal resized
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
                            closed_untrimmed=rules.close_keeps_indexes and message.get("cmd") == "end")
        difference = compare_answers(kafka_answer, kafkalog_answer, dirs, resized_before=resized,
                                     producer_digests=digests, rules=rules) or dirs.difference
        resized |= dirs.resized
        outcome.compared += 1
        if difference is not None:
            outcome.difference, outcome.op_index = difference, index
            return False
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
