"""The ``kafkalog-port-map`` directive: ``port_map.toml`` as one table per Kafka class.

Each table row is a Kafka method (0.10.1.1 name, and the 3.8.0 name where it moved), the kafkalog
object that ports it (a cross-reference into the API reference) and the compiled kernel of ``_core``
that runs its hot loop.  ``tests/test_docs.py`` checks that every target exists, so the table cannot
drift from the code.

Options: ``:summary:`` renders only the class overview (one row per class).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

PORT_MAP = Path(__file__).resolve().parent.parent / "port_map.toml"


def load() -> list[dict[str, Any]]:
    """The classes of ``port_map.toml``, each with its ``method`` list."""
    with open(PORT_MAP, "rb") as f:
        classes: list[dict[str, Any]] = tomllib.load(f)["class"]
    return classes


def _cell(text: str) -> str:
    # A list-table cell is one line of RST here; a pipe or a newline would break the row.
    return " ".join(text.split()) if text else ""


def _code(text: str) -> str:
    return f"``{text}``" if text else ""


def _ref(path: str, short: bool = True) -> str:
    return f":py:obj:`{'~' if short else ''}{path}`" if path else ""


def _kernel(name: str) -> str:
    return f":py:func:`~kafkalog._core.{name}`" if name else ""


def render(classes: list[dict[str, Any]], summary: bool) -> list[str]:
    lines: list[str] = []
    if summary:
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 18 30 30 22", "",
                  "   * - Kafka 0.10.1 class", "     - file (0.10.1.1)", "     - kafkalog", "     - 3.8.0"]
        for cls in classes:
            where = cls["file"] if "version" not in cls else f"{cls['file']} ({cls['version']})"
            lines += [f"   * - {_code(cls['kafka'])}", f"     - {_code(where)}",
                      f"     - {_ref(cls['kafkalog'], short=False)}", f"     - {_cell(cls.get('modern', ''))}"]
        return lines
    for cls in classes:
        title = f"{cls['kafka']}"
        lines += [title, "~" * len(title), "", _cell(cls.get("summary", "")), "",
                  f"Kafka: ``{cls['file']}`` ({cls.get('version', '0.10.1.1')})"
                  + (f"; 3.8.0: {_cell(cls['modern'])}" if cls.get("modern") else "")
                  + f".  kafkalog: {_ref(cls['kafkalog'], short=False)}.", ""]
        methods = cls.get("method", [])
        if not methods:
            continue
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 19 19 21 14 27", "",
                  "   * - Kafka method", "     - 3.8.0", "     - kafkalog", "     - kernel", "     - note"]
        for m in methods:
            lines += [f"   * - {_code(m['kafka'])}", f"     - {_code(m.get('modern', ''))}",
                      f"     - {_ref(m['kafkalog'])}", f"     - {_kernel(m.get('kernel', ''))}",
                      f"     - {_cell(m.get('note', ''))}"]
        lines.append("")
    return lines


class PortMapDirective(SphinxDirective):
    has_content = False
    option_spec: ClassVar[dict[str, Any]] = {"summary": directives.flag}

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(PORT_MAP))
        container = nodes.section()
        lines = render(load(), "summary" in self.options)
        # With titles: each class is a subsection of the section the directive sits in.
        nested_parse_with_titles(self.state, StringList(lines, source=str(PORT_MAP)), container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kafkalog-port-map", PortMapDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
