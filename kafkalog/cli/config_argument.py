"""``--config KEY=VALUE``: the topic configs of the commands that open a log to change it."""

from __future__ import annotations

import argparse

from ..config.config_def import ConfigError
from ..config.log_config import LogConfig

__all__ = ["add_config_argument", "config_pairs", "log_config_from"]

_HELP = "a topic config (Kafka's name, e.g. max.message.bytes=2097152); repeatable"


def add_config_argument(parser: argparse.ArgumentParser, help: str = _HELP) -> None:
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help=help)


def config_pairs(pairs: list[str]) -> dict[str, str]:
    """The properties of ``--config KEY=VALUE`` arguments, the last of a key winning (not yet checked).

    Raises:
        ConfigError: an argument that is not ``KEY=VALUE``.
    """
    props: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config wants KEY=VALUE, got {pair!r}")
        props[key.strip()] = value.strip()
    return props


def log_config_from(pairs: list[str], defaults: dict[str, str] | None = None) -> LogConfig:
    """A :class:`LogConfig` from ``--config KEY=VALUE`` arguments over ``defaults``."""
    return LogConfig({**(defaults or {}), **config_pairs(pairs)})
