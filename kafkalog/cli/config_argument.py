"""``--config KEY=VALUE``: the topic configs of the commands that open a log to change it."""

from __future__ import annotations

import argparse

from ..config import LogConfig

__all__ = ["add_config_argument", "log_config_from"]


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config (Kafka's name, e.g. max.message.bytes=2097152); repeatable")


def log_config_from(pairs: list[str], defaults: dict[str, str] | None = None) -> LogConfig:
    """A :class:`LogConfig` from ``--config KEY=VALUE`` arguments over ``defaults``."""
    props = dict(defaults or {})
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"--config wants KEY=VALUE, got {pair!r}")
        props[key.strip()] = value.strip()
    return LogConfig(props)
