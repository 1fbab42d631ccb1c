"""The benchmark report: a Markdown page and PNG charts from one pytest-benchmark run of :mod:`kafkalog.bench`.

Input is the JSON that ``pytest --benchmark-json`` writes, with what ``kafkalog/bench/conftest.py`` adds to it:
each row's ``extra_info`` (its key, such as ``decode/columns/cython``, and its records/s or MB/s), the
``kafkalog_ratios`` (every comparison the issues named, measured in this run) and ``kafkalog_machine``
(CPU, cores, memory, library versions, load).  Output, in one directory:

* ``report.md``: the machine, the ratios against their targets, and one table per benchmark group
  (fastest and median round, rounds, throughput), each with its chart;
* ``ratios.png``: every ratio on a log scale, with its target;
* ``group-<name>.png``: per group, each row's throughput from its fastest round, coloured by kind
  (kafkalog compiled, kafkalog plain twin, a peer or reference line).

``python -m kafkalog.cli.bench_report RUN.json OUT_DIR`` writes it; ``kafkalog bench`` runs the benchmarks
and then this.  The charts need matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._text import counted
from ..errors import KafkaLogError
from .help_text import description

__all__ = ["BenchRun", "BenchReportError", "Ratio", "Row", "load", "main", "write_report"]


class BenchReportError(KafkaLogError, ValueError):
    """The input is not a pytest-benchmark JSON of kafkalog's benchmarks."""


@dataclass(frozen=True)
class Row:
    """One benchmark row: its group, key, kind and timings (seconds a call)."""

    group: str
    name: str
    key: str
    min_s: float
    median_s: float
    rounds: int
    records: int | None = None
    nbytes: int | None = None

    @property
    def kind(self) -> str:
        """``compiled`` or ``plain`` (kafkalog's two twins) or ``peer`` (another library or a
        reference line such as a memory copy)."""
        variant = self.key.split("/", 1)[-1]
        if "python" in variant.split("/"):
            return "plain"
        if "cython" in variant or variant.startswith("kafkalog"):
            return "compiled"
        return "peer"

    def rate(self, seconds: float) -> tuple[float, str] | None:
        """Throughput at ``seconds`` a call: (value, unit), records/s or MB/s, or None."""
        if self.records is not None:
            return self.records / seconds, "records/s"
        if self.nbytes is not None:
            return self.nbytes / seconds / 1e6, "MB/s"
        return None


@dataclass(frozen=True)
class Ratio:
    """One comparison: the other row's time over kafkalog's (above 1: kafkalog faster)."""

    label: str
    ours: str
    other: str
    target: float | None
    ratio_min: float
    ratio_median: float

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.ratio_min >= self.target


@dataclass
class BenchRun:
    """What one run measured."""

    rows: list[Row]
    ratios: list[Ratio]
    machine: dict[str, Any] = field(default_factory=dict)
    commit: dict[str, Any] = field(default_factory=dict)
    when: str = ""

    def groups(self) -> dict[str, list[Row]]:
        grouped: dict[str, list[Row]] = {}
        for row in self.rows:
            grouped.setdefault(row.group, []).append(row)
        return grouped


def load(path: str | Path) -> BenchRun:
    """Read a pytest-benchmark JSON; raises :class:`BenchReportError` if it is not one of kafkalog's."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise BenchReportError(f"cannot read {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BenchReportError(f"{path} is not JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise BenchReportError(f"{path} is not a pytest-benchmark JSON (no 'benchmarks' list)")
    rows = []
    for bench in data["benchmarks"]:
        try:
            stats, extra = bench["stats"], bench.get("extra_info", {})
            rows.append(Row(bench.get("group") or "(no group)", bench["name"], str(extra.get("key", bench["name"])),
                            float(stats["min"]), float(stats["median"]), int(stats["rounds"]),
                            extra.get("records"), extra.get("bytes")))
        except (KeyError, TypeError, ValueError) as e:
            raise BenchReportError(f"{path}: a benchmark row without its timings ({e!r})") from None
    ratios = []
    for r in data.get("kafkalog_ratios", []):
        try:
            ratios.append(Ratio(r["label"], r["kafkalog"], r["other"], r.get("target"), float(r["ratio_min"]),
                                float(r["ratio_median"])))
        except (KeyError, TypeError, ValueError) as e:
            raise BenchReportError(f"{path}: a malformed ratio ({e!r})") from None
    if not rows:
        raise BenchReportError(f"{path} holds no benchmark rows (was the run made with --benchmark-disable?)")
    machine = {**data.get("machine_info", {}), **data.get("kafkalog_machine", {})}
    return BenchRun(rows, ratios, machine, data.get("commit_info", {}), str(data.get("datetime", "")))


def _slug(group: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", group.lower()).strip("-") or "group"


def _time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} µs"


def _rate(rate: tuple[float, str] | None) -> str:
    if rate is None:
        return ""
    value, unit = rate
    if unit == "records/s":
        return f"{value / 1e6:,.3f} M records/s"
    return f"{value:,.0f} MB/s"


_COLOURS = {"compiled": "#4e79a7", "plain": "#f28e2b", "peer": "#9c9c9c"}


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (imported on first use: the bench extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _chart_group(rows: Sequence[Row], title: str, path: Path) -> None:
    from matplotlib.patches import Rectangle

    plt = _pyplot()

    rated = [(row, row.rate(row.min_s)) for row in rows]
    with_rate = [(row, rate) for row, rate in rated if rate is not None]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    if with_rate:
        unit = with_rate[0][1][1]
        values = [rate[0] if rate[1] == unit else math.nan for _row, rate in with_rate]
        labels = [row.key for row, _rate in with_rate]
        colours = [_COLOURS[row.kind] for row, _rate in with_rate]
        ax.barh(labels, values, color=colours)
        ax.set_xlabel(f"{unit} (fastest round; longer is faster)")
    else:
        ax.barh([row.key for row in rows], [row.min_s for row in rows], color=[_COLOURS[r.kind] for r in rows])
        ax.set_xlabel("seconds a call (fastest round; shorter is faster)")
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in _COLOURS.values()]
    ax.legend(handles, ["kafkalog compiled", "kafkalog plain twin", "peer / reference"], fontsize=7,
              loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _chart_ratios(ratios: Sequence[Ratio], path: Path) -> None:
    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(9, 0.38 * len(ratios) + 1.2))
    labels = [r.label for r in ratios]
    colours = ["#59a14f" if r.met else "#e15759" if r.met is False else "#9c9c9c" for r in ratios]
    ax.barh(labels, [r.ratio_min for r in ratios], color=colours)
    for i, r in enumerate(ratios):
        if r.target is not None:
            ax.plot([r.target, r.target], [i - 0.4, i + 0.4], color="black", linewidth=1.5)
    ax.axvline(1.0, color="#555555", linewidth=0.7, linestyle=":")
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("other's time / kafkalog's (fastest rounds; log scale; black tick = target)")
    ax.set_title("Ratios measured in this run (green: target met, red: not met, grey: no target)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _machine_lines(run: BenchRun) -> list[str]:
    m = run.machine
    cpu = m.get("cpu_model") or (m.get("cpu") or {}).get("brand_raw") or m.get("processor") or "unknown"
    lines = [f"- CPU: {cpu}, {m.get('cpu_count', (m.get('cpu') or {}).get('count', '?'))} cores"
             + (f", {m['memory_gib']:.1f} GiB memory" if isinstance(m.get("memory_gib"), int | float) else "")]
    lines.append(f"- System: {m.get('system', '?')} {m.get('release', '')} ({m.get('machine', '?')})")
    lines.append(f"- Python: {m.get('python_implementation', '?')} {m.get('python_version', '?')}")
    if m.get("kernels"):
        lines.append(f"- kafkalog kernels: {m['kernels']}")
    if m.get("load_average"):
        lines.append(f"- Load average at the start: {m['load_average']}")
    for name, version in sorted((m.get("versions") or {}).items()):
        lines.append(f"- {name} {version}")
    commit = run.commit
    if commit.get("id"):
        lines.append(f"- Commit: `{str(commit['id'])[:12]}`{' (uncommitted changes)' if commit.get('dirty') else ''}")
    if run.when:
        lines.append(f"- Run at: {run.when}")
    return lines


def write_report(run: BenchRun, out_dir: str | Path) -> list[Path]:
    """Write ``report.md`` and the charts into ``out_dir`` (made if missing); the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    md = ["# kafkalog benchmark report", "",
          "One run of the benchmarks in `kafkalog/bench` (pytest-benchmark). Times are per call; a ratio is the other "
          "row's time over kafkalog's, so above 1 means kafkalog is faster. Every figure comes from this one "
          "run, on this machine: they are measurements, not guarantees.", "", "## Machine", "",
          *_machine_lines(run), ""]
    if run.ratios:
        chart = out / "ratios.png"
        _chart_ratios(run.ratios, chart)
        written.append(chart)
        md += ["## Ratios", "", "| comparison | fastest rounds | median rounds | target | |",
               "|---|---:|---:|---:|---|"]
        for r in run.ratios:
            verdict = "" if r.met is None else "met" if r.met else "**not met**"
            target = "" if r.target is None else f">= {r.target:g}x"
            md.append(f"| {r.label} | {r.ratio_min:.2f}x | {r.ratio_median:.2f}x | {target} | {verdict} |")
        md += ["", f"![ratios]({chart.name})", ""]
    md += ["## Groups", ""]
    for group, rows in run.groups().items():
        chart = out / f"group-{_slug(group)}.png"
        _chart_group(rows, group, chart)
        written.append(chart)
        md += [f"### {group}", "", "| row | kind | fastest | median | rounds | throughput (fastest) |",
               "|---|---|---:|---:|---:|---:|"]
        for row in rows:
            md.append(f"| `{row.key}` | {row.kind} | {_time(row.min_s)} | {_time(row.median_s)} | {row.rounds} | "
                      f"{_rate(row.rate(row.min_s))} |")
        md += ["", f"![{group}]({chart.name})", ""]
    report = out / "report.md"
    report.write_text("\n".join(md))
    written.insert(0, report)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m kafkalog.cli.bench_report", description=description(__doc__))
    parser.add_argument("json", help="the file pytest --benchmark-json wrote")
    parser.add_argument("out", help="the directory to write report.md and the charts into")
    args = parser.parse_args(argv)
    try:
        files = write_report(load(args.json), args.out)
    except BenchReportError as e:
        print(f"kafkalog bench report: {e}", file=sys.stderr)
        return 2
    print(f"wrote {files[0]} and {counted(len(files) - 1, 'chart')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
