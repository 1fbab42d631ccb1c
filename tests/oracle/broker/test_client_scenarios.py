"""The same client scripts against kafkalog's broker and a real Kafka 4.4 broker: what the clients see must be equal.

Each scenario of :mod:`~tests.oracle.broker.client_scenarios` runs once against kafkalog's broker
(:func:`kafkalog.broker.serve`) and once against one Kafka broker started for the whole module, both with
:data:`~tests.oracle.broker.client_scenarios.BROKER_SETTINGS` (auto-created topics, no initial rebalance delay, one
``__consumer_offsets`` partition); the two results are compared with ``==``, after :func:`normalise` removes the
differences kafkalog makes on purpose (each names the module docstring that gives it).  Without Java or the jars the
tests skip (``require_broker``); with ``KAFKALOG_REQUIRE_ORACLE=1`` they fail instead.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalog.broker import serve

from .broker import KafkaBroker
from .client_scenarios import BROKER_SETTINGS, KAFKA_4_ONLY_TOPIC_CONFIGS, REMOVED_IN_KAFKA_4, SCENARIOS
from .conftest import KAFKA_CURRENT, require_broker

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

PREFIX = "scenario-"
#: DescribeConfigs' config sources.
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
DEFAULT_CONFIG = 5


@pytest.fixture(scope="module")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_broker(KAFKA_CURRENT)
    broker = KafkaBroker(KAFKA_CURRENT, tmp_path_factory.mktemp("scenarios-kafka"), BROKER_SETTINGS)
    broker.format()
    with broker.running_broker():
        yield broker.bootstrap


@pytest.fixture(scope="module")
def kafkalog_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("scenarios-kafkalog"), config=BROKER_SETTINGS) as running:
        yield running.bootstrap_servers


def normalise(name: str, result: Any) -> Any:
    """``result`` without what kafkalog's broker answers differently on purpose."""
    result = copy.deepcopy(result)
    if name == "admin_topic_configs":
        # kafkalog.broker.admin's docstring: a topic's configurations are LogConfig's, Kafka 3.8's; Kafka 4 removed
        # three and added six.  Any other name one broker describes and the other does not still shows.
        result["names_beyond_logconfig"] = sorted(set(result["names_beyond_logconfig"]) - KAFKA_4_ONLY_TOPIC_CONFIGS)
        result["logconfig_names_missing"] = sorted(set(result["logconfig_names_missing"]) - REMOVED_IN_KAFKA_4)
        # kafkalog.broker.admin's docstring: Kafka 4's controller writes a cluster-wide min.insync.replicas when it
        # formats the cluster (KIP-966), which topics describe as a dynamic broker default; kafkalog has no dynamic
        # broker configurations, so it is Kafka's default.  Only the value is compared.
        for view in ("plain", "tuned", "tuned_after"):
            value, *_ = result[view]["min.insync.replicas"]
            result[view]["min.insync.replicas"] = value
        for view in ("raw_plain", "raw_tuned"):
            for i, entry in enumerate(result[view]):
                if entry[0] == "min.insync.replicas":
                    synonyms = [s for s in entry[6] if s[2] != DYNAMIC_DEFAULT_BROKER_CONFIG]
                    source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
                    result[view][i] = (*entry[:3], source, *entry[4:6], synonyms)
        code, partitions, replication, config_code, configs = result["raw_created"]
        configs = [(*c[:3], DEFAULT_CONFIG if c[3] == DYNAMIC_DEFAULT_BROKER_CONFIG else c[3], *c[4:])
                   for c in configs]
        result["raw_created"] = (code, partitions, replication, config_code, configs)
    if name == "kafka_python_group_admin":
        # kafkalog.broker.group_coordinator's docstring: a group's operations are Kafka 3.8's (READ, DESCRIBE,
        # DELETE); Kafka 4 adds DESCRIBE_CONFIGS and ALTER_CONFIGS, for group configurations.
        for view in ("described", "described_empty"):
            for group in result[view].values():
                group["authorized_operations"] = [op for op in group["authorized_operations"]
                                                  if op not in ("DESCRIBE_CONFIGS", "ALTER_CONFIGS")]
    if name == "confluent_list_offsets":
        # kafkalog.broker.fetch's docstring: a partition named twice in a ListOffsets is answered once per mention
        # (Kafka 3.8), where 4.4 answers it once.
        result["raw_twice"] = list(dict.fromkeys(result["raw_twice"]))
    return result


#: Scenarios that differ because of something kafkalog's broker must change where this branch may not (the
#: partition registry): strict, so that the fix makes them fail until they are taken off this list.
KNOWN_DIFFERENCES: dict[str, str] = {}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[name]))
    if name in KNOWN_DIFFERENCES else name for name in SCENARIOS])
def test_the_clients_see_the_same(name: str, kafkalog_bootstrap: str, kafka_bootstrap: str) -> None:
    scenario = SCENARIOS[name]
    ours = normalise(name, scenario(kafkalog_bootstrap, PREFIX))
    theirs = normalise(name, scenario(kafka_bootstrap, PREFIX))
    if isinstance(ours, dict) and isinstance(theirs, dict):
        # key by key first, so that a failure names the part that differs
        for key in sorted(set(ours) | set(theirs)):
            assert ours.get(key) == theirs.get(key), f"{name}: {key!r} differs (kafkalog first, Kafka second)"
    assert ours == theirs


def test_every_scenario_is_compared() -> None:
    """The scenarios module lists each scenario function once."""
    import inspect

    from . import client_scenarios
    public = {n for n, f in inspect.getmembers(client_scenarios, inspect.isfunction)
              if f.__module__ == client_scenarios.__name__ and not n.startswith("_")}
    assert public == set(SCENARIOS)
