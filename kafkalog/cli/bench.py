"""``kafkalog bench``: run the benchmark suite and write the report (:mod:`kafkalog.cli.bench_report`).

The suite is :mod:`kafkalog.bench` (pytest-benchmark files that ship with the package; their dependencies are
the ``bench`` extra), run in a child ``pytest`` with ``--benchmark-json``, so it runs the same from an
installed kafkalog as from a source checkout.  The child's progress goes to stderr, without
pytest-benchmark's wide tables (``--benchmark-quiet``); stdout gets a short table, the ratios that have a
target, and the path of the report, which holds every row and every ratio: ``report.md``, PNG charts and
the raw ``run.json``, in ``--out`` (default ``bench-report`` in the current directory).  ``--quick`` is the
short version (a few minutes on 2 cores): few rounds a row (at most 0.05 s of timing, or 2 rounds without
warm-up where a row fixes its rounds: ``KAFKALOG_BENCH_QUICK=1`` for the suite) and no Spark read; ``-k``
selects rows as pytest's ``-k`` does.  ``make bench`` is ``kafkalog bench``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .bench_report import BenchRun, load, write_report
from .console import EXIT_FOUND, EXIT_USAGE, Console, counted

__all__ = ["BENCH_DIR", "DEFAULT_OUT", "add_parser", "pytest_command", "run", "summary_rows"]

#: Where the suite is: the ``kafkalog.bench`` package, beside this one (installed or in a checkout).
BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
#: Where the report goes without ``--out``: relative to the current directory, never inside the package.
DEFAULT_OUT = Path("bench-report")

QUICK_OPTIONS = ["--benchmark-max-time=0.05", "--benchmark-min-rounds=2"]
EXIT_BENCH_FAILED = EXIT_FOUND  # the benchmark run itself failed


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="run the benchmarks and write the report (Markdown and charts)",
        description="Run kafkalog's benchmark suite (it ships with the package; pip install 'kafkalog[bench]' "
                    "for its dependencies) and write the report: every kernel and operation, compiled vs plain "
                    "vs the peers, as ratios from this run. Prints a short table of the targeted ratios; the "
                    "report has every row.")
    parser.add_argument("--quick", action="store_true",
                        help="the short version: few rounds a row, no Spark read")
    parser.add_argument("-k", dest="select", metavar="EXPR", help="only the rows pytest -k EXPR selects")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help=f"where to write report.md, the charts and run.json (default: ./{DEFAULT_OUT})")
    parser.add_argument("--bench-dir", default=None, metavar="DIR", help=argparse.SUPPRESS)
    parser.set_defaults(run=run)
    return parser


def pytest_command(bench_dir: Path, json_path: Path, *, quick: bool, select: str | None) -> list[str]:
    """The child pytest's command line: dots for progress, failures summarised, no benchmark tables."""
    command = [sys.executable, "-m", "pytest", str(bench_dir), "--benchmark-only", "--benchmark-quiet",
               "-p", "no:cacheprovider", "-q", "-rfE", f"--benchmark-json={json_path}"]
    expressions = [f"({select})"] if select else []
    if quick:
        command += QUICK_OPTIONS
        expressions.append("not spark")
    if expressions:
        command += ["-k", " and ".join(expressions)]
    return command


def summary_rows(bench: BenchRun) -> list[list[str]]:
    """The short table: every ratio with a target (the issues' comparisons), its ratio and verdict."""
    return [[r.label, f"{r.ratio_min:.2f}x", f">= {r.target:g}x", "met" if r.met else "NOT met"]
            for r in bench.ratios if r.target is not None]


def run(args: argparse.Namespace, console: Console) -> int:
    bench_dir = Path(args.bench_dir) if args.bench_dir else BENCH_DIR
    if not (bench_dir / "conftest.py").is_file():
        console.error(f"kafkalog bench: no benchmark suite at {bench_dir} (it ships with kafkalog as "
                      "kafkalog/bench; reinstall kafkalog)")
        return EXIT_USAGE
    missing = [name for name in ("pytest", "pytest_benchmark", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        console.error(f"kafkalog bench: {', '.join(missing)} not installed (the bench extra: pip install "
                      "'kafkalog[bench]')")
        return EXIT_USAGE
    out = Path(args.out) if args.out else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    json_path = (out / "run.json").resolve()
    json_path.unlink(missing_ok=True)
    command = pytest_command(bench_dir, json_path, quick=args.quick, select=args.select)
    console.error(f"kafkalog bench: {' '.join(command[2:])}")
    # The run is a pytest session of its own: a caller that is itself a pytest-xdist worker (a test suite running
    # `kafkalog bench`) would hand down its worker's identity, and pytest-benchmark disables every benchmark in
    # what it then takes for a worker of a distributed run.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    if args.quick:
        env["KAFKALOG_BENCH_QUICK"] = "1"
    # The child's output is progress, not data: to stderr (fd 2), leaving stdout to the summary.
    console.out.flush()
    status = subprocess.call(command, cwd=bench_dir.parent, env=env, stdout=2)
    if status != 0 or not json_path.exists():
        console.error(f"kafkalog bench: the benchmark run failed (pytest exit status {status}); no report written")
        return EXIT_BENCH_FAILED
    bench = load(json_path)
    files = write_report(bench, out)
    rows = summary_rows(bench)
    if rows:
        console.table(["COMPARISON", "RATIO", "TARGET", "RESULT"], rows, align_right=(1, 2))
        console.print()
    console.print(f"{counted(len(bench.rows), 'row')}, {counted(len(bench.ratios), 'ratio')} "
                  f"({len(bench.ratios) - len(rows)} without a target): every one in {files[0]}  "
                  f"({counted(len(files) - 1, 'chart')}, raw figures in {json_path.name})")
    return 0
