"""``python -m tests.oracle.run``: run scenario files (or generated scenarios) against Kafka and kafkalog.

Usage::

    python -m tests.oracle.run SCENARIO.json ...           # each file against the Kafka line it names
    python -m tests.oracle.run --kafka 4 SCENARIO.json     # against another line than the file's
    python -m tests.oracle.run --generate 200 --seed 1000  # 200 generated scenarios per Kafka line
    python -m tests.oracle.run --kafkalog-only SCENARIO.json -v   # kafkalog's answers alone, no JVM

Exit status: 0 when every request of every scenario gave identical answers and files, 1 when one differed
(the scenario, the op's index and JSON, and the first differing field, or file and byte offset, are printed), 2
for a scenario it cannot read (the file, op index and field are printed), 3 when Kafka cannot run (no Java or no
jars: ``make oracle-jars``) or a runner failed.  ``--shrink-to DIR`` writes each differing scenario, cut down to
the fewest ops that still give the same difference, to ``DIR`` as a regression case
(``docs/oracle.rst``: "Adding a regression case").  ``make oracle-run SCENARIOS="a.json b.json"`` and
``make oracle`` run this command.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kafkalog import _impl
from tests.oracle.driver import Outcome, Runner, RunnerError, run_scenario
from tests.oracle.generator import generate
from tests.oracle.scenario import KAFKA_LINES, Scenario, ScenarioError, load_scenario

__all__ = ["EXIT_DIFFERENT", "EXIT_IDENTICAL", "EXIT_UNAVAILABLE", "EXIT_UNREADABLE", "main", "shrink"]

EXIT_IDENTICAL = 0
EXIT_DIFFERENT = 1
EXIT_UNREADABLE = 2
EXIT_UNAVAILABLE = 3

#: Makes the runner of a Kafka line (``tests/oracle/jvm.py``'s ``KafkaRunner`` by default).
RunnerFactory = Callable[[str], Any]


class OracleUnavailableError(RuntimeError):
    """Kafka cannot run here: no Java, no jars, or no ``tests/oracle/jvm.py``."""


def _kafka_runner(kafka: str) -> Any:
    try:
        from tests.oracle import jvm  # type: ignore[attr-defined]
    except ImportError as e:
        raise OracleUnavailableError(f"the Java runner (tests/oracle/jvm.py) is not available: {e}") from e
    try:
        return jvm.KafkaRunner(kafka)
    except jvm.OracleUnavailable as e:
        raise OracleUnavailableError(str(e)) from e


class _Runners:
    """One Kafka runner per line, started when first needed and reused (one JVM per Kafka version)."""

    def __init__(self, factory: RunnerFactory) -> None:
        self._factory = factory
        self._runners: dict[str, Any] = {}

    def get(self, kafka: str) -> Runner:
        if kafka not in self._runners:
            runner = self._factory(kafka)
            enter = getattr(runner, "__enter__", None)
            self._runners[kafka] = enter() if enter is not None else runner
        return self._runners[kafka]  # type: ignore[no-any-return]

    def close(self) -> None:
        for runner in self._runners.values():
            close = getattr(runner, "close", None)
            if close is not None:
                close()
        self._runners.clear()


@contextlib.contextmanager
def _work_dir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    directory = Path(tempfile.mkdtemp(prefix="kafkalog-oracle-", dir=base))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _signature(outcome: Outcome) -> tuple[str, str] | None:
    if outcome.difference is None:
        return None
    return outcome.difference.kind, outcome.difference.path


def shrink(scenario: Scenario, differs: Callable[[Scenario], Outcome]) -> Scenario:
    """The scenario cut down to the fewest ops that still give the same difference (its kind and path): the ops
    after the differing one dropped, then runs of ops removed while the difference stays (halves, quarters, ...,
    single ops), until no removal keeps it."""
    first = differs(scenario)
    target = _signature(first)
    if target is None or first.op_index is None:
        return scenario
    ops = list(scenario.ops[:first.op_index + 1])
    chunk = max(1, len(ops) // 2)
    while chunk >= 1:
        progress = False
        start = 0
        while start < len(ops):
            trial = ops[:start] + ops[start + chunk:]
            if trial and _signature(differs(scenario.with_ops(trial))) == target:
                ops = trial
                progress = True
            else:
                start += chunk
        if not progress:
            chunk //= 2
    return scenario.with_ops(ops)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.oracle.run", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="*", type=Path, help="scenario files (JSON)")
    parser.add_argument("--kafka", choices=sorted(KAFKA_LINES), help="run against this Kafka line, whatever the "
                                                                      "scenario says")
    parser.add_argument("--generate", type=int, default=0, metavar="N",
                        help="also run N generated scenarios per Kafka line (--kafka: that line only)")
    parser.add_argument("--seed", type=int, default=0, help="the first generated scenario's seed (default 0)")
    parser.add_argument("--shrink-to", type=Path, metavar="DIR",
                        help="write each differing scenario, shrunk, to DIR")
    parser.add_argument("--keep-going", action="store_true", help="run every scenario, not stop at the first "
                                                                    "that differs")
    parser.add_argument("--kafkalog-only", action="store_true",
                        help="run kafkalog alone (no JVM, nothing compared) and print its answers")
    parser.add_argument("--impl", choices=("python", "cython"), help="kafkalog's kernel twin (default: the "
                                                                      "compiled one when built)")
    parser.add_argument("--work", type=Path, metavar="DIR", help="the partition dirs go here, and stay")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every op and both answers")
    return parser


def _scenarios(args: argparse.Namespace) -> Iterator[Scenario]:
    for path in args.scenarios:
        scenario = load_scenario(path)
        if args.kafka is not None:
            scenario.kafka = args.kafka
        yield scenario
    lines = [args.kafka] if args.kafka is not None else list(KAFKA_LINES)
    for kafka in lines:
        for seed in range(args.seed, args.seed + args.generate):
            yield generate(seed, kafka)


def _print_op(index: int, kafka: dict[str, Any] | None, kafkalog: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    label = "start" if index < 0 else ("end" if index >= len(ops) else f"ops[{index}] {json.dumps(ops[index])}")
    print(f"  {label}")
    for side, answer in (("kafka", kafka), ("kafkalog", kafkalog)):
        if answer is not None:
            shown = {k: v for k, v in answer.items() if k != "input"}
            print(f"    {side + ':':10}{json.dumps(shown)}")


def main(argv: list[str] | None = None, runner_factory: RunnerFactory = _kafka_runner) -> int:
    """The command (see the module docstring); ``runner_factory`` makes the Kafka runner of a line."""
    previous = logging.root.manager.disable
    try:
        return _main(argv, runner_factory)
    finally:
        # A caller in the same process (the test suite) gets its logging back.
        logging.disable(previous)


def _main(argv: list[str] | None, runner_factory: RunnerFactory) -> int:
    args = _parser().parse_args(argv)
    if not args.scenarios and not args.generate:
        _parser().print_usage(sys.stderr)
        print("python -m tests.oracle.run: give scenario files or --generate N", file=sys.stderr)
        return EXIT_UNREADABLE
    # kafkalog's own log lines (a warning per non-monotonic high watermark, an error per index rebuilt on recovery)
    # are not the command's output.
    logging.disable(logging.ERROR)
    try:
        scenarios = list(_scenarios(args))
    except ScenarioError as e:
        print(f"cannot read the scenario: {e}", file=sys.stderr)
        return EXIT_UNREADABLE
    runners = _Runners(runner_factory)
    status = EXIT_IDENTICAL
    started = time.monotonic()
    compared = ops = parted = 0
    with contextlib.ExitStack() as stack:
        if args.impl is not None:
            stack.enter_context(_impl.using(args.impl))
        work = stack.enter_context(_work_dir(args.work))
        stack.callback(runners.close)
        for scenario in scenarios:
            on_op = None
            if args.verbose or args.kafkalog_only:
                print(f"{scenario.source}: kafka {scenario.kafka}")
                on_op = (lambda s: lambda i, a, b: _print_op(i, a, b, s.ops))(scenario)
            try:
                kafka = None if args.kafkalog_only else runners.get(scenario.kafka)

                def differs(candidate: Scenario, kafka: Runner | None = kafka) -> Outcome:
                    return run_scenario(candidate, work, kafka)

                outcome = run_scenario(scenario, work, kafka, on_op=on_op)
            except OracleUnavailableError as e:
                print(f"Kafka {scenario.kafka} cannot run: {e}", file=sys.stderr)
                return EXIT_UNAVAILABLE
            except RunnerError as e:
                print(f"{scenario.source}: {e}", file=sys.stderr)
                return EXIT_UNAVAILABLE
            compared += outcome.compared
            ops += len(scenario.ops)
            if args.kafkalog_only:
                continue
            if outcome.difference is None:
                parted += outcome.diverged is not None
                if args.verbose or outcome.diverged is not None:
                    # A legitimate parting of the two logs is shown, not counted as a difference.
                    print(outcome.report())
                continue
            status = EXIT_DIFFERENT
            print(outcome.report())
            if args.shrink_to is not None:
                shrunk = shrink(scenario, differs)
                shrunk.description = (f"shrunk from {scenario.source}; {outcome.difference.kind} differs at "
                                      f"{outcome.difference.path}")
                args.shrink_to.mkdir(parents=True, exist_ok=True)
                name = Path(scenario.source).stem if not scenario.source.startswith("<") else \
                    scenario.source.strip("<>").replace(" ", "-").replace("=", "")
                path = args.shrink_to / f"{name}-shrunk.json"
                path.write_text(shrunk.dumps())
                print(f"  shrunk to {len(shrunk.ops)} ops: {path}")
            if not args.keep_going:
                break
    elapsed = time.monotonic() - started
    if not args.kafkalog_only:
        parting = f" ({parted} not compared to the end: see above)" if parted else ""
        print(f"{len(scenarios)} scenario(s){parting}, {ops} ops, {compared} requests compared in {elapsed:.1f} s: "
              f"{'identical' if status == EXIT_IDENTICAL else 'DIFFERENT'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
