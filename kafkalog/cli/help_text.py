"""The ``--help`` description of a command, from its module docstring: the first paragraph in plain text.

Module docstrings are reStructuredText, written for the API docs: literals in double backquotes, cross
references (a role such as ``:mod:`` or ``:func:`` before a backquoted target), emphasis and strong emphasis in
one or two asterisks.  A terminal shows markup as it is, so :func:`description` drops it: a literal keeps its
text, a role keeps what Sphinx shows (its title when it has one, ``title <target>``; the last name of a target
written with ``~``; else the target), emphasis keeps its words.

Only the first paragraph is kept, its lines joined: argparse reflows a description to the terminal's width.
"""

from __future__ import annotations

import re

__all__ = ["description", "plain_text"]

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`([^`]*)`")
_LITERAL = re.compile(r"``(.+?)``")
_INTERPRETED = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_TITLED_TARGET = re.compile(r"^(.*?)\s*<[^<>]+>$", re.DOTALL)


def _role_text(match: re.Match[str]) -> str:
    text = match.group(1)
    titled = _TITLED_TARGET.match(text)
    if titled is not None and titled.group(1):
        return titled.group(1)
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text.lstrip("!")


def plain_text(rst: str) -> str:
    """``rst`` with its inline markup dropped (the roles, literals and emphasis a docstring uses)."""
    text = _ROLE.sub(_role_text, rst)
    text = _LITERAL.sub(r"\1", text)
    text = _INTERPRETED.sub(r"\1", text)
    text = _STRONG.sub(r"\1", text)
    return _EMPHASIS.sub(r"\1", text)


def description(docstring: str | None) -> str | None:
    """The first paragraph of ``docstring`` as one line of plain text (``None`` when there is no docstring,
    as under ``python -OO``)."""
    if not docstring:
        return None
    paragraph = docstring.strip().split("\n\n", 1)[0]
    return plain_text(" ".join(line.strip() for line in paragraph.splitlines()))
