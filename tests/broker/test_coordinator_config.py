"""What every coordinator's configuration shares (kafkalog.broker.coordinator_config): fields declared as Kafka
broker properties, checked when made and read from a broker's properties."""

from __future__ import annotations

import dataclasses
import re

import pytest

from kafkalog.broker.coordinator_config import CoordinatorConfig, broker_property
from kafkalog.broker.group_config import GroupCoordinatorConfig
from kafkalog.broker.txn_config import TransactionCoordinatorConfig
from kafkalog.config.config_def import ConfigError, at_least


@dataclasses.dataclass(frozen=True)
class _Example(CoordinatorConfig):
    replicas: int = broker_property("example.replicas", "SHORT", 3, at_least(1), doc="replicas")
    interval_ms: int = broker_property("example.interval.ms", "LONG", 2**40, doc="an interval")
    size: int = broker_property("example.size", "INT", 10, at_least(0), doc="a size")


def test_from_properties_reads_its_names_and_leaves_the_others() -> None:
    config = _Example.from_properties({"example.replicas": " 2 ", "example.interval.ms": str(2**50),
                                       "log.dirs": "/elsewhere"})
    assert isinstance(config, _Example)
    assert (config.replicas, config.interval_ms, config.size) == (2, 2**50, 10)
    assert _Example.from_properties({}) == _Example()


@pytest.mark.parametrize(("properties", "name", "message"), [
    ({"example.replicas": "40000"}, "example.replicas", "Invalid value '40000' for configuration example.replicas: "
                                                        "Value does not fit a Java short"),
    ({"example.replicas": "0"}, "example.replicas", "Value must be at least 1"),
    ({"example.size": str(2**31)}, "example.size", "Not a number of type INT"),
    ({"example.interval.ms": "soon"}, "example.interval.ms", "Invalid value 'soon' for configuration "
                                                             "example.interval.ms"),
])
def test_bad_properties_are_config_errors(properties: dict[str, str], name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        _Example.from_properties(properties)
    assert info.value.name == name


def test_the_constructor_checks_type_range_and_validator() -> None:
    with pytest.raises(ConfigError, match=re.escape("example.size: Expected value to be a int, but it was a bool")):
        _Example(size=True)
    with pytest.raises(ConfigError, match=re.escape("example.replicas: Value does not fit a Java short")):
        _Example(replicas=2**15)
    with pytest.raises(ConfigError, match=re.escape("example.size: Value must be at least 0")):
        _Example(size=-1)


def test_a_property_is_an_integer_type() -> None:
    with pytest.raises(ValueError, match="STRING"):
        broker_property("example.name", "STRING", 0, doc="a name")


@pytest.mark.parametrize("cls", [GroupCoordinatorConfig, TransactionCoordinatorConfig])
def test_every_field_of_the_coordinators_configs_is_a_property(cls: type[CoordinatorConfig]) -> None:
    """Each field's property name is its attribute's with dots, so that from_properties reaches all of them."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    assert all(f.metadata["property"].replace(".", "_") == f.name for f in fields)
    defaults = cls()
    read = cls.from_properties({f.metadata["property"]: str(getattr(defaults, f.name)) for f in fields})
    assert read == defaults


def test_the_broker_takes_every_coordinator_property_from_its_declaration() -> None:
    """Each coordinator property is declared once, on its configuration class: the broker accepts it (before, a
    second table in BrokerConfig lacked offsets.commit.required.acks and request.timeout.ms, so ``kafkalog serve``
    refused a server.properties that set them), shows its value, and hands the coordinators what it read."""
    from kafkalog.broker.config import BROKER_PROPERTIES, BrokerConfig
    config = BrokerConfig({"log.dirs": "/tmp/unused", "offsets.commit.required.acks": "1",
                           "request.timeout.ms": "1234", "group.max.size": "7",
                           "transaction.state.log.replication.factor": "1"})
    assert config["offsets.commit.required.acks"] == 1
    assert config["request.timeout.ms"] == 1234
    assert config.group_coordinator.group_max_size == 7 and config["group.max.size"] == 7
    assert config.transaction_coordinator.request_timeout_ms == 1234
    assert config.transaction_coordinator.transaction_state_log_replication_factor == 1
    for cls in (GroupCoordinatorConfig, TransactionCoordinatorConfig):
        defaults = cls()
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            prop = BROKER_PROPERTIES[f.metadata["property"]]
            assert (prop.type_, prop.default, prop.doc) == (f.metadata["type"], getattr(defaults, f.name),
                                                            f.metadata["doc"])
            assert prop.doc


@pytest.mark.parametrize(("given", "message"), [
    ({"group.min.session.timeout.ms": "10", "group.max.session.timeout.ms": "5"}, "must not be larger"),
    ({"transaction.state.log.replication.factor": "40000"}, "Java short"),
    ({"offsets.topic.compression.codec": "9"}, "Unknown compression type id: 9"),
])
def test_the_broker_refuses_what_a_coordinator_refuses(given: dict[str, str], message: str) -> None:
    from kafkalog.broker.config import BrokerConfig
    with pytest.raises(ConfigError, match=message):
        BrokerConfig({"log.dirs": "/tmp/unused", **given})


def test_help_config_lists_every_property_the_broker_takes(capsys: pytest.CaptureFixture[str]) -> None:
    """``kafkalog serve --help-config``, which the unknown-property error points to: one row per name, each of
    them one the broker accepts, with the coordinators', the topic defaults and the cleaner's among them."""
    from kafkalog.broker.config import BrokerConfig
    from kafkalog.cli import main
    assert main(["serve", "--help-config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["property", "type", "default", "meaning"]
    names = [line.split()[0] for line in lines[2:]]
    assert len(names) == len(set(names)) > 100
    for name in ("offsets.commit.required.acks", "log.retention.hours", "log.cleaner.threads", "num.io.threads",
                 "listeners", "transaction.max.timeout.ms"):
        assert name in names
    # the columns, from the header's underline
    spans, start = [], 0
    for dashes in lines[1].split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    for line in lines[2:]:
        name, default = (line[a:b].strip() for a, b in (spans[0], spans[2]))
        if default:  # every default listed is one the broker takes
            BrokerConfig({"log.dirs": "/tmp/unused", name: default})
        else:  # and a name listed without one is known: refused, if at all, for its value, never for its name
            try:
                BrokerConfig({"log.dirs": "/tmp/unused", name: "1"})
            except ConfigError as e:
                assert "Unknown broker configuration" not in str(e)
