"""A broker on a thread of its own: what ``kafkalog.broker.serve()`` and the pytest fixture hand out.

:class:`~kafkalog.broker.server.Broker` runs on an asyncio event loop. A test or a script that is not itself asyncio
code wants the broker beside it, started and stopped around a ``with`` block: :func:`~kafkalog.broker.running.serve`
starts a daemon thread that runs the loop, starts the broker on it, and returns once the port accepts connections;
leaving the block stops the broker cleanly (the logs flushed, checkpointed and closed) and ends the thread. Calls into
the broker from the caller's thread go through the loop (:meth:`RunningBroker.call`), since everything the broker owns
belongs to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from .config import BrokerConfig
from .server import Broker

__all__ = ["RunningBroker", "serve"]

T = TypeVar("T")

#: How long start and stop may take before the caller is told (recovering big logs can take a while).
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 120.0


class RunningBroker:
    """A started :class:`~kafkalog.broker.server.Broker` and the thread whose event loop runs it."""

    def __init__(self, broker: Broker, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.broker = broker
        self._loop = loop
        self._thread = thread

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap_servers``."""
        return self.broker.bootstrap_servers

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def log_dirs(self) -> list[Path]:
        """The broker's data directories (real Kafka log dirs: ``kafkalog dump`` and Kafka read them)."""
        return [Path(d) for d in self.broker.config.log_dirs]

    def call(self, fn: Callable[[], T] | Callable[[], Awaitable[T]], timeout: float = 60.0) -> T:
        """Run ``fn`` (a function, or one returning an awaitable) on the broker's loop and return its result."""
        async def run() -> T:
            result = fn()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                return await result  # type: ignore[no-any-return]
            return result  # type: ignore[return-value]
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        """Create a topic as a CreateTopics request would (its overrides checked by LogConfig)."""
        self.call(lambda: self.broker.partitions.create_topic(name, partitions, config))

    def stop(self) -> None:
        """Stop the broker cleanly and end its thread (what leaving :func:`~kafkalog.broker.running.serve`'s block
        does)."""
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self.broker.stop(), self._loop).result(STOP_TIMEOUT_S)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(STOP_TIMEOUT_S)

    def __repr__(self) -> str:
        return f"RunningBroker({self.bootstrap_servers}, log_dirs={[str(d) for d in self.log_dirs]})"


def start(config: BrokerConfig | Mapping[str, object]) -> RunningBroker:
    """Start a broker on a new daemon thread; returns once it listens.  Stop it with :meth:`RunningBroker.stop`."""
    broker = Broker(config)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(broker.start())
        except BaseException as e:  # reported to the caller below
            failure.append(e)
            started.set()
            loop.close()
            return
        started.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    thread = threading.Thread(target=run, name=f"kafkalog-broker-{broker.node_id}", daemon=True)
    thread.start()
    if not started.wait(START_TIMEOUT_S):
        raise TimeoutError(f"The broker did not start within {START_TIMEOUT_S:.0f} s")
    if failure:
        raise failure[0]
    return RunningBroker(broker, loop, thread)


@contextlib.contextmanager
def serve(log_dirs: str | Path | list[str | Path] | None = None, *,
          listeners: str = "PLAINTEXT://127.0.0.1:0", config: Mapping[str, object] | None = None,
          **properties: object) -> Iterator[RunningBroker]:
    """A Kafka-compatible broker over kafkalog's logs for the length of a ``with`` block::

        with kafkalog.broker.serve() as broker:
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

    ``log_dirs``: the data directories (created if absent; kept afterwards); by default a temporary directory,
    removed when the block ends.  ``listeners``: by default a free port of 127.0.0.1.  ``config`` and keyword
    arguments: broker properties under Kafka's names (``config={"num.partitions": "3"}``, or
    ``num_partitions=3``, underscores read as dots).

    Raises:
        ConfigError: an unknown property or a bad value.
    """
    props: dict[str, object] = {"listeners": listeners, **(config or {})}
    props.update({name.replace("_", "."): value for name, value in properties.items()})
    temporary = None
    if log_dirs is None:
        temporary = tempfile.mkdtemp(prefix="kafkalog-broker-")
        props["log.dirs"] = temporary
    else:
        dirs = [log_dirs] if isinstance(log_dirs, str | Path) else list(log_dirs)
        props["log.dirs"] = ",".join(str(d) for d in dirs)
    try:
        running = start(props)
        try:
            yield running
        finally:
            running.stop()
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
