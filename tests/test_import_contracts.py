"""The package's shape holds itself (issue 31): ``make lint`` runs import-linter over ``pyproject.toml``'s
``[tool.importlinter]`` contracts, and these tests show the contracts hold on the tree and break when the tree
breaks them.

kafkalog's own rules, no Kafka test.  The layers run one way (kernels, record formats, a segment's files, the
log, the cleaner and the manager, the readers and tools, the CLI and Spark); no two modules of any package import
each other, round any ring; PySpark is imported by the Spark wing and the benchmarks alone.  Every import counts,
one under ``TYPE_CHECKING`` or inside a function too: either hides a ring rather than removing it.

Each test lints a copy of the package's sources (import-linter reads the source, so no copy is imported), with
one import added on purpose where a test says so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalog

ROOT = Path(kafkalog.__file__).parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

#: The contracts' names, as pyproject.toml gives them.
LAYERS = "Layers run one way, kernels up to the CLI and Spark"
ACYCLIC = "No import circles in any package"
WINGS = "PySpark only in the Spark wing and the benchmarks"

pytestmark = pytest.mark.skipif(not (ROOT / "pyproject.toml").is_file(),
                                reason="kafkalog is installed without its source tree (no pyproject.toml)")


def _tree(tmp_path: Path) -> Path:
    """A copy of the package's Python sources and of the project file that holds the contracts."""
    shutil.copytree(ROOT / "kafkalog", tmp_path / "kafkalog",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c", "*.json", "*.html"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _add_import(tree: Path, module: str, line: str) -> None:
    """``line`` put at the end of ``module`` (a path under the tree) inside a function, the place a hidden
    import would take."""
    path = tree / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _added_on_purpose() -> None:\n    {line}\n",
                    encoding="utf-8")


def _lint(tree: Path) -> tuple[int, str]:
    assert LINT_IMPORTS.is_file(), f"{LINT_IMPORTS} is missing: install kafkalog's dev extra (make build)"
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", "pyproject.toml"], cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stdout + done.stderr


def _verdicts(output: str) -> dict[str, str]:
    """Each contract's KEPT or BROKEN, by its name, from lint-imports' summary lines."""
    found = {}
    for line in output.splitlines():
        for name in (LAYERS, ACYCLIC, WINGS):
            for verdict in ("KEPT", "BROKEN"):
                if line.startswith(f"{name} {verdict}"):
                    found[name] = verdict
    return found




def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    code, output = _lint(_tree(tmp_path))
    assert code == 0, output
    assert _verdicts(output) == {LAYERS: "KEPT", ACYCLIC: "KEPT", WINGS: "KEPT"}, output


def test_a_circle_added_on_purpose_fails(tmp_path: Path) -> None:
    """A ring inside the log package, which the layers between packages cannot see: the retention module,
    which ``Log`` imports, imports ``Log`` back inside a function.  The no-circle contract names the pair."""
    tree = _tree(tmp_path)
    _add_import(tree, "kafkalog/log/retention.py", "from .unified_log import Log  # noqa: F401")
    code, output = _lint(tree)
    assert code == 1, output
    assert _verdicts(output) == {LAYERS: "KEPT", ACYCLIC: "BROKEN", WINGS: "KEPT"}, output
    assert "No cycles are allowed in kafkalog.log." in output
    assert ".retention -> .unified_log" in output or ".unified_log -> .retention" in output


def test_a_circle_hidden_under_type_checking_fails(tmp_path: Path) -> None:
    """The same ring through an import only a type checker runs."""
    tree = _tree(tmp_path)
    path = tree / "kafkalog/log/retention.py"
    path.write_text(path.read_text(encoding="utf-8")
                    + "\n\nimport typing\n\nif typing.TYPE_CHECKING:\n    from .unified_log import Log  # noqa: F401\n",
                    encoding="utf-8")
    code, output = _lint(tree)
    assert code == 1, output
    assert _verdicts(output)[ACYCLIC] == "BROKEN", output


def test_an_import_reaching_up_a_layer_fails(tmp_path: Path) -> None:
    """The record formats reaching up into the CLI: a layer broken, and a ring between packages with it."""
    tree = _tree(tmp_path)
    _add_import(tree, "kafkalog/record/types.py", "from ..cli import main  # noqa: F401")
    code, output = _lint(tree)
    assert code == 1, output
    assert _verdicts(output) == {LAYERS: "BROKEN", ACYCLIC: "BROKEN", WINGS: "KEPT"}, output
    assert "kafkalog.record is not allowed to import kafkalog.cli" in output


def test_pyspark_below_the_spark_wing_fails(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    _add_import(tree, "kafkalog/log/reads.py", "import pyspark  # noqa: F401")
    code, output = _lint(tree)
    assert code == 1, output
    assert _verdicts(output) == {LAYERS: "KEPT", ACYCLIC: "KEPT", WINGS: "BROKEN"}, output
    assert "kafkalog.log.reads -> pyspark" in output


def test_a_new_root_module_must_be_given_a_layer(tmp_path: Path) -> None:
    """The layers contract is exhaustive: a module added at the package root, importing nothing, fails until the
    contract places it."""
    tree = _tree(tmp_path)
    (tree / "kafkalog/unplaced.py").write_text('"""A module no layer names."""\n', encoding="utf-8")
    code, output = _lint(tree)
    assert code == 1, output
    assert _verdicts(output)[LAYERS] == "BROKEN", output
    assert "unplaced" in output
