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
    replicas: int = broker_property("example.replicas", "SHORT", 3, at_least(1))
    interval_ms: int = broker_property("example.interval.ms", "LONG", 2**40)
    size: int = broker_property("example.size", "INT", 10, at_least(0))


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
        broker_property("example.name", "STRING", 0)


@pytest.mark.parametrize("cls", [GroupCoordinatorConfig, TransactionCoordinatorConfig])
def test_every_field_of_the_coordinators_configs_is_a_property(cls: type[CoordinatorConfig]) -> None:
    """Each field's property name is its attribute's with dots, so that from_properties reaches all of them."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    assert all(f.metadata["property"].replace(".", "_") == f.name for f in fields)
    defaults = cls()
    read = cls.from_properties({f.metadata["property"]: str(getattr(defaults, f.name)) for f in fields})
    assert read == defaults
