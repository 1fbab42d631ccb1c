"""The demo workload streams (issue 18): its peak RSS does not grow with the number of records it writes.

Each count runs in a fresh interpreter, which reports its peak RSS (``ru_maxrss``) after the imports and
after ``write_workload``; ten times the records may not add more than a few MiB to the peak.  Measured at the
issue-18 head: 100,000 and 1,000,000 records both peak at 6-11 MiB over the imports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

_CHILD = """
import json, resource, sys
from kafkalog.spark.workload import write_workload
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = write_workload([sys.argv[1] + "/d1", sys.argv[1] + "/d2"], int(sys.argv[2]))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"records": result.total_records, "before_kib": before, "peak_kib": after}))
"""


def peak_growth_kib(tmp_path: Path, records: int) -> int:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / str(records)), str(records)],
                         check=True, capture_output=True, text=True, timeout=600)
    measured = json.loads(out.stdout)
    assert measured["records"] == records
    return int(measured["peak_kib"]) - int(measured["before_kib"])


def test_peak_rss_does_not_grow_with_the_records_written(tmp_path: Path) -> None:
    small = peak_growth_kib(tmp_path, 40_000)
    large = peak_growth_kib(tmp_path, 400_000)
    # the fixed part (a chunk of drawn records, a batch per partition, the log manager) is a few MiB; what
    # grows with the records (the key space is records // 20) must stay far below it
    assert large < 48 * 1024, f"writing 400,000 records raised the peak RSS by {large} KiB"
    assert large - small < 8 * 1024, f"peak RSS growth {small} KiB at 40,000 records, {large} KiB at 400,000"
