"""Which kernel twin is live, and the switches that choose it (``kafkalog/_impl.py``).

Each case runs a fresh interpreter, because the choice is made once, at import.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from enum import IntEnum
from pathlib import Path

import pytest

import kafkalog
from kafkalog import _impl, implementation
from kafkalog._common import IndexKind, RecordFate

REQUIRE_EXTENSION = os.environ.get("KAFKALOG_REQUIRE_EXTENSION", "") not in ("", "0")


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALOG_")}
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True,
                          text=True, timeout=60, check=False)


def test_compiled_core_is_live_when_required() -> None:
    """CI sets KAFKALOG_REQUIRE_EXTENSION: then the compiled twin must be what runs."""
    if not REQUIRE_EXTENSION:
        pytest.skip("KAFKALOG_REQUIRE_EXTENSION is not set")
    assert implementation() == "cython"
    assert _impl.USING_CYTHON
    assert set(_impl.both()) == {"python", "cython"}


def test_default_prefers_the_compiled_twin_when_built() -> None:
    result = _run("import kafkalog; print(kafkalog.implementation())")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("cython" if "cython" in _impl.both() else "python")


def test_pure_python_switch() -> None:
    result = _run("import kafkalog; print(kafkalog.implementation())", KAFKALOG_PURE_PYTHON="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "python"


def test_missing_build_falls_back_quietly_without_the_requirement() -> None:
    # A None entry in sys.modules makes `from . import _core` fail as a missing build would.
    code = ("import sys; sys.modules['kafkalog._core'] = None; import kafkalog; "
            "print(kafkalog.implementation())")
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "python"


def test_missing_build_is_an_error_when_required() -> None:
    code = "import sys; sys.modules['kafkalog._core'] = None; import kafkalog"
    result = _run(code, KAFKALOG_REQUIRE_EXTENSION="1")
    assert result.returncode != 0
    assert "ImportError: KAFKALOG_REQUIRE_EXTENSION is set but kafkalog's compiled core" in result.stderr


def test_using_switches_and_restores() -> None:
    before = implementation()
    with _impl.using("python") as core:
        assert core.IMPLEMENTATION == "python" and implementation() == "python"
    assert implementation() == before
    with pytest.raises(ImportError, match="not available"), _impl.using("fortran"):
        pass


def _cdef_enum(pxi: str, prefix: str) -> dict[str, int]:
    """The ``NAME = value`` members of ``_core_pyx/<pxi>`` whose names start with ``prefix``, prefix dropped."""
    text = (Path(kafkalog.__file__).parent / "_core_pyx" / pxi).read_text()
    return {m[1]: int(m[2]) for m in re.finditer(rf"^\s+{prefix}([A-Z_]+) = (-?\d+)", text, re.MULTILINE)}


@pytest.mark.parametrize(("pxi", "prefix", "enum"), [
    ("index.pxi", "INDEX_", IndexKind),
    ("offset_map.pxi", "FATE_", RecordFate),
])
def test_compiled_enums_match_common(pxi: str, prefix: str, enum: type[IntEnum]) -> None:
    """The compiled kernels use the int values of the IntEnums of ``_common.py`` as a ``cdef enum``; both must
    name the same members with the same values, or the twins would read each other's results wrong."""
    assert _cdef_enum(pxi, prefix) == {member.name: member.value for member in enum}
