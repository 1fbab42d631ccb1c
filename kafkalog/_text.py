"""How kafkalog's messages count things: ``1 segment``, ``2 segments`` (one rule for the command line, the demo
and the tools' findings)."""

from __future__ import annotations

__all__ = ["counted", "is_or_are"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun in the number English wants: ``1 segment``, ``2 segments``, ``0 segments``;
    ``plural`` for a noun not made plural by an ``s`` (``counted(n, "batch", "batches")``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def is_or_are(n: int) -> str:
    """The verb that agrees with a count of ``n`` said apart from it (``2 bytes at position 9 are ...``)."""
    return "is" if n == 1 else "are"
