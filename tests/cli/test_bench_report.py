"""The benchmark report: ``kafkalog bench`` on a tiny configuration (a few quick rows of the real suite)
writes every table and chart the run calls for; bad input gives clear errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kafkalog.cli import main
from kafkalog.cli.bench_report import BenchReportError, Row, load, write_report

pytest.importorskip("pytest_benchmark", reason="the bench extra is not installed")
pytest.importorskip("matplotlib", reason="the bench extra is not installed")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_a_quick_run_writes_every_table_and_chart(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Called from a pytest-xdist worker (as `make test` runs this), the run must still benchmark: it is a session
    # of its own, not a worker of ours.
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw7")
    out, err = io.StringIO(), io.StringIO()
    status = main(["bench", "--quick", "-k", "crc32c or lookup or scan_4mib", "--out", str(tmp_path)],
                  stdout=out, stderr=err)
    assert status == 0, err.getvalue()
    # The child pytest's progress went to stderr, without pytest-benchmark's tables or the row listing; stdout
    # is the short table of the targeted ratios and where the report is.
    child_out, child_err = capfd.readouterr()
    assert child_out == "" and "passed" in child_err
    assert "Name (time in" not in child_err and "kafkalog benchmark rows" not in child_err
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["COMPARISON", "RATIO", "TARGET", "RESULT"]
    assert any(line.startswith("CRC-32C 1 MiB: compiled vs crcmod (pure twin)") and "10x" in line for line in lines)
    run = json.loads((tmp_path / "run.json").read_text())
    assert len(lines) < 15 and lines[-1].startswith(f"{len(run['benchmarks'])} rows")
    groups = {b["group"] for b in run["benchmarks"]}
    assert {"crc32c 1 MiB", "index lookup 10 MiB, uniform", "index lookup 10 MiB, warm", "scan 4 MiB"} <= groups
    report = (tmp_path / "report.md").read_text()
    assert str(tmp_path / "report.md") in out.getvalue()
    for group in groups:
        assert f"### {group}" in report
        charts = [line for line in report.splitlines() if line.startswith(f"![{group}](")]
        assert len(charts) == 1
        chart = tmp_path / charts[0].split("(")[1].rstrip(")")
        assert chart.read_bytes().startswith(PNG_MAGIC)
    for bench in run["benchmarks"]:
        assert f"| `{bench['extra_info']['key']}` |" in report
    assert run["kafkalog_ratios"], "the selected rows make up ratios"
    for ratio in run["kafkalog_ratios"]:
        assert f"| {ratio['label']} | {ratio['ratio_min']:.2f}x |" in report
    assert (tmp_path / "ratios.png").read_bytes().startswith(PNG_MAGIC)
    assert "## Machine" in report and f"{run['kafkalog_machine']['cpu_count']} cores" in report
    assert "spark" not in groups  # --quick leaves the Spark read out


def test_row_kinds() -> None:
    def kind(key: str) -> str:
        return Row("g", "n", key, 1.0, 1.0, 1).kind

    assert [kind(k) for k in ("crc32c/cython", "crc32c/cython-table", "decode/columns/python", "crc32/zlib",
                              "decode/aiokafka", "scan256/numpy-copy", "spark/kafkalog/local[2]",
                              "spark/tuples/local[1]")] == [
        "compiled", "compiled", "plain", "peer", "peer", "peer", "compiled", "peer"]


def test_bad_input_gives_clear_errors(tmp_path: Path) -> None:
    cases = {
        "missing.json": (None, "cannot read"),
        "text.json": ("not json at all", "not JSON"),
        "list.json": ("[1, 2]", "no 'benchmarks' list"),
        "no-stats.json": (json.dumps({"benchmarks": [{"name": "x", "group": "g"}]}), "without its timings"),
        "disabled.json": (json.dumps({"benchmarks": []}), "no benchmark rows"),
        "bad-ratio.json": (json.dumps({"benchmarks": [{"name": "x", "stats": {"min": 1, "median": 1, "rounds": 1}}],
                                       "kafkalog_ratios": [{"label": "r"}]}), "malformed ratio"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content)
        with pytest.raises(BenchReportError, match=message):
            load(path)
    # a minimal valid file still makes a report, with a chart of times where no throughput is known
    (tmp_path / "one.json").write_text(json.dumps(
        {"benchmarks": [{"name": "x", "group": "g", "stats": {"min": 0.5, "median": 0.6, "rounds": 3}}]}))
    files = write_report(load(tmp_path / "one.json"), tmp_path / "report")
    assert [f.name for f in files] == ["report.md", "group-g.png"]
    assert "| `x` | peer | 500.000 ms | 600.000 ms | 3 |" in files[0].read_text()


def test_bench_command_without_a_suite(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["bench", "--bench-dir", str(tmp_path)], stdout=io.StringIO(), stderr=err) == 2
    assert "no benchmark suite" in err.getvalue()
    (tmp_path / "run.json").write_text("{}")
    err = io.StringIO()
    assert main(["bench", "--bench-dir", str(tmp_path)], stdout=io.StringIO(), stderr=err) == 2
