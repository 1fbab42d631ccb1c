"""The KRaft node that both the benchmarks' broker rows and these broker tests run
(:class:`kafkalog.bench.kafka_broker.KafkaBrokerJvm`): its files, the command lines it runs, its failures, and its
stop and kill.  No JVM: a shell script stands in for ``java`` and says what it was given."""

from __future__ import annotations

import re
import stat
import time
from pathlib import Path

import pytest

from kafkalog.bench.kafka_broker import TOOL_OPTIONS, KafkaBrokerJvm
from kafkalog.bench.kafka_jvm import JVM_OPTIONS, KafkaJvmError


def _java(tmp_path: Path, body: str) -> str:
    """A stand-in for ``java``: writes its arguments, one a line, to ``<cwd>/args``, then runs ``body``."""
    script = tmp_path / "java"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > args\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_the_nodes_files_carry_its_settings_and_the_callers(tmp_path: Path) -> None:
    node = KafkaBrokerJvm("java", ["a.jar", tmp_path / "b.jar"], tmp_path / "node", version="3.9.2",
                          config={"num.partitions": 3, "offsets.topic.replication.factor": "1"})
    lines = (tmp_path / "node" / "server.properties").read_text().splitlines()
    assert lines == sorted(lines)
    properties = dict(line.split("=", 1) for line in lines)
    assert properties["num.partitions"] == "3"
    assert properties["listeners"] == (f"PLAINTEXT://127.0.0.1:{node.port},"
                                       f"CONTROLLER://127.0.0.1:{node.controller_port}")
    assert properties["controller.quorum.voters"] == f"1@127.0.0.1:{node.controller_port}"
    assert properties["log.dirs"] == str(node.log_dir)
    assert properties["transaction.state.log.min.isr"] == "1"
    assert node.bootstrap == f"127.0.0.1:{node.port}"
    assert node.port != node.controller_port
    # a 3.x broker logs through log4j 1, a 4.x through log4j 2
    assert "log4j.appender.file.File=" + str(node.server_log) in (tmp_path / "node" / "log4j.properties").read_text()
    four = KafkaBrokerJvm("java", [], tmp_path / "four")
    assert f"fileName = {four.server_log}" in (tmp_path / "four" / "log4j2.properties").read_text()
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", node.cluster_id)


def test_format_runs_the_storage_tool_and_says_why_it_failed(tmp_path: Path) -> None:
    node = KafkaBrokerJvm(_java(tmp_path, "echo 'no meta.properties' >&2; exit 3"), ["a.jar", "b.jar"],
                          tmp_path / "node")
    with pytest.raises(KafkaJvmError, match=r"kafka-storage format exited 3: no meta\.properties"):
        node.format()
    args = (tmp_path / "node" / "args").read_text().splitlines()
    assert args == [*TOOL_OPTIONS, f"-Dlog4j2.configurationFile={tmp_path / 'node' / 'log4j2.properties'}",
                    f"-Dkafka.logs.dir={tmp_path / 'node'}", "-cp", "a.jar:b.jar", "kafka.tools.StorageTool",
                    "format", f"--cluster-id={node.cluster_id}", f"--config={tmp_path / 'node' / 'server.properties'}"]
    assert "-Xmx256M" in TOOL_OPTIONS and not any(o.startswith("-Xms") for o in TOOL_OPTIONS)


def test_start_then_stop_and_a_broker_that_will_not_stop_is_killed(tmp_path: Path) -> None:
    node = KafkaBrokerJvm(_java(tmp_path, "exec sleep 30"), [], tmp_path / "node")
    node.start()
    assert node.running and node.exited() is None
    deadline = time.monotonic() + 10
    while not (tmp_path / "node" / "args").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "node" / "args").read_text().splitlines()[:len(JVM_OPTIONS)] == list(JVM_OPTIONS)
    assert node.stop() is True
    assert not node.running

    stubborn = KafkaBrokerJvm(_java(tmp_path, "trap '' TERM; echo up; while :; do sleep 0.05; done"), [],
                              tmp_path / "stubborn")
    stubborn.start()
    while "up" not in stubborn.stdout_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.01)  # the trap is set before SIGTERM comes
    assert stubborn.stop(timeout=0.3) is False
    assert not stubborn.running
    assert "up" in stubborn.log_tail()
