"""The peer-suite machinery kept alive: a dozen of kafka-python's own integration tests against ``kafkalog serve``.

``run_peer_suites.py`` is run offline on a selection of kafka-python's producer and consumer tests; it skips, saying
why, until ``make peers`` (or the script) has cached kafka-python's sdist and the tools' venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .run_peer_suites import DEFAULT_CACHE, EXIT_NOT_CACHED

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("run_peer_suites.py")

#: kafka-python's producer and consumer integration tests, each of which passes against kafkalog's broker.
SELECTION = (
    "test/integration/test_producer_integration.py::test_end_to_end[None]",
    "test/integration/test_producer_integration.py::test_end_to_end[gzip]",
    "test/integration/test_producer_integration.py::test_kafka_producer_proper_record_metadata[None]",
    "test/integration/test_producer_integration.py::test_idempotent_producer",
    "test/integration/test_producer_integration.py::test_idempotent_producer_max_in_flight[5]",
    "test/integration/test_consumer_integration.py::test_consumer",
    "test/integration/test_consumer_integration.py::test_consumer_topics",
    "test/integration/test_consumer_integration.py::test_paused",
    "test/integration/test_consumer_integration.py::test_kafka_consumer",
    "test/integration/test_consumer_integration.py::test_kafka_consumer__offset_commit_resume",
    "test/integration/test_consumer_integration.py::test_kafka_consumer_offsets_for_time",
    "test/integration/test_consumer_integration.py::test_group",
)


def test_kafka_python_selection_passes_against_kafkalog_serve(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    args = [sys.executable, str(SCRIPT), "--offline", "--suite", "kafka-python", "--json", str(summary),
            "--suite-timeout", "300", *(a for test in SELECTION for a in ("--select", test))]
    env = dict(os.environ, KAFKALOG_PEERS_CACHE=str(DEFAULT_CACHE))
    done = subprocess.run(args, capture_output=True, text=True, timeout=360, env=env)
    if done.returncode == EXIT_NOT_CACHED:
        why = " ".join(done.stdout.split("\n")[1:2]).strip()
        pytest.skip(f"not cached yet ({why}): make peers caches it")
    (report,) = json.loads(summary.read_text())
    assert report["suite"] == "kafka-python"
    assert report["status"] == "ran", done.stdout
    assert report["failures"] == [], done.stdout
    assert report["counts"] == {"passed": len(SELECTION), "failed": 0, "skipped": 0, "errors": 0}, done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
