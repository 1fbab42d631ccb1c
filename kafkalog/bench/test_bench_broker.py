"""kafkalog's broker beside Kafka's JVM broker: the same clients doing the same work against each, in one run
(issue 34).

Each row runs against ``kafkalog serve`` (a child process, as a user runs it) and against Kafka's own broker
(:mod:`kafkalog.bench.kafka_broker`: a 4.4 KRaft node from ``make oracle-jars``' jars, with the JVM options its start
script gives it), both on 127.0.0.1 of this machine, with the same client settings.  The clients run in the
benchmark's own process.  Kafka's rows are skipped, with the reason, where there is no JDK 17+ or no jars;
confluent-kafka's rows where it is not installed.  Ratios are Kafka's time over kafkalog's (above 1: kafkalog is
faster).

* **start to the first produce** (group ``broker start to the first produce``): a fresh data dir; the clock starts
  when the broker is launched and stops when a confluent-kafka producer (``acks=all``) has its first message
  acknowledged, after an AdminClient made its one-partition topic.  kafkalog: ``python -m kafkalog serve`` (the
  interpreter's start and imports included), and :func:`kafkalog.broker.serve` in the benchmark's process (the
  library already imported) as a second row; Kafka: ``kafka-storage.sh format`` and ``kafka-server-start.sh``.
  Both sides' clients poll the port every 5 ms and retry with 10-50 ms back-offs.  Each row launches once untimed
  first (the files in the page cache; the ``kafkalog serve`` child's modules compiled into a ``PYTHONPYCACHEPREFIX``
  of the run, as an installed kafkalog has its ``.pyc`` files).  Goal: at most 0.3 s for kafkalog (a budget row;
  Kafka's time is a reference).
* **produce throughput** (group ``broker produce 200k records``): 200,000 records of 100-byte values (no key) to a
  new one-partition topic each round, timed from the first ``produce`` to the end of ``flush()``; the producer is
  connected and has the topic's metadata before the clock starts.  confluent-kafka with ``linger.ms`` 5,
  ``batch.size`` 64 KiB, ``acks=all``, compression none and lz4; kafka-python with the same settings, no
  compression.  Each round's topic is then checked to hold the 200,000 records.  Goal: 1.0.
* **consume throughput** (group ``broker consume 200k records``): the same 200,000 records read from offset 0 of a
  topic filled once, ``assign()`` then poll until the last one (every value's length summed and checked); a new
  consumer each round, connected before the clock starts.  confluent-kafka and kafka-python.  Goal: 1.0.
* **produce-to-consume latency** (group ``broker produce-to-consume latency``): one confluent-kafka producer
  (``linger.ms`` 0, ``acks=all``) and one consumer (assigned at the start of a new topic, in a thread of its own), 2,000
  messages sent one at a time, the next after the consumer got the previous one; each carries its send time
  (``perf_counter_ns``), and the latency is the consumer's receive time minus it.  100 untimed messages first.  The
  rows' rounds are the 2,000 latencies; the ratios compare the median and the 99th percentile (no goal).

The values are 100 bytes of which the first 40 repeat from record to record and the rest are random, so lz4 has
something to do (about 1.6:1) without a batch collapsing to nothing.
"""

from __future__ import annotations

import math
import os
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalog.bench import kafka_broker
from kafkalog.bench.conftest import QUICK, QUICK_ROUNDS

RECORDS = 200_000
VALUE_BYTES = 100
PRODUCE_ROUNDS = 3
CONSUME_ROUNDS = 3
#: The start rows time their own rounds (a launch each), so ``kafkalog bench --quick`` shortens them here.
START_ROUNDS = QUICK_ROUNDS if QUICK else 5
KAFKA_START_ROUNDS = QUICK_ROUNDS if QUICK else 3
LATENCY_MESSAGES = 2_000
LATENCY_WARMUP = 100
#: The issue's goal for the start to the first produce: 0.3 s.
START_BUDGET_S = 0.3
#: How long a broker may take to start, or a client to finish a round, before the row fails.
DEADLINE_S = 120.0

START_GROUP = "broker start to the first produce"
PRODUCE_GROUP = "broker produce 200k records"
CONSUME_GROUP = "broker consume 200k records"
LATENCY_GROUP = "broker produce-to-consume latency"

#: librdkafka's back-offs, short on both sides so a start row measures the broker, not a client's wait.
_QUICK_RETRIES = {"reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50, "retry.backoff.ms": 10,
                  "retry.backoff.max.ms": 50, "topic.metadata.refresh.fast.interval.ms": 10}
#: What every producer row sets (the issue's settings).
_PRODUCER = {"linger.ms": 5, "batch.size": 64 * 1024, "acks": "all"}


class _RoundClock:
    """The clock of a row whose rounds are timed by the row itself (a broker launched in another process, a
    latency measured between two threads): it stands still, and :func:`_replay` moves it by each round's
    seconds, so pytest-benchmark's statistics, table and JSON are those rounds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


_ROUND_CLOCK = _RoundClock()


def _replay(benchmark: Any, rounds_s: list[float]) -> None:
    pending = iter(rounds_s)

    def one_round() -> None:
        _ROUND_CLOCK.now += next(pending)

    benchmark.pedantic(one_round, rounds=len(rounds_s), iterations=1, warmup_rounds=0)


# ---------------------------------------------------------------------------------------------------
# The brokers


def _confluent() -> Any:
    return pytest.importorskip("confluent_kafka", reason="the broker rows' client is confluent-kafka")


def _logger() -> Any:
    """librdkafka's log lines go to Python's logging (captured by pytest), not to the terminal."""
    import logging
    return logging.getLogger("kafkalog.bench.broker.clients")


def _wait_for_port(port: int, deadline: float, alive: Callable[[], bool]) -> None:
    """Return once 127.0.0.1:``port`` accepts a connection, trying every 5 ms."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if not alive():
            raise RuntimeError(f"the broker on port {port} exited while starting")
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listened on port {port} in {DEADLINE_S:.0f} s")
        time.sleep(0.005)


def _create_topic(bootstrap: str, topic: str, deadline: float) -> None:
    """Create ``topic`` (one partition), retrying while the broker is not ready to."""
    ck = _confluent()
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _logger(), **_QUICK_RETRIES})
    while True:
        future = admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30)[topic]
        try:
            future.result(timeout=max(deadline - time.monotonic(), 1.0))
            return
        except ck.KafkaException as e:
            error = e.args[0]
            if error.code() == ck.KafkaError.TOPIC_ALREADY_EXISTS:
                return
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _first_produce(bootstrap: str, topic: str) -> None:
    """One message, ``acks=all``, until it is acknowledged."""
    ck = _confluent()
    delivered: list[Any] = []
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "logger": _logger(),
                            **_QUICK_RETRIES})
    producer.produce(topic, b"first", on_delivery=lambda err, msg: delivered.append(err))
    remaining = producer.flush(DEADLINE_S)
    assert remaining == 0 and delivered == [None], f"the first produce failed: {delivered}"


class _KafkalogServe:
    """``python -m kafkalog serve`` over a data dir, on a free port of 127.0.0.1.

    ``bytecode``: where the child keeps its compiled modules (``PYTHONPYCACHEPREFIX``).  An installed kafkalog has
    its ``.pyc`` files; a checkout run with ``PYTHONDONTWRITEBYTECODE`` would compile every module at every start,
    which is no user's start, so the child writes them there (the row's untimed first launch compiles them).
    """

    def __init__(self, work: Path, bytecode: Path) -> None:
        self.work = work
        self.port = kafka_broker.free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._out: Any = None
        self._env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self._env["PYTHONPYCACHEPREFIX"] = str(bytecode)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def launch(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self._out = (self.work / "stdout.log").open("ab")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kafkalog", "serve", "--log-dirs", str(self.work / "data"),
             "--listeners", f"PLAINTEXT://127.0.0.1:{self.port}"],
            stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT, env=self._env)

    def exited(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def log_tail(self) -> str:
        return (self.work / "stdout.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if self._out is not None:
            self._out.close()
            self._out = None


@pytest.fixture(scope="module")
def bytecode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``kafkalog serve`` children's compiled modules (see :class:`_KafkalogServe`)."""
    return tmp_path_factory.mktemp("pycache")


def _launcher(name: str, work: Path, bytecode: Path) -> Any:
    if name == "kafkalog":
        return _KafkalogServe(work, bytecode)
    found = kafka_broker.find()
    if isinstance(found, str):
        pytest.skip(found)
    return kafka_broker.KafkaBrokerJvm.from_jvm(found, work)


def _until_ready(broker: Any, topic: str) -> None:
    """From a launched broker to ``topic`` created and its first message acknowledged: a start row's work."""
    deadline = time.monotonic() + DEADLINE_S
    try:
        _wait_for_port(broker.port, deadline, lambda: broker.exited() is None)
        _create_topic(broker.bootstrap, topic, deadline)
        _first_produce(broker.bootstrap, topic)
    except BaseException as error:
        tail = broker.log_tail()
        broker.stop()
        raise RuntimeError(f"{type(broker).__name__} did not take its first produce; its log ends:\n{tail}") \
            from error


@pytest.fixture(scope="module", params=["kafkalog", "kafka"])
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, bytecode: Path) -> Iterator[Any]:
    """A running broker (``kafkalog serve``, or Kafka's) for the throughput and latency rows; ``.name`` says which."""
    _confluent()
    name = request.param
    running = _launcher(name, tmp_path_factory.mktemp(f"broker-{name}"), bytecode)
    running.launch()
    _until_ready(running, "ready")
    running.name = name
    try:
        yield running
    finally:
        running.stop()


# ---------------------------------------------------------------------------------------------------
# Start to the first produce


@pytest.mark.benchmark(timer=_ROUND_CLOCK)
@pytest.mark.parametrize("name", ["kafkalog", "kafka"])
def test_start_to_first_produce(benchmark: Any, throughput: Callable[..., None], budget: Callable[..., None],
                                tmp_path: Path, bytecode: Path, name: str) -> None:
    """From launching the broker process on a fresh data dir to the first acknowledged message; one untimed
    launch first (the files it reads in the page cache, kafkalog's modules compiled)."""
    _confluent()
    rounds = []
    for i in range(1 + (START_ROUNDS if name == "kafkalog" else KAFKA_START_ROUNDS)):
        running = _launcher(name, tmp_path / f"round-{i}", bytecode)
        began = time.perf_counter()
        running.launch()
        _until_ready(running, "first")
        rounds.append(time.perf_counter() - began)
        running.stop()
    rounds = rounds[1:]
    benchmark.group = START_GROUP
    _replay(benchmark, rounds)
    throughput(benchmark, f"broker-start/{'kafkalog-cli' if name == 'kafkalog' else 'kafka'}")
    budget("broker-start/budget-0.3s", START_BUDGET_S)


@pytest.mark.benchmark(timer=_ROUND_CLOCK)
def test_start_to_first_produce_in_process(benchmark: Any, throughput: Callable[..., None],
                                           budget: Callable[..., None], tmp_path: Path) -> None:
    """``kafkalog.broker.serve()`` in this process (the library imported beforehand) to the first acknowledged
    message."""
    _confluent()
    from kafkalog.broker import serve

    rounds = []
    for i in range(1 + START_ROUNDS):  # the first untimed, as in the row above
        began = time.perf_counter()
        with serve(tmp_path / f"round-{i}") as running:
            _create_topic(running.bootstrap_servers, "first", time.monotonic() + DEADLINE_S)
            _first_produce(running.bootstrap_servers, "first")
            rounds.append(time.perf_counter() - began)
    rounds = rounds[1:]
    benchmark.group = START_GROUP
    _replay(benchmark, rounds)
    throughput(benchmark, "broker-start/kafkalog-in-process")
    budget("broker-start/budget-0.3s", START_BUDGET_S)


# ---------------------------------------------------------------------------------------------------
# Produce throughput


@pytest.fixture(scope="module")
def values() -> list[bytes]:
    """The 200,000 values: 40 bytes that repeat, then 60 random ones (seeded)."""
    rng = random.Random(34)
    prefix = b"kafkalog broker bench value, 100 bytes: "
    assert len(prefix) == 40
    return [prefix + rng.randbytes(VALUE_BYTES - 40) for _ in range(RECORDS)]


def _high_watermark(bootstrap: str, topic: str) -> int:
    ck = _confluent()
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkalog-bench-check", "logger": _logger()})
    try:
        return int(consumer.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=30)[1])
    finally:
        consumer.close()


def _produce_confluent(bootstrap: str, topic: str, values: list[bytes], compression: str) -> Callable[[], int]:
    """A connected producer that knows ``topic``; the returned function sends every value and flushes (librdkafka's
    producer has nothing to close)."""
    ck = _confluent()
    producer = ck.Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "logger": _logger(),
                            "queue.buffering.max.messages": 1_000_000, **_PRODUCER})
    producer.list_topics(topic, timeout=30)

    def send() -> int:
        produce, poll = producer.produce, producer.poll
        for value in values:
            try:
                produce(topic, value)
            except BufferError:  # the queue is full: let deliveries drain it
                poll(0.01)
                produce(topic, value)
        return int(producer.flush(DEADLINE_S))
    return send


def _produce_kafka_python(bootstrap: str, topic: str, values: list[bytes], opened: list[Any]) -> Callable[[], int]:
    """As :func:`_produce_confluent`; the producer is added to ``opened``, for the caller to close untimed."""
    import warnings
    with warnings.catch_warnings():  # kafka-python's own DeprecationWarning on first import
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=64 * 1024, acks="all")
    opened.append(producer)
    producer.partitions_for(topic)

    def send() -> int:
        for value in values:
            producer.send(topic, value)
        producer.flush(DEADLINE_S)
        return 0
    return send


@pytest.mark.parametrize("client", ["confluent-none", "confluent-lz4", "kafka-python"])
def test_produce_throughput(benchmark: Any, throughput: Callable[..., None], broker: Any, values: list[bytes],
                            client: str) -> None:
    """200,000 records of 100 bytes produced and flushed, a new topic each round."""
    topics: list[str] = []
    opened: list[Any] = []

    def setup() -> tuple[tuple[Callable[[], int]], dict[str, Any]]:
        while opened:  # the previous round's producer, closed before this round starts, untimed
            opened.pop().close()
        topic = f"produce-{client}-{len(topics)}"
        topics.append(topic)
        _create_topic(broker.bootstrap, topic, time.monotonic() + DEADLINE_S)
        if client == "kafka-python":
            return (_produce_kafka_python(broker.bootstrap, topic, values, opened),), {}
        return (_produce_confluent(broker.bootstrap, topic, values, client.removeprefix("confluent-")),), {}

    benchmark.group = f"{PRODUCE_GROUP} [{client}]"
    try:
        left = benchmark.pedantic(lambda send: send(), setup=setup, rounds=PRODUCE_ROUNDS, warmup_rounds=1)
    finally:
        for producer in opened:
            producer.close()
    assert left == 0
    for topic in topics:
        assert _high_watermark(broker.bootstrap, topic) == RECORDS, topic
    throughput(benchmark, f"broker-produce/{client}/{broker.name}", records=RECORDS, nbytes=RECORDS * VALUE_BYTES)


# ---------------------------------------------------------------------------------------------------
# Consume throughput


@pytest.fixture(scope="module")
def filled(broker: Any, values: list[bytes]) -> tuple[Any, str]:
    """``broker`` with a topic holding the 200,000 records (confluent-kafka, no compression)."""
    topic = "consume"
    _create_topic(broker.bootstrap, topic, time.monotonic() + DEADLINE_S)
    assert _produce_confluent(broker.bootstrap, topic, values, "none")() == 0
    assert _high_watermark(broker.bootstrap, topic) == RECORDS
    return broker, topic


def _consume_confluent(bootstrap: str, topic: str, opened: list[Any]) -> Callable[[], tuple[int, int]]:
    """A connected consumer (added to ``opened``, for the caller to close untimed); the returned function reads
    the whole partition from offset 0: the record count and the values' bytes."""
    ck = _confluent()
    # fetch.queue.backoff.ms: once its local queue holds queued.min.messages (100,000), librdkafka puts off the
    # next fetch by this much (1 s by default), whether or not the application is about to drain it: a pause of
    # the client's, in some rounds and not others, on either broker.  Short, the row times the broker's fetches.
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkalog-bench", "logger": _logger(),
                            "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    opened.append(consumer)
    consumer.list_topics(topic, timeout=30)

    def read() -> tuple[int, int]:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        count = size = 0
        deadline = time.monotonic() + DEADLINE_S
        while count < RECORDS and time.monotonic() < deadline:
            # consume(n, timeout) returns once it holds n messages or the timeout is up: asked for more than are
            # left, the last call would wait out its timeout, a second of the client's that no broker can shorten
            # (it made this row 1.2 s or 0.3 s by the round, on either broker)
            for message in consumer.consume(min(10_000, RECORDS - count), 1.0):
                if message.error() is None:
                    count += 1
                    size += len(message.value())
        return count, size
    return read


def _consume_kafka_python(bootstrap: str, topic: str, opened: list[Any]) -> Callable[[], tuple[int, int]]:
    """As :func:`_consume_confluent`, with kafka-python."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    opened.append(consumer)
    consumer.partitions_for_topic(topic)

    def read() -> tuple[int, int]:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, 0)
        count = size = 0
        deadline = time.monotonic() + DEADLINE_S
        while count < RECORDS and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000, max_records=10_000).values():
                count += len(batch)
                size += sum(len(message.value) for message in batch)
        return count, size
    return read


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_consume_throughput(benchmark: Any, throughput: Callable[..., None], filled: tuple[Any, str],
                            client: str) -> None:
    """The 200,000 records read from offset 0 with ``assign()``, a new consumer each round."""
    broker, topic = filled
    opened: list[Any] = []

    def setup() -> tuple[tuple[Callable[[], tuple[int, int]]], dict[str, Any]]:
        while opened:  # the previous round's consumer, closed before this round starts, untimed
            opened.pop().close()
        make = _consume_kafka_python if client == "kafka-python" else _consume_confluent
        return (make(broker.bootstrap, topic, opened),), {}

    benchmark.group = f"{CONSUME_GROUP} [{client}]"
    try:
        count, size = benchmark.pedantic(lambda read: read(), setup=setup, rounds=CONSUME_ROUNDS, warmup_rounds=1)
    finally:
        for consumer in opened:
            consumer.close()
    assert (count, size) == (RECORDS, RECORDS * VALUE_BYTES)
    throughput(benchmark, f"broker-consume/{client}/{broker.name}", records=RECORDS, nbytes=RECORDS * VALUE_BYTES)


# ---------------------------------------------------------------------------------------------------
# Produce-to-consume latency


def _latencies(bootstrap: str, topic: str, messages: int) -> list[float]:
    """Seconds from each send to its receipt, ``messages`` sent one at a time."""
    ck = _confluent()
    _create_topic(bootstrap, topic, time.monotonic() + DEADLINE_S)
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkalog-bench-latency",
                            "logger": _logger(), "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])  # a new topic: from its start, so the probe is seen
    received: queue.Queue[tuple[int, bytes]] = queue.Queue()
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                received.put((time.perf_counter_ns(), message.value()))

    reader = threading.Thread(target=consume, name="latency-consumer", daemon=True)
    reader.start()
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "logger": _logger()})
    try:
        # the consumer's first fetch is in flight before anything is sent: wait until a probe comes through
        producer.produce(topic, b"probe")
        producer.flush(DEADLINE_S)
        received.get(timeout=DEADLINE_S)
        out = []
        for _ in range(LATENCY_WARMUP + messages):
            sent = time.perf_counter_ns()
            producer.produce(topic, sent.to_bytes(8, "big"))
            producer.poll(0)
            got, value = received.get(timeout=DEADLINE_S)
            out.append((got - int.from_bytes(value, "big")) / 1e9)
        producer.flush(DEADLINE_S)
        return out[LATENCY_WARMUP:]
    finally:
        stop.set()
        reader.join(10)
        consumer.close()


@pytest.mark.benchmark(timer=_ROUND_CLOCK)
def test_produce_to_consume_latency(benchmark: Any, throughput: Callable[..., None], budget: Callable[..., None],
                                    broker: Any) -> None:
    """2,000 messages, one at a time, each from its send to its receipt."""
    latencies = _latencies(broker.bootstrap, "latency", LATENCY_MESSAGES)
    assert len(latencies) == LATENCY_MESSAGES and min(latencies) > 0
    ordered = sorted(latencies)
    median, p99 = ordered[len(ordered) // 2], ordered[math.ceil(len(ordered) * 0.99) - 1]  # nearest rank
    benchmark.group = LATENCY_GROUP
    _replay(benchmark, latencies)
    benchmark.extra_info.update(median_s=median, p99_s=p99)
    throughput(benchmark, f"broker-latency/{broker.name}")
    budget(f"broker-latency-median/{broker.name}", median)
    budget(f"broker-latency-p99/{broker.name}", p99)

