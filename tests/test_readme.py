"""The README states only what is true: its library example and its command lines run as written.

The examples are taken from ``README.md`` itself, not copied here, so an edit to the README that breaks
one fails this test.  Only their paths change (``/tmp/...``, ``/var/lib/kafka/data``, ``/data/...`` become
folders of the test's own).  The Spark example runs in ``tests/spark/test_spark.py``
(``test_the_readme_spark_example_runs``), on the suite's one Spark session; ``kafkalog bench --quick`` is
left out here, as the benchmark command has its own tests in ``tests/cli/test_bench_report.py``.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import struct
import subprocess
import sys
import typing
from pathlib import Path

import kafkalog
from kafkalog import MemoryRecords
from kafkalog.clients import Consumer, Producer
from kafkalog.config.log_config import LogConfig
from kafkalog.manager.log_manager import LogManager
from kafkalog.topic import TopicPartition
from tests.support.kraft_metadata import TOPIC, config_record, topic_id, topic_record, write_metadata_log

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_blocks(language: str) -> list[str]:
    """The fenced code blocks of the README in ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", README.read_text(), flags=re.S | re.M)


def readme_block(language: str, containing: str) -> str:
    blocks = [b for b in readme_blocks(language) if containing in b]
    assert len(blocks) == 1, f"one {language} block of the README should contain {containing!r}"
    return blocks[0]


def test_the_library_example_runs_as_written(tmp_path: Path) -> None:
    code = readme_block("python", "LogManager(")
    data = tmp_path / "kafkalog-data"
    # The first half writes a data dir; the second opens "a real broker's" one read-only: the same dir.
    code = code.replace("/tmp/kafkalog-data", str(data)).replace("/var/lib/kafka/data", str(data))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    lines = out.getvalue().splitlines()
    assert lines[0] == "0 b'order-1' b'created' [('trace', b'42')]"
    assert lines[1] == "1 b'order-1' None []"
    assert lines[-1] == "orders-0 0 2 1"
    assert (data / ".kafka_cleanshutdown").exists()


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def _data_dir(root: Path) -> Path:
    """A KRaft broker's log dir with a plain topic (``orders``), a compacted one with keys updated (``users``),
    the group coordinator's ``__consumer_offsets-0`` holding an offset commit (key v1, value v3, as Kafka 2.1+
    writes them), and the metadata log that says users compacts."""
    with LogManager(root, LogConfig({"segment.bytes": 4096}),
                    topic_configs={"users": {"cleanup.policy": "compact"}}) as manager:
        orders = manager.create_log(TopicPartition("orders", 0))
        users = manager.create_log(TopicPartition("users", 0))
        for i in range(200):
            orders.append(MemoryRecords.with_records([(b"order-%d" % i, b"x" * 40, 1_700_000_000_000 + i)]))
            users.append(MemoryRecords.with_records([(b"user-%d" % (i % 10), b"v%d" % i, 1_700_000_000_000 + i)]))
        commit_key = struct.pack(">h", 1) + _string("billing") + _string("orders") + struct.pack(">i", 0)
        commit = struct.pack(">hqi", 3, 200, 0) + _string("") + struct.pack(">q", 1_700_000_000_500)
        manager.create_log(TopicPartition("__consumer_offsets", 0)).append(
            MemoryRecords.with_records([(commit_key, commit, 1_700_000_000_500)]))
    write_metadata_log(root, [[topic_record("orders", topic_id(1)), topic_record("users", topic_id(2)),
                               config_record(TOPIC, "users", "cleanup.policy", "compact")]])
    return root


def test_the_command_lines_run_as_written(tmp_path: Path) -> None:
    data = _data_dir(tmp_path / "data")
    commands = [line.split("#")[0].strip() for line in readme_block("sh", "kafkalog dump").splitlines()]
    ran = []
    for command in filter(None, commands):
        if command.startswith("kafkalog bench"):
            continue
        command = re.sub(r"(?<= )(/var/lib/kafka/data|/data)(?=/| |$)", str(data), command)
        argv = [sys.executable, "-m", "kafkalog", *shlex.split(command)[1:]]
        done = subprocess.run(argv, cwd=data / "orders-0", capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert done.stdout, f"{command} printed nothing"
        if "--offsets-decoder" in command:
            assert ('key: {"type":"1","data":{"group":"billing","topic":"orders","partition":0}} payload: '
                    '{"version":"3","data":{"offset":200,"leaderEpoch":0,"metadata":"","commitTimestamp":'
                    '1700000000500}}') in done.stdout
        ran.append(shlex.split(command)[1])
    assert {"dump", "verify", "stats", "recover", "clean", "demo"} <= set(ran)


def _client_bullet() -> str:
    (bullet,) = [b for b in README.read_text().split("\n- ") if b.startswith("`kafkalog.Producer(manager).send(")]
    return " ".join(bullet.split())


def test_the_client_bullet_names_what_send_returns_and_the_consumer_yields(tmp_path: Path) -> None:
    """The README's word on what ``Producer.send`` returns and ``Consumer`` yields is the code's: the names it
    gives are kafkalog's classes that the annotation names and a real send and read return."""
    bullet = _client_bullet()
    returned = re.search(r"returns an? `([\w.]+)`", bullet)
    yielded = re.search(r"iterates `([\w.]+)`s", bullet)
    assert returned and yielded, bullet
    send_returns = typing.get_type_hints(Producer.send)["return"]
    assert returned.group(1) == f"kafkalog.{send_returns.__name__}"
    assert getattr(kafkalog, send_returns.__name__) is send_returns
    with LogManager(tmp_path) as manager:
        sent = Producer(manager).send("orders", b"v", key=b"k", timestamp_ms=1_700_000_000_000)
        assert type(sent) is send_returns and sent.offset == 0 and sent.timestamp == 1_700_000_000_000
        (record,) = Consumer(manager, "orders", start_timestamp=1_700_000_000_000)
        assert f"kafkalog.{type(record).__name__}" == yielded.group(1)
        assert getattr(kafkalog, type(record).__name__) is type(record)
        assert (record.key, record.value, record.offset) == (b"k", b"v", 0)


def _readme_words() -> str:
    """The README with its whitespace collapsed, so that a phrase may run over a line break."""
    return " ".join(README.read_text().split())


def test_the_readme_figures_are_the_code_s() -> None:
    """The counts and sizes the README gives are the code's: ``make demo``'s workload, the size of a Spark
    read task, the Kafka versions ``make test`` fetches, and how many of Kafka's tests are ported."""
    words = _readme_words()
    numbers = {"a million": 1_000_000, "four": 4, "twelve": 12, "two": 2}
    demo = re.search(r"`make demo` writes a keyed workload of (a million) records \((\w+) topics, (\w+) partitions,"
                     r".*?\) into (\w+) log dirs", words)
    assert demo, "the README no longer says what make demo writes: update this test"
    from kafkalog.spark.workload import TOPICS
    assert numbers[demo.group(2)] == len(TOPICS)
    assert numbers[demo.group(3)] == sum(t.partitions for t in TOPICS)
    help_text = subprocess.run([sys.executable, "-m", "kafkalog.spark.demo", "--help"], capture_output=True,
                               text=True, timeout=120)
    assert help_text.returncode == 0, help_text.stderr
    assert f"(default {numbers[demo.group(1)]:,})" in " ".join(help_text.stdout.split())
    demo_source = (README.parent / "kafkalog" / "spark" / "demo.py").read_text()
    assert '[str(root / "kafka-logs-1"), str(root / "kafka-logs-2")]' in demo_source and demo.group(4) == "two"

    from kafkalog.spark.options import DEFAULT_MAX_PARTITION_BYTES
    task = re.search(r"`maxPartitionBytes` \((\d+) MiB\)", words)
    assert task and int(task.group(1)) << 20 == DEFAULT_MAX_PARTITION_BYTES

    makefile = (README.parent / "Makefile").read_text()
    (versions,) = re.findall(r"^KAFKA_VERSIONS := (.*)$", makefile, flags=re.M)
    for fetched in re.findall(r"Maven fetch(?:es)? Kafka ([\d.]+) and ([\d.]+)", words):
        assert list(fetched) == versions.split()

    from tests.test_kafka_ports import account
    ported = re.search(r"(\d+) of Kafka 3\.8\.0's (\d+) log-layer, group coordinator and transaction coordinator "
                       r"tests are ported", words)
    assert ported
    done, _listed, total = account().count("3.8.0")
    assert int(ported.group(1)) <= done and int(ported.group(2)) == total


def test_every_time_the_readme_gives_says_the_machine_it_depends_on() -> None:
    """A duration (how long a command runs) is only true of a machine: each the README gives names the cores it
    was measured on.  (``kafkalog bench --quick`` once said "a minute" and took 169 s on the 2-core CI machine.)"""
    text = README.read_text()
    said = [line for line in text.splitlines() if re.search(r"\bminutes?\b|\bseconds?\b|\bhours?\b", line)]
    assert said, "the README gives no time: drop this test"
    for line in said:
        # The sentence may go on to the next line: take the line and the one after it.
        following = text[text.index(line):].split("\n", 2)
        assert re.search(r"\b\d+ cores\b|\b\d+-core\b", " ".join(following[:2])), line
