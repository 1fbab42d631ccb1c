"""``kafkalog serve`` as a user runs it: a process that says when it listens, stops cleanly on SIGTERM, loses
nothing a produce with acks=all was told was written when it is killed, and refuses bad configuration with a
clear message; and the pytest fixtures of kafkalog.pytest_plugin, as another project's tests use them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafkalog.cli import main

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serving(data: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "kafkalog", "serve", "--log-dirs", str(data),
                                "--listeners", "PLAINTEXT://127.0.0.1:0", "--config", "offsets.topic.num.partitions=1",
                                "--config", "transaction.state.log.num.partitions=1", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on" in line, line + (process.stderr.read() if process.stderr else "")
        yield process, line.split("listening on ")[1].split()[0]
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)  # reads and closes the pipes


def _produce(bootstrap: str, values: list[bytes]) -> int:
    import confluent_kafka as ck
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    acknowledged = []
    for value in values:
        producer.produce("t", value=value, on_delivery=lambda err, msg: err is None and acknowledged.append(msg))
    producer.flush(30)
    return len(acknowledged)


def _consume(bootstrap: str, count: int) -> list[bytes]:
    import confluent_kafka as ck
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition("t", 0, ck.OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    return got


def test_sigterm_stops_it_cleanly_and_a_restart_serves_the_data(tmp_path: Path) -> None:
    values = [b"v%d" % i for i in range(500)]
    with serving(tmp_path) as (process, bootstrap):
        assert _produce(bootstrap, values) == 500
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert "kafkalog broker stopped" in out
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "meta.properties").read_text().count("cluster.id=") == 1
    assert "t 0 500" in (tmp_path / "replication-offset-checkpoint").read_text().splitlines()
    with serving(tmp_path) as (process, bootstrap):
        assert _consume(bootstrap, 500) == values
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
        assert process.returncode == 0


def test_sigkill_loses_nothing_acknowledged(tmp_path: Path) -> None:
    values = [b"record-%d" % i for i in range(2000)]
    with serving(tmp_path) as (process, bootstrap):
        assert _produce(bootstrap, values) == 2000
        process.kill()  # no flush, no checkpoints, no clean-shutdown marker
        process.communicate(timeout=30)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    with serving(tmp_path) as (_process, bootstrap):
        assert _consume(bootstrap, 2000) == values


@pytest.mark.parametrize("args, message", [
    (["--config", "no.such.setting=1"], "Unknown broker configuration no.such.setting"),
    (["--config", "num.partitions=zero"], "Invalid value"),
    (["--listeners", "SSL://127.0.0.1:9093"], "PLAINTEXT only"),
    (["--config", "nonsense"], "--config wants KEY=VALUE"),
])
def test_bad_configuration_is_refused_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          args: list[str], message: str) -> None:
    assert main(["serve", "--log-dirs", str(tmp_path), *args]) == 2
    assert message in capsys.readouterr().err


def test_serve_needs_log_dirs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve"]) == 2
    assert "needs --log-dirs" in capsys.readouterr().err


def test_serving_leaves_hypothesis_unimported_and_importable(tmp_path: Path) -> None:
    """kio imports hypothesis whenever it is installed, about 0.25 s of the 0.3 s start budget; ``kafkalog serve``
    imports the broker with hypothesis made unimportable, so a development machine starts as fast as a user's, and
    the process can still import it afterwards."""
    script = (
        "import sys\n"
        "from kafkalog.cli.serve import _unimportable\n"
        "with _unimportable('hypothesis'):\n"
        "    import kafkalog.broker\n"
        "    try:\n"
        "        import hypothesis\n"
        "    except ImportError:\n"
        "        blocked = True\n"
        "    else:\n"
        "        blocked = False\n"
        "print(blocked, 'hypothesis' in sys.modules, 'kio' in sys.modules)\n"
        "import hypothesis.strategies\n"
        "print(hypothesis.strategies.integers is not None)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert done.stdout.split() == ["True", "False", "True", "True"]


def test_unimportable_leaves_an_imported_package_alone() -> None:
    from kafkalog.cli.serve import _unimportable
    before = sys.modules["pytest"]
    with _unimportable("pytest"):
        import pytest as again
        assert again is before
    assert sys.modules["pytest"] is before


def test_the_pytest_fixtures_in_another_project(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_orders="""
        import pytest
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition

        def test_round_trip(kafkalog_bootstrap_servers, kafkalog_topic):
            producer = KafkaProducer(bootstrap_servers=kafkalog_bootstrap_servers)
            producer.send(kafkalog_topic, b"order-1").get(timeout=10)
            producer.close()
            consumer = KafkaConsumer(bootstrap_servers=kafkalog_bootstrap_servers, consumer_timeout_ms=5000)
            consumer.assign([TopicPartition(kafkalog_topic, 0)])
            consumer.seek_to_beginning()
            assert [m.value for _, m in zip(range(1), consumer)] == [b"order-1"]
            consumer.close()

        def test_topics_are_fresh(kafkalog_broker, kafkalog_topic):
            log = kafkalog_broker.call(lambda: kafkalog_broker.broker.partitions.log(kafkalog_topic, 0))
            assert log.log_end_offset == 0

        @pytest.mark.kafkalog_topic(partitions=3, config={"cleanup.policy": "compact"})
        def test_marked_topic(kafkalog_broker, kafkalog_topic):
            topic = kafkalog_broker.call(lambda: kafkalog_broker.broker.partitions.get(kafkalog_topic))
            assert len(topic.logs) == 3 and topic.logs[0].config.compact
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")
    result.assert_outcomes(passed=3)
