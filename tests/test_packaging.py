"""The package as pip builds and installs it: a wheel built where no C compiler works installs and runs on
the plain-Python kernels, with a warning saying how to get the compiled ones (unless
``KAFKALOG_REQUIRE_EXTENSION=1``, which CI sets: then the build fails); and the installed package carries its
benchmark suite, so ``kafkalog bench`` runs outside the source tree.

The builds run offline: ``pip wheel --no-build-isolation --no-index`` on a copy of the source tree (so no
``build/`` left over from the editable install can stand in for a compile), with this interpreter's
setuptools and Cython (the ``dev`` extra brings versions new enough).  ``CC=/bin/false`` is the compiler
that is there but fails; the generated ``_core.c`` is copied along when it exists, so Cython need not run
again.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest

import kafkalog

ROOT = Path(kafkalog.__file__).resolve().parent.parent
WARNING = "WARNING: kafkalog's compiled core (kafkalog._core) could not be built"

pytestmark = pytest.mark.slow


def _can_build() -> str | None:
    """Why this interpreter cannot build kafkalog without build isolation, or None when it can."""
    if not (ROOT / "setup.py").is_file():
        return "not a source checkout"
    try:
        major = int(metadata.version("setuptools").split(".")[0])
    except metadata.PackageNotFoundError:
        return "setuptools is not installed"
    if major < 77:
        return "setuptools older than 77 (pyproject.toml's build requirement; the dev extra installs it)"
    try:
        metadata.version("Cython")
    except metadata.PackageNotFoundError:
        return "Cython is not installed"
    return None


def _environment(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALOG_REQUIRE_EXTENSION", "KAFKALOG_PURE_PYTHON",
                                                             "PYTHONPATH")}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _source_copy(target: Path) -> Path:
    """The files pip builds from, without the compiled extension or any build output."""
    target.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "NOTICE"):
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(ROOT / "kafkalog", target / "kafkalog",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "*.html", "report"))
    return target


def _build_wheel(source: Path, out: Path, **env: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-v", "-w", str(out), str(source)],
                          capture_output=True, text=True, env=_environment(CC="/bin/false", **env), timeout=600)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """kafkalog built with a failing compiler into a wheel and installed (``pip install --target``): the
    target dir, and the build's output."""
    reason = _can_build()
    if reason:
        pytest.skip(f"cannot build a wheel here: {reason}")
    root = tmp_path_factory.mktemp("packaging")
    source = _source_copy(root / "src")
    built = _build_wheel(source, root / "dist")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (root / "dist").glob("kafkalog-*.whl")
    target = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target),
                           str(wheel)], capture_output=True, text=True, env=_environment(), timeout=300)
    assert done.returncode == 0, done.stderr
    _interpreter_without_this_checkout(root / "venv")
    return target, built.stdout + built.stderr


def _run_installed(target: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` that imports kafkalog from ``target`` (the installed copy), run from ``cwd``."""
    return subprocess.run([str(target.parent / "venv" / "bin" / "python"), *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env=_environment(PYTHONPATH=str(target)))


def _interpreter_without_this_checkout(env_dir: Path) -> None:
    """A venv whose Python sees this interpreter's packages (numpy, pytest, ...) but not the editable install
    of the checkout: its import hook would otherwise hand out the checkout's compiled ``kafkalog._core``.

    The packages come through a ``.pth`` line naming this interpreter's site-packages; the ``.pth`` files
    there (the editable install's hook among them) are not run, since only a site dir's own are."""
    venv.create(env_dir, with_pip=False, symlinks=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (env_dir / "lib" / version / "site-packages" / "dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n")


def test_without_a_compiler_the_install_succeeds_on_the_plain_kernels(installed: tuple[Path, str],
                                                                      tmp_path: Path) -> None:
    target, log = installed
    assert WARNING in log
    assert log.count(WARNING) == 1
    assert "runs on its plain-Python kernels" in log and "To get the compiled core, install a C" in log
    assert "KAFKALOG_REQUIRE_EXTENSION=1" in log
    assert not list((target / "kafkalog").glob("_core*.so"))
    done = _run_installed(target, tmp_path, "-c",
                          "import kafkalog; print(kafkalog.__file__); print(kafkalog.implementation())")
    assert done.returncode == 0, done.stderr
    where, implementation = done.stdout.split()
    assert Path(where).is_relative_to(target) and implementation == "python"
    # It works, not only imports: a log written through the library, then checked by the command line.
    write = ("import sys\n"
             "from kafkalog import LogManager, MemoryRecords, TopicPartition\n"
             "with LogManager(sys.argv[1]) as manager:\n"
             "    log = manager.create_log(TopicPartition('events', 0))\n"
             "    log.append(MemoryRecords.with_records([(b'k', b'v%d' % i, 1_700_000_000_000) for i in range(50)]))\n")
    done = _run_installed(target, tmp_path, "-c", write, str(tmp_path / "logs"))
    assert done.returncode == 0, done.stderr
    done = _run_installed(target, tmp_path, "-m", "kafkalog", "stats", "--json", str(tmp_path / "logs"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 50


def test_with_require_extension_a_failed_compile_fails_the_build(tmp_path: Path) -> None:
    reason = _can_build()
    if reason:
        pytest.skip(f"cannot build a wheel here: {reason}")
    built = _build_wheel(_source_copy(tmp_path / "src"), tmp_path / "dist", KAFKALOG_REQUIRE_EXTENSION="1")
    assert built.returncode != 0
    assert WARNING not in built.stdout + built.stderr
    assert "/bin/false" in built.stdout + built.stderr  # the compiler's failure is what the user sees
    assert not list((tmp_path / "dist").glob("*.whl"))


def test_the_installed_package_runs_its_benchmarks_outside_the_source_tree(installed: tuple[Path, str],
                                                                          tmp_path: Path) -> None:
    target, _log = installed
    for name in ("__init__.py", "conftest.py", "pytest.ini", "README.md", "test_bench_crc.py"):
        assert (target / "kafkalog" / "bench" / name).is_file(), name
    work = tmp_path / "elsewhere"
    work.mkdir()
    done = _run_installed(target, work, "-m", "kafkalog", "bench", "--quick", "-k", "crc")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert f"pytest {target / 'kafkalog' / 'bench'} " in done.stderr  # the installed suite ran, not the checkout's
    report = work / "bench-report"
    run = json.loads((report / "run.json").read_text())
    keys = {b["extra_info"]["key"] for b in run["benchmarks"]}
    assert {"crc32c/python", "crc32/zlib"} <= keys  # no compiled core in this install: its rows were skipped
    assert run["kafkalog_machine"]["kernels"] == "python"
    assert f"every one in {Path('bench-report') / 'report.md'}" in done.stdout
    assert "### crc32c 1 MiB" in (report / "report.md").read_text()


def test_the_wheel_ships_the_suite_and_not_the_generated_c(installed: tuple[Path, str]) -> None:
    """The installed RECORD (the wheel's manifest) lists the suite and its pytest.ini, the data files, and no
    generated C."""
    target, _log = installed
    (record,) = target.glob("kafkalog-*.dist-info/RECORD")
    files = {line.split(",")[0] for line in record.read_text().splitlines()}
    assert "kafkalog/bench/conftest.py" in files and "kafkalog/bench/pytest.ini" in files
    assert "kafkalog/bench/jvm/KafkaLogBench.java" in files  # the Kafka side of the rows beside Kafka
    # and the data files the code reads at run time: dump's decoders' schemas, the Spark driver's log4j
    assert "kafkalog/messages/schemas/TopicRecord.json" in files
    assert "kafkalog/messages/schemas/OffsetCommitValue.json" in files
    assert "kafkalog/spark/log4j2.properties" in files
    assert not [f for f in files if f.endswith((".c", ".html"))]


def test_an_editable_install_imports_the_package_beside_a_clone_named_kafkalog(tmp_path: Path) -> None:
    """``make``'s install (editable) run from the folder that holds a clone named ``kafkalog``: ``python -m
    kafkalog`` must find the package, not the clone as a namespace package (which setuptools' import finder, run
    after the path's, would let win), and the install says nothing about it.  Built with a compiler that fails,
    which an editable install must survive too (it copies only what was built into the checkout)."""
    reason = _can_build()
    if reason:
        pytest.skip(f"cannot build here: {reason}")
    parent = tmp_path / "work"
    parent.mkdir()
    clone = _source_copy(parent / "kafkalog")
    python = tmp_path / "venv" / "bin" / "python"
    _interpreter_without_this_checkout(tmp_path / "venv")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                           "--no-build-isolation", "--no-index", "-e", str(clone)],
                          capture_output=True, text=True, env=_environment(CC="/bin/false"), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "BuildBackendWarning" not in done.stdout + done.stderr
    assert not list((clone / "kafkalog").glob("_core*.so"))
    for cwd in (parent, clone, tmp_path):
        run = subprocess.run([str(python), "-m", "kafkalog", "--version"], capture_output=True, text=True, cwd=cwd,
                             env=_environment(), timeout=120)
        assert run.returncode == 0, f"from {cwd}: {run.stderr[-2000:]}"
        assert run.stdout.split() == ["kafkalog", kafkalog.__version__]
        where = subprocess.run([str(python), "-c", "import kafkalog; print(kafkalog.__file__)"], capture_output=True,
                               text=True, cwd=cwd, env=_environment(), timeout=120)
        assert Path(where.stdout.strip()) == clone / "kafkalog" / "__init__.py", where.stderr
