"""A pytest plugin the peer suites run with: every test's outcome, one JSON line each, as it happens.

``run_peer_suites.py`` loads it into the peers' pytest (``-p peer_results``) with ``PEER_RESULTS`` naming the file.
A line is ``{"id": nodeid, "when": "setup"|"call"|"teardown", "outcome": "passed"|"failed"|"skipped",
"message": first line of the error or the skip reason}``, written and flushed at once, so a run stopped by its
time bound still leaves every result it reached (a JUnit file is written only at the end).
"""

from __future__ import annotations

import json
import os
from typing import Any


def _first_line(report: Any) -> str:
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message).splitlines()[0] if crash.message else ""
    text = str(longrepr).strip().splitlines()
    # a setup error's text ends with its "E   ..." line; the last one names the exception
    errors = [line[1:].strip() for line in text if line.startswith("E ")]
    return errors[-1] if errors else (text[-1] if text else "")


def pytest_runtest_logreport(report: Any) -> None:
    path = os.environ.get("PEER_RESULTS")
    if not path:
        return
    if report.when == "call" or report.outcome != "passed":
        line = {"id": report.nodeid, "when": report.when, "outcome": report.outcome,
                "message": _first_line(report) if report.outcome != "passed" else ""}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
