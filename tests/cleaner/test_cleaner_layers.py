"""The cleaner's place among kafkalog's layers (issue 31): it stands above the log and below the tools.

kafkalog's own rule, no Kafka test: the imports run one way, kernels -> record formats -> segment files ->
the log -> the cleaner and the manager -> tools -> CLI and Spark.  Every import counts, those under
``TYPE_CHECKING`` and those inside a function too (either hides a ring rather than removing it), so the
imports are read from the source with :mod:`ast`, not from what an import happens to load.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import kafkalog

PACKAGE_DIR = Path(kafkalog.__file__).parent
CLEANER = "kafkalog.cleaner"

#: The modules that may import the cleaner: the package root's lazy names, the LogManager that owns a
#: cleaner, and the wings built on top (tools, CLI, Spark, the benchmarks).
ABOVE_THE_CLEANER = ("kafkalog", "kafkalog.manager")
WINGS_ABOVE_THE_CLEANER = ("kafkalog.tools.", "kafkalog.cli.", "kafkalog.spark.", "kafkalog.bench.")



def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """Every kafkalog module ``name`` imports, wherever in the file the import statement is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target in known:
                yield target
            # ``from package import module`` imports the module.
            yield from (f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: set(_imports(name, path, known)) for name, path in modules.items()}


def _ring(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_cleaner_modules_import_one_way() -> None:
    """No ring among the cleaner's modules: the filter is handed its Cleaner (``RecordDecisions``) and reads the
    round from :mod:`kafkalog.cleaner.cleaning_round`, so it imports neither the Cleaner nor its module.  (A
    package's import of its own modules, the re-exports, is no edge of a ring.)"""
    graph = {name: {imported for imported in imports
                    if imported.startswith(CLEANER + ".") and not imported.startswith(name + ".")}
             for name, imports in _graph().items() if name == CLEANER or name.startswith(CLEANER + ".")}
    assert len(graph) > 5  # the package was read
    assert _ring(graph) is None


def test_nothing_below_the_cleaner_imports_it() -> None:
    """Only the layers above the cleaner import it: the log, its segments and the record formats do not (so
    ``Log`` has no ``compact``; :func:`kafkalog.cleaner.compact` compacts a log)."""
    importers = sorted(name for name, imports in _graph().items()
                       if not (name == CLEANER or name.startswith(CLEANER + "."))
                       and any(i == CLEANER or i.startswith(CLEANER + ".") for i in imports))
    assert "kafkalog.manager" in importers  # the reading sees the imports that are allowed
    below = [name for name in importers
             if name not in ABOVE_THE_CLEANER and not name.startswith(WINGS_ABOVE_THE_CLEANER)]
    assert below == []
