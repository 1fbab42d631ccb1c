"""A coordinator's configuration: a frozen dataclass whose fields are Kafka broker properties.

Kafka's coordinators read a few of the broker's properties into a config object of their own (``GroupConfig`` and
``OffsetConfig``, ``TransactionConfig``), each property defined once in ``KafkaConfig`` with a name, a type, a
default and a validator.  Here a config is a frozen dataclass deriving :class:`CoordinatorConfig`, each of its fields
declared by :func:`broker_property` with those four things (the attribute is the property name in snake_case); the
base class gives every such config the same two ways in:

- the constructor (``GroupCoordinatorConfig(group_max_size=4)``), which checks each field's value: a Python ``int``
  (not a ``bool``), within its Java type (SHORT, INT or LONG), and passing the validator;
- :meth:`CoordinatorConfig.from_properties`, which reads a broker's properties as a ``server.properties`` file
  holds them (Kafka name -> text), parses the config's own names with Kafka's ``ConfigDef.parseType`` and leaves
  every other name to the rest of the broker (one file configures all of its parts).

Every refusal is a :class:`~kafkalog.config.ConfigError` naming the property, with Kafka's ``ConfigException``
message ("Invalid value V for configuration N: reason").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Self

from ..config.config_def import ConfigError, Validator, parse_type

__all__ = ["CoordinatorConfig", "DeclaredProperty", "broker_property", "declared_properties"]

#: The Java integer types a coordinator's property may have, and their ranges.
_RANGES = {"SHORT": (-(2**15), 2**15 - 1), "INT": (-(2**31), 2**31 - 1), "LONG": (-(2**63), 2**63 - 1)}


def broker_property(name: str, type_: str, default: int, validator: Validator | None = None, *, doc: str) -> Any:
    """A field of a :class:`CoordinatorConfig`: Kafka's property ``name``, its ConfigDef type (``SHORT``, ``INT``
    or ``LONG``), its default, its validator (``None``: any value of the type) and what it means, in a line (the
    broker's DescribeConfigs and ``kafkalog serve --help-config`` show it)."""
    if type_ not in _RANGES:
        raise ValueError(f"{name}: a coordinator's property is a SHORT, INT or LONG, not {type_}")
    return dataclasses.field(default=default, metadata={"property": name, "type": type_, "validator": validator,
                                                         "doc": doc})


@dataclasses.dataclass(frozen=True)
class DeclaredProperty:
    """One broker property a coordinator's configuration declares (:func:`broker_property`)."""

    name: str
    type_: str
    default: int
    validator: Validator | None
    doc: str


def declared_properties(cls: type[CoordinatorConfig]) -> list[DeclaredProperty]:
    """The broker properties configuration class ``cls`` declares, in the order of its fields: the broker's own
    configuration (:class:`~kafkalog.broker.config.BrokerConfig`) knows them from here, so each is declared once."""
    declared = []
    for f, name, type_, validator in _properties(cls):
        assert isinstance(f.default, int)  # broker_property always gives one
        declared.append(DeclaredProperty(name, type_, f.default, validator, f.metadata["doc"]))
    return declared


def _properties(cls: type[Any]) -> list[tuple[dataclasses.Field[Any], str, str, Validator | None]]:
    """Each field of ``cls`` declared by :func:`broker_property`, with its property name, type and validator, in
    the order of the fields."""
    return [(f, f.metadata["property"], f.metadata["type"], f.metadata["validator"])
            for f in dataclasses.fields(cls) if "property" in f.metadata]


class CoordinatorConfig:
    """The checks and the reading of properties that every coordinator's configuration shares (module docstring).
    A subclass is a frozen dataclass; one with checks across fields extends ``__post_init__``."""

    def __post_init__(self) -> None:
        for f, name, type_, validator in _properties(type(self)):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError.invalid(name, value, f"Expected value to be a {type_.lower()}, but it was a "
                                                       f"{type(value).__name__}")
            low, high = _RANGES[type_]
            if not low <= value <= high:
                raise ConfigError.invalid(name, value, f"Value does not fit a Java {type_.lower()}")
            if validator is not None:
                validator(name, value)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> Self:
        """The configuration of a broker's properties (Kafka name -> value, as a ``server.properties`` file holds
        them); names that are not this configuration's are left to the rest of the broker, and those not given take
        their defaults.

        Raises:
            ConfigError: a value of the wrong type or out of range (Kafka's ``ConfigException`` messages).
        """
        values: dict[str, int] = {}
        for f, name, type_, _validator in _properties(cls):
            if name not in properties:
                continue
            raw = properties[name]
            # parse_type has no SHORT (no LogConfig property is one): read as an INT, then held to a short's range.
            parsed = parse_type(name, raw, "INT" if type_ == "SHORT" else type_)
            assert isinstance(parsed, int)
            if type_ == "SHORT" and not _RANGES["SHORT"][0] <= parsed <= _RANGES["SHORT"][1]:
                raise ConfigError.invalid(name, raw, "Value does not fit a Java short")
            values[f.name] = parsed
        return cls(**values)
