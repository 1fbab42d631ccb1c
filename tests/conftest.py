"""Shared fixtures: the ``impl`` fixture that runs a test once per kernel twin, in one process.

A test that touches a kernel, directly or through the record layer, asks for ``impl``: it then runs
as ``[python]`` and ``[cython]``, with that twin live (``kafkalog._impl.using``) and the twin's module
as the fixture value.  ``--no-cython`` drops the compiled runs; with ``KAFKALOG_REQUIRE_EXTENSION=1``
(CI) a missing compiled twin is an error, not a skip.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from types import ModuleType

import pytest

from kafkalog import _impl

GOLDEN = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "golden"
REQUIRE_EXTENSION = os.environ.get("KAFKALOG_REQUIRE_EXTENSION", "") not in ("", "0")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-cython", action="store_true", help="run only the plain-Python twin")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "impl" in metafunc.fixturenames:
        names = ["python"]
        if not metafunc.config.getoption("--no-cython"):
            names.append("cython")
        metafunc.parametrize("impl", names, indirect=True)


@pytest.fixture
def impl(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    name = request.param
    if name == "cython" and "cython" not in _impl.both():
        if REQUIRE_EXTENSION:
            pytest.fail("KAFKALOG_REQUIRE_EXTENSION is set but kafkalog._core did not build or load")
        pytest.skip("kafkalog._core is not built")
    with _impl.using(name) as core:
        yield core


@pytest.fixture(scope="session")
def golden() -> pathlib.Path:
    """The read-only folder of broker-written logs (``../shared/golden``)."""
    if not GOLDEN.is_dir():
        pytest.skip(f"golden data not found at {GOLDEN}")
    return GOLDEN
