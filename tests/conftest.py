"""Shared fixtures: the ``impl`` fixture that runs a test once per kernel twin, in one process.

A test that touches a kernel, directly or through the record layer, asks for ``impl``: it then runs
as ``[python]`` and ``[cython]``, with that twin live (``kafkalog._impl.using``) and the twin's module
as the fixture value.  ``--no-cython`` drops the compiled runs; with ``KAFKALOG_REQUIRE_EXTENSION=1``
(CI) a missing compiled twin is an error, not a skip.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import tempfile
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from kafkalog import _impl
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaStorageError
from kafkalog.log import Log
from kafkalog.scheduler import MockTime
from tests.support.golden_data import GOLDEN
from tests.support.log_test_utils import LogFactory

#: pytester drives the broker fixtures (kafkalog.pytest_plugin) as another project's test run would.
pytest_plugins = ["pytester"]

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


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The test session's one Spark session, ``local[2]``, with the ``kafkalog`` data source registered
    (skips when the ``spark`` extra is not installed)."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    from kafkalog.spark import session

    # session() starts it quiet (kafkalog.spark.quiet): Spark's log at ERROR, no progress bars.
    spark = session("local[2]", "kafkalog-tests", spark_sql_shuffle_partitions=2)
    yield spark
    spark.stop()


@pytest.fixture
def mock_time() -> MockTime:
    return MockTime()


@pytest.fixture
def scratch(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A scratch directory on tmpfs (``/dev/shm``) when there is one, else ``tmp_path``: rolls, closes and
    swaps fsync and msync, which on a disk cost milliseconds each and would make the log tests slow."""
    shm = pathlib.Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    directory = pathlib.Path(tempfile.mkdtemp(prefix="kafkalog-test-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def log_dir(scratch: pathlib.Path) -> pathlib.Path:
    return scratch / "topic-0"


@pytest.fixture
def create_log(log_dir: pathlib.Path, mock_time: MockTime, impl: ModuleType) -> Iterator[LogFactory]:
    """Kafka's ``createLog(dir, config, logStartOffset = 0, recoveryPoint = 0, lastShutdownClean = true)``
    with the mock clock and scheduler, under the ``impl`` twin; every log made is closed after the test
    and the tasks still queued (deferred deletions) are run, so no file stays open."""
    made: list[Log] = []

    def create(log_config: LogConfig | None = None, directory: pathlib.Path | None = None,
               **kwargs: Any) -> Log:
        kwargs.setdefault("had_clean_shutdown", True)
        log = Log(directory if directory is not None else log_dir, log_config if log_config is not None
                  else LogConfig(), scheduler=mock_time.scheduler, time=mock_time, **kwargs)
        made.append(log)
        return log

    yield create
    for log in made:
        # As Kafka's tearDown (closeQuietly): a log whose files a test released or deleted refuses to close.
        with contextlib.suppress(KafkaStorageError):
            log.close()
    mock_time.scheduler.shutdown()
