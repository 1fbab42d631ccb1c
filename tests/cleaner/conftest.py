"""Fixtures of the cleaner tests: ``env``, Kafka's LogCleanerTest setup (see
:class:`tests.support.cleaner_utils.Env`), closed after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.cleaner_utils import Env


@pytest.fixture
def env(scratch: Path, impl: ModuleType) -> Iterator[Env]:
    environment = Env(scratch)
    try:
        yield environment
    finally:
        environment.close()
