"""Kafka's ``ConfigDef`` machinery that the configurations share: value parsing, the range and choice
validators, and the error they raise.

Port of the parts of ``clients/src/main/java/org/apache/kafka/common/config/ConfigDef.java`` (Apache Kafka,
tag 3.8.0) that :class:`~kafkalog.config.log_config.LogConfig` and :class:`~kafkalog.cleaner.config.CleanerConfig`
use: ``ConfigDef.parseType`` (:func:`parse_type`), ``ConfigDef.Range.atLeast`` / ``Range.between``,
``ValidString.in`` and ``ValidList.in``, and ``ConfigException`` (:class:`ConfigError`).  The property
tables themselves, and the validators only one property has, live with the configuration they belong to.

Types are ConfigDef's names as strings: ``"INT"`` and ``"LONG"`` (Java ``int`` / ``long``: 32 and 64 bits),
``"DOUBLE"``, ``"BOOLEAN"``, ``"STRING"`` and ``"LIST"`` (comma-separated).  A value is taken as given in its
Python type or as the string Kafka reads from a properties file (trimmed, then parsed: integers as
``[+-]digits``, doubles as Java's decimal literals, booleans ``true``/``false`` in any case, lists split at
commas with the spaces around them).  One deliberate difference: :func:`between` refuses NaN, which Java's
``<``/``>`` comparisons let through.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from .._common import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from ..errors import KafkaLogError

__all__ = ["ConfigError", "Validator", "at_least", "between", "parse_type", "valid_list", "valid_string"]


class ConfigError(KafkaLogError, ValueError):
    """A property name or value Kafka would refuse: a topic's (``LogConfig``) or the cleaner's broker properties.

    Kafka: ``ConfigException`` (bad values: "Invalid value V for configuration N: reason") and
    ``InvalidConfigurationException`` (unknown names, conflicting values).  ``name`` is the property at fault
    (``None`` when several unknown names are reported at once; they are in ``names``) and ``value`` the value
    as the caller passed it.
    """

    def __init__(
        self, message: str, *, name: str | None = None, value: object = None, names: Iterable[str] = ()
    ) -> None:
        super().__init__(message)
        self.name = name
        self.value = value
        self.names: tuple[str, ...] = tuple(names) if names else (() if name is None else (name,))

    @classmethod
    def invalid(cls, name: str, value: object, reason: str) -> ConfigError:
        """Kafka's ``new ConfigException(name, value, message)``: the property, its value and why."""
        shown = repr(value) if isinstance(value, str) else str(value)
        return cls(f"Invalid value {shown} for configuration {name}: {reason}", name=name, value=value)


_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)
_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*")

#: A ``ConfigDef.Validator``: called with the property name and the parsed value, raises :class:`ConfigError`.
Validator = Callable[[str, Any], None]


def _type_name(value: object) -> str:
    return type(value).__name__


def parse_type(name: str, value: object, type_: str) -> object:
    """Kafka's ``ConfigDef.parseType``: a value as given to its type, or :class:`ConfigError`."""
    if value is None:
        raise ConfigError.invalid(name, value, "Value must be non-null")
    text = value.strip() if isinstance(value, str) else None
    if type_ == "BOOLEAN":
        if text is not None:
            if text.lower() == "true":
                return True
            if text.lower() == "false":
                return False
        elif isinstance(value, bool):
            return value
        raise ConfigError.invalid(name, value, "Expected value to be either true or false")
    if type_ == "STRING":
        if text is not None:
            return text
        raise ConfigError.invalid(
            name, value, f"Expected value to be a string, but it was a {_type_name(value)}"
        )
    if type_ in ("INT", "LONG"):
        if type_ == "INT":
            low, high, what = INT32_MIN, INT32_MAX, "a 32-bit integer"
        else:
            low, high, what = INT64_MIN, INT64_MAX, "a 64-bit integer (long)"
        if text is not None:
            # (the length check keeps int() away from its 4300-digit limit; zeros in front are allowed)
            digits = text.lstrip("+-").lstrip("0")
            if not _JAVA_INT.fullmatch(text) or len(digits) > 20 or not low <= int(text) <= high:
                raise ConfigError.invalid(name, value, f"Not a number of type {type_}")
            return int(text)
        if isinstance(value, int) and not isinstance(value, bool):
            if low <= value <= high:
                return int(value)
            raise ConfigError.invalid(name, value, f"Expected value to be {what}, but it is out of range")
        raise ConfigError.invalid(
            name, value, f"Expected value to be {what}, but it was a {_type_name(value)}"
        )
    if type_ == "DOUBLE":
        if text is not None:
            if not _JAVA_DOUBLE.fullmatch(text):
                raise ConfigError.invalid(name, value, f"Not a number of type {type_}")
            literal = text[:-1] if text[-1] in "fFdD" else text  # Java's optional float/double suffix
            return float(literal.replace("Infinity", "inf"))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ConfigError.invalid(
            name, value, f"Expected value to be a double, but it was a {_type_name(value)}"
        )
    if type_ == "LIST":
        if text is not None:
            return () if not text else tuple(_COMMA_WITH_WHITESPACE.split(text))
        if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
            return tuple(value)
        raise ConfigError.invalid(name, value, "Expected a comma separated list.")
    raise AssertionError(f"unknown config type {type_}")  # pragma: no cover - the table below is fixed


def at_least(minimum: int) -> Validator:
    """Kafka's ``ConfigDef.Range.atLeast``."""

    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ConfigError.invalid(name, value, f"Value must be at least {minimum}")

    return check


def between(minimum: float, maximum: float) -> Validator:
    """Kafka's ``ConfigDef.Range.between`` (inclusive), refusing NaN as well (see below)."""

    def check(name: str, value: Any) -> None:
        if isinstance(value, float) and math.isnan(value):
            raise ConfigError.invalid(name, value, f"Value must be a number between {minimum} and {maximum}")
        if value < minimum:
            raise ConfigError.invalid(name, value, f"Value must be at least {minimum}")
        if value > maximum:
            raise ConfigError.invalid(name, value, f"Value must be no more than {maximum}")

    return check


def valid_string(*choices: str) -> Validator:
    """Kafka's ``ConfigDef.ValidString.in`` (case-sensitive)."""

    def check(name: str, value: Any) -> None:
        if value not in choices:
            raise ConfigError.invalid(name, value, f"String must be one of: {', '.join(choices)}")

    return check


def valid_list(*choices: str) -> Validator:
    """Kafka's ``ConfigDef.ValidList.in``: every element one of the choices (an empty list passes)."""
    element = valid_string(*choices)

    def check(name: str, value: Any) -> None:
        for item in value:
            element(name, item)

    return check
