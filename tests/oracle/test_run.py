"""The command ``python -m tests.oracle.run`` (``tests/oracle/run.py``): its exit codes (0 identical, 1 a
difference, 2 a scenario it cannot read, 3 no Kafka), what it prints, and the shrinking of a differing scenario.

Kafka is not needed here: the command is given kafkalog's own side as the other runner, which must find nothing,
or kafkalog's side over another index interval, whose index files really differ from the first side's."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.oracle.kafkalog_side import KafkalogRunner
from tests.oracle.run import (
    EXIT_DIFFERENT,
    EXIT_IDENTICAL,
    EXIT_UNAVAILABLE,
    EXIT_UNREADABLE,
    OracleUnavailableError,
    main,
)
from tests.oracle.scenario import load_scenario

T0 = 1_700_000_000_000


class DenseIndexRunner(KafkalogRunner):
    """kafkalog's side writing an offset-index entry for every batch: another log than the scenario's, whose
    ``.index`` files differ from a log of the scenario's own configuration once a second batch is appended."""

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        if message.get("cmd") == "start":
            message = {**message, "config": {**message["config"], "index.interval.bytes": "1"}}
        return super().request(message)


def write(path: Path, ops: list[dict[str, Any]], **top: Any) -> Path:
    path.write_text(json.dumps({"kafka": "3.9", "ops": ops, **top}))
    return path


def append(key: str) -> dict[str, Any]:
    return {"op": "append", "records": [{"key": key, "value": "v", "timestamp": T0}]}


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    return write(tmp_path / "three.json", [{"op": "roll"}, append("a"), {"op": "flush"}, append("b"),
                                           {"op": "read", "offset": 0, "max_bytes": 1000}, append("c")])


def test_identical(scenario_file: Path, impl: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(scenario_file)], runner_factory=lambda kafka: KafkalogRunner()) == EXIT_IDENTICAL
    out = capsys.readouterr().out
    assert "1 scenario(s), 6 ops, 8 requests compared" in out
    assert out.rstrip().endswith("identical")


def test_a_difference(scenario_file: Path, impl: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(scenario_file)], runner_factory=lambda kafka: DenseIndexRunner()) == EXIT_DIFFERENT
    out = capsys.readouterr().out
    # the scenario, the op (index and JSON), the file and byte offset
    assert f"{scenario_file}: kafka 3.9: ops[3] " in out
    assert '"key": "b"' in out
    assert "file differs: 00000000000000000000.index at byte 3" in out  # the low byte of relative offset 1
    assert out.rstrip().endswith("DIFFERENT")


def test_shrinking_keeps_the_fewest_ops_that_still_differ(scenario_file: Path, tmp_path: Path, impl: ModuleType,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "shrunk"
    assert main([str(scenario_file), "--shrink-to", str(out_dir)],
                runner_factory=lambda kafka: DenseIndexRunner()) == EXIT_DIFFERENT
    shrunk = load_scenario(out_dir / "three-shrunk.json")
    assert [op["op"] for op in shrunk.ops] == ["append", "append"]
    assert shrunk.description is not None and "file differs at 00000000000000000000.index" in shrunk.description
    assert "shrunk to 2 ops" in capsys.readouterr().out
    # the shrunk file is itself a differing scenario
    assert main([str(out_dir / "three-shrunk.json")], runner_factory=lambda kafka: DenseIndexRunner()) == \
        EXIT_DIFFERENT


def test_keep_going_runs_every_scenario(scenario_file: Path, tmp_path: Path, impl: ModuleType,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    other = write(tmp_path / "other.json", [append("x"), append("y")])
    assert main([str(scenario_file), str(other), "--keep-going"],
                runner_factory=lambda kafka: DenseIndexRunner()) == EXIT_DIFFERENT
    out = capsys.readouterr().out
    assert f"{scenario_file}: kafka 3.9" in out and f"{other}: kafka 3.9" in out
    assert main([str(scenario_file), str(other)], runner_factory=lambda kafka: DenseIndexRunner()) == EXIT_DIFFERENT
    assert f"{other}: kafka" not in capsys.readouterr().out


def test_generated_scenarios(impl: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []

    def factory(kafka: str) -> KafkalogRunner:
        lines.append(kafka)
        return KafkalogRunner()

    assert main(["--generate", "2", "--seed", "5"], runner_factory=factory) == EXIT_IDENTICAL
    assert lines == ["3.9", "4"]  # one runner per Kafka line, reused
    assert "4 scenario(s)" in capsys.readouterr().out
    assert main(["--generate", "1", "--kafka", "4"], runner_factory=factory) == EXIT_IDENTICAL
    assert lines[2:] == ["4"]


@pytest.mark.parametrize(("argv", "message"), [
    ([], "give scenario files or --generate N"),
    (["nowhere.json"], "cannot read the scenario: nowhere.json: cannot read the file"),
])
def test_nothing_to_read(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv, runner_factory=lambda kafka: KafkalogRunner()) == EXIT_UNREADABLE
    assert message in capsys.readouterr().err


def test_a_bad_scenario_exits_2_naming_file_op_and_field(scenario_file: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path / "bad.json", [append("a"), {"op": "truncate_to", "offset": "3"}])
    started: list[str] = []
    assert main([str(scenario_file), str(bad)], runner_factory=lambda kafka: started.append(kafka)) == \
        EXIT_UNREADABLE
    assert f"{bad}: ops[1] (truncate_to): offset: expected an offset" in capsys.readouterr().err
    assert started == []  # every file is read before any runs


def test_no_kafka_exits_3(scenario_file: Path, impl: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    def unavailable(kafka: str) -> KafkalogRunner:
        raise OracleUnavailableError("no java on PATH")

    assert main([str(scenario_file)], runner_factory=unavailable) == EXIT_UNAVAILABLE
    assert "Kafka 3.9 cannot run: no java on PATH" in capsys.readouterr().err


def test_kafkalog_only_prints_kafkalogs_answers(scenario_file: Path, impl: ModuleType,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def no_kafka(kafka: str) -> KafkalogRunner:
        raise AssertionError("no Kafka runner is asked for")

    assert main([str(scenario_file), "--kafkalog-only"], runner_factory=no_kafka) == EXIT_IDENTICAL
    out = capsys.readouterr().out
    assert '  ops[0] {"op": "roll"}' in out
    assert '    kafkalog: {"result": {"activeSegment": 0}' in out
    assert "kafka:" not in out


def test_verbose_prints_both_answers(scenario_file: Path, impl: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(scenario_file), "-v"], runner_factory=lambda kafka: KafkalogRunner()) == EXIT_IDENTICAL
    out = capsys.readouterr().out
    assert '    kafka:    {"result": {"activeSegment": 0}' in out
    assert out.count("    kafkalog: ") == 8
