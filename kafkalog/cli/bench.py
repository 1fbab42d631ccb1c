"""``kafkalog bench``: run the benchmark suite and write the report (:mod:`kafkalog.cli.bench_report`).

The suite is ``bench/`` of a source checkout (pytest-benchmark; the ``bench`` extra), run in a child
``pytest`` with ``--benchmark-json``; the report (``report.md`` and PNG charts) then goes to ``--out``
(default ``bench/report``).  ``--quick`` is the one-minute version: few rounds a row (at most 0.05 s of
timing, or 2 rounds without warm-up where a row fixes its rounds: ``KAFKALOG_BENCH_QUICK=1`` for the
suite) and no Spark read; ``-k`` selects rows as pytest's ``-k`` does.  ``make bench``
is ``kafkalog bench``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .bench_report import load, write_report
from .console import EXIT_FOUND, EXIT_USAGE, Console

__all__ = ["BENCH_DIR", "add_parser", "pytest_command", "run"]

#: Where the suite is: ``bench/`` next to the package, in the source checkout kafkalog is installed from.
BENCH_DIR = Path(__file__).resolve().parent.parent.parent / "bench"

QUICK_OPTIONS = ["--benchmark-max-time=0.05", "--benchmark-min-rounds=2"]
EXIT_BENCH_FAILED = EXIT_FOUND  # the benchmark run itself failed


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="run the benchmarks and write the report (Markdown and charts)",
        description="Run the benchmark suite (bench/ of the source checkout) and write bench/report/: "
                    "every kernel and operation, compiled vs plain vs the peers, as ratios from this run.")
    parser.add_argument("--quick", action="store_true",
                        help="the one-minute version: few rounds a row, no Spark read")
    parser.add_argument("-k", dest="select", metavar="EXPR", help="only the rows pytest -k EXPR selects")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="where to write report.md and the charts (default: bench/report)")
    parser.add_argument("--bench-dir", default=None, metavar="DIR", help=argparse.SUPPRESS)
    parser.set_defaults(run=run)
    return parser


def pytest_command(bench_dir: Path, json_path: Path, *, quick: bool, select: str | None) -> list[str]:
    """The child pytest's command line."""
    command = [sys.executable, "-m", "pytest", str(bench_dir), "--benchmark-only", "-p", "no:cacheprovider", "-q",
               f"--benchmark-json={json_path}"]
    expressions = [f"({select})"] if select else []
    if quick:
        command += QUICK_OPTIONS
        expressions.append("not spark")
    if expressions:
        command += ["-k", " and ".join(expressions)]
    return command


def run(args: argparse.Namespace, console: Console) -> int:
    bench_dir = Path(args.bench_dir) if args.bench_dir else BENCH_DIR
    if not (bench_dir / "conftest.py").is_file():
        console.error(f"kafkalog bench: no benchmark suite at {bench_dir}; it runs the bench/ folder of a source "
                      "checkout (install kafkalog from one: pip install -e '.[bench]')")
        return EXIT_USAGE
    missing = [name for name in ("pytest", "pytest_benchmark", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        console.error(f"kafkalog bench: {', '.join(missing)} not installed (the bench extra: pip install "
                      "'kafkalog[bench]')")
        return EXIT_USAGE
    out = Path(args.out) if args.out else bench_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "run.json"
    json_path.unlink(missing_ok=True)
    command = pytest_command(bench_dir, json_path, quick=args.quick, select=args.select)
    console.error(f"kafkalog bench: {' '.join(command[2:])}")
    env = {**os.environ, "KAFKALOG_BENCH_QUICK": "1"} if args.quick else None
    status = subprocess.call(command, cwd=bench_dir.parent, env=env)
    if status != 0 or not json_path.exists():
        console.error(f"kafkalog bench: the benchmark run failed (pytest exit status {status}); no report written")
        return EXIT_BENCH_FAILED
    files = write_report(load(json_path), out)
    console.print(f"{files[0]}  ({len(files) - 1} charts, raw figures in {json_path.name})")
    return 0
