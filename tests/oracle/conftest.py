"""The Kafka oracle's fixtures: one runner (one JVM) per Kafka version per test session.

``kafka_runner_for(kafka)`` (also available as ``kafka_runner``) returns the session's
:class:`~tests.oracle.jvm.KafkaRunner` for ``kafka`` (``"3.9"`` or ``"4"``), starting it on first use and
again if it died; every runner is closed when the session ends.  A test that asks for a runner where Kafka
cannot run (no JDK, no jars: :class:`~tests.oracle.jvm.OracleUnavailable`) is skipped with the reason, which says
how to get what is missing (``make oracle-jars``); with ``KAFKALOG_REQUIRE_ORACLE=1`` (CI) that skip is a
failure, as ``KAFKALOG_REQUIRE_EXTENSION`` makes a missing compiled core one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import NoReturn

import pytest

from tests.oracle.jvm import KafkaRunner, OracleUnavailable

REQUIRE_ORACLE = os.environ.get("KAFKALOG_REQUIRE_ORACLE", "") not in ("", "0")


def oracle_unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it when the oracle is required (``KAFKALOG_REQUIRE_ORACLE=1``)."""
    if REQUIRE_ORACLE:
        pytest.fail(f"KAFKALOG_REQUIRE_ORACLE is set but the Kafka oracle cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka_runner_for() -> Iterator[Callable[[str], KafkaRunner]]:
    """The session's runner for a Kafka version: ``kafka_runner_for("3.9")``, ``kafka_runner_for("4")``."""
    runners: dict[str, KafkaRunner] = {}

    def runner_for(kafka: str) -> KafkaRunner:
        runner = runners.get(kafka)
        if runner is not None and runner.running:
            return runner
        if runner is not None:
            runner.close()  # it died (or was killed after a timeout): a fresh JVM for the next test
        try:
            runner = KafkaRunner(kafka)
        except OracleUnavailable as e:
            oracle_unavailable(str(e))
        runners[kafka] = runner
        return runner

    yield runner_for
    for runner in runners.values():
        runner.close()


@pytest.fixture(scope="session")
def kafka_runner(kafka_runner_for: Callable[[str], KafkaRunner]) -> Callable[[str], KafkaRunner]:
    """The same factory as ``kafka_runner_for``, under the name the contract gives the session fixture."""
    return kafka_runner_for
