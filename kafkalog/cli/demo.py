"""``kafkalog demo``: the narrated tour of :mod:`kafkalog.demo` (``make tour``; ``make demo`` is the Spark job)."""

from __future__ import annotations

import argparse
from typing import Any

from .. import demo
from .console import Console

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="a narrated tour: append, roll, read, retention, compaction, crash and recovery, dump",
        description=demo.__doc__.splitlines()[0] if demo.__doc__ else None)
    parser.add_argument("--dir", help="work in this directory (kept afterwards) instead of a temporary one")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace, console: Console) -> int:
    return demo.run(args.dir, console.out)
