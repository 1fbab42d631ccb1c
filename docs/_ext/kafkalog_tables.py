"""Break opportunities for the identifiers in the reference's tables.

The port map and the option tables are full of long dotted, slashed and snake_case names
(``org.apache.kafka.storage.internals.log.OffsetIndex``, ``translate_offset``, Kafka source paths).  A
browser may only wrap such a name anywhere (mid-word, which makes it unreadable) or nowhere (which makes the
column as wide as the name).  This extension's HTML translator writes a ``<wbr>`` at the boundaries of the
words a name is made of, in any text inside a table: after a ``/`` or ``_`` between two letters or digits,
after a ``.`` before a letter (not inside ``3.8.0``), and before the capital of a camelCase hump
(``validate<wbr>Non<wbr>Compressed...``), so the names wrap at their own boundaries;
``kafkalog.css`` forbids the mid-word breaks, and a table that still does not fit scrolls inside its box.
A ``<wbr>`` is not text: the name reads, searches and copies as it was.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.writers.html5 import HTML5Translator

_TAG = re.compile(r"(<[^>]*>)")
_BOUNDARY = re.compile(r"(?<=[A-Za-z0-9])(?:[/_](?=[A-Za-z0-9])|\.(?=[A-Za-z]))|(?<=[a-z])(?=[A-Z])")


def with_breaks(html: str) -> str:
    """``html`` with a ``<wbr>`` at each word boundary inside the names of its text (the markup itself is
    left alone)."""
    return "".join(part if part.startswith("<") else _BOUNDARY.sub(lambda m: m.group() + "<wbr>", part)
                   for part in _TAG.split(html))


def _in_table(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.table):
            return True
        parent = parent.parent
    return False


class BreakingTranslator(HTML5Translator):
    """Sphinx's HTML5 translator, with break opportunities in the identifiers of tables."""

    def visit_Text(self, node: nodes.Text) -> None:
        start = len(self.body)
        super().visit_Text(node)
        if _in_table(node):
            self.body[start:] = [with_breaks(part) for part in self.body[start:]]


def setup(app: Sphinx) -> dict[str, Any]:
    app.set_translator("html", BreakingTranslator)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
