"""The ``kafkalog-layers`` directive: the package's layers, as the import contract ``make lint`` checks them.

Read from ``pyproject.toml``'s ``[tool.importlinter]`` layers contract, so the page shows the rule the build
enforces and cannot drift from it: one row per layer, the top layer first; a layer imports only the layers
below it.  Modules beside each other in a layer either may import each other (``:`` in the contract, one
cell) or may not (``|``, a cell each).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

PYPROJECT = Path(__file__).resolve().parent.parent.parent / "pyproject.toml"


def layers() -> tuple[str, list[str]]:
    """The layers contract's container and its layers, the top one first."""
    with open(PYPROJECT, "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "layers"]
    (container,) = contract["containers"]
    return container, contract["layers"]


def _modules(container: str, layer: str) -> str:
    if "|" in layer:
        return "; ".join(_modules(container, part) for part in layer.split("|"))
    names = [name.strip() for name in layer.split(":")]
    return ", ".join(f"``{container}.{name}``" for name in names)


def render() -> list[str]:
    container, found = layers()
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 8 92", "",
             "   * - layer", "     - modules and packages (``;`` between those that may not import each other)"]
    for number, layer in enumerate(found):
        lines += [f"   * - {len(found) - number}", f"     - {_modules(container, layer)}"]
    return lines


class LayersDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(PYPROJECT))
        container = nodes.section()
        self.state.nested_parse(StringList(render(), source=str(PYPROJECT)), self.content_offset, container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kafkalog-layers", LayersDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
