"""kafkalog held to Kafka: every regression scenario of ``tests/oracle/scenarios/`` and the first
:data:`GENERATED_PER_LINE` generated scenarios of each Kafka line, run on Kafka's ``UnifiedLog`` (one JVM per Kafka
line for the session: the ``kafka_runner_for`` fixture) and on kafkalog's ``Log`` (both kernel twins), must give
identical answers and files after every op (``docs/oracle.rst``).

Without Java or the jars (``make oracle-jars``) these tests skip, saying so; with ``KAFKALOG_REQUIRE_ORACLE=1``
(CI) that is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.oracle.driver import run_scenario
from tests.oracle.generator import generate
from tests.oracle.scenario import load_scenario

try:
    from tests.oracle import jvm  # noqa: F401 - the Java runner's side: without it there is no Kafka to run
except ImportError:
    if os.environ.get("KAFKALOG_REQUIRE_ORACLE", "") not in ("", "0"):
        raise
    pytest.skip("the Kafka runner (tests/oracle/jvm.py) is not in this checkout", allow_module_level=True)

SCENARIOS = sorted((Path(__file__).resolve().parent / "scenarios").glob("*.json"))
#: Generated scenarios per Kafka line in ``make test`` (``make oracle`` runs many more, from seed 1000).
GENERATED_PER_LINE = 14


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_regression_scenario(path: Path, kafka_runner_for: Callable[[str], Any], scratch: Path,
                             impl: ModuleType) -> None:
    scenario = load_scenario(path)
    outcome = run_scenario(scenario, scratch, kafka_runner_for(scenario.kafka))
    assert outcome.difference is None, outcome.report()
    assert outcome.compared == len(scenario.ops) + 2


@pytest.mark.parametrize("seed", range(GENERATED_PER_LINE))
@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_generated_scenario(kafka: str, seed: int, kafka_runner_for: Callable[[str], Any], scratch: Path,
                            impl: ModuleType) -> None:
    scenario = generate(seed, kafka)
    outcome = run_scenario(scenario, scratch, kafka_runner_for(kafka))
    assert outcome.difference is None, (
        f"{outcome.report()}\nreplay: python -m tests.oracle.run --generate 1 --seed {seed} --kafka {kafka} -v")
    assert outcome.compared == len(scenario.ops) + 2
