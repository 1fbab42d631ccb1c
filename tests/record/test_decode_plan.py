"""How ``MemoryRecords`` splits a buffer's batches into kernel runs (``kafkalog.record.memory._decode_plan``).

Uncompressed v2 batches go to the multi-batch kernels in runs of at most a chunk's bytes (a larger batch alone),
uncompressed legacy messages too when the reader asks for legacy runs, and every other entry alone.  A fetch plans
its few batches once per fetch, so the plan's own cost is paid again by every fetch (issue 32): it makes no numpy
call per run.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

from kafkalog._common import BATCH_DTYPE, COMPRESSION_CODEC_MASK
from kafkalog.record import memory
from kafkalog.record.memory import RUN_LEGACY, RUN_V2, SINGLE

NUMPY = str(Path(np.__file__).parent)


def rows_of(entries: list[tuple[int, int, int]]) -> Any:
    """Scan rows of consecutive entries given as ``(magic, codec, size)``."""
    rows = np.zeros(len(entries), dtype=BATCH_DTYPE)
    position = 0
    for i, (magic, codec, size) in enumerate(entries):
        rows[i]["position"], rows[i]["size"] = position, size
        rows[i]["magic"], rows[i]["attributes"] = magic, codec
        position += size
    return rows


def reference_plan(rows: Any, chunk_bytes: int, legacy_runs: bool) -> list[tuple[str, list[int]]]:
    """The plan's rule, one row at a time: a row joins the run before it when both are of the same runnable kind
    and the run stays within ``chunk_bytes``."""
    plan: list[tuple[str, list[int]]] = []
    run_bytes = 0
    for i, row in enumerate(rows):
        uncompressed = int(row["attributes"]) & COMPRESSION_CODEC_MASK == 0
        kind = RUN_V2 if uncompressed and row["magic"] == 2 else \
            RUN_LEGACY if uncompressed and legacy_runs else SINGLE
        size = int(row["size"])
        if plan and kind != SINGLE and plan[-1][0] == kind and run_bytes + size <= chunk_bytes:
            plan[-1][1].append(i)
            run_bytes += size
        else:
            plan.append((kind, [i]))
            run_bytes = size
    return plan


def plan_of(rows: Any, chunk_bytes: int, legacy_runs: bool) -> list[tuple[str, list[int]]]:
    where = {int(p): i for i, p in enumerate(rows["position"])}
    return [(kind, [where[int(p)] for p in run["position"]])
            for kind, run in memory._decode_plan(rows, chunk_bytes, legacy_runs)]


@pytest.mark.parametrize("seed", range(40))
def test_plan_follows_the_rule(seed: int) -> None:
    rng = random.Random(seed)
    entries = [(rng.choice([2, 2, 2, 1, 0]), rng.choice([0, 0, 0, 1, 4]), rng.randint(61, 3000))
               for _ in range(rng.randint(1, 60))]
    if seed % 4 == 0:
        entries = [(2, 0, size) for _magic, _codec, size in entries]  # the usual case: uncompressed v2 only
    rows = rows_of(entries)
    for chunk_bytes in (1, 2_000, 10_000, 1 << 30):
        for legacy_runs in (False, True):
            assert plan_of(rows, chunk_bytes, legacy_runs) == reference_plan(rows, chunk_bytes, legacy_runs)


def test_plan_makes_no_numpy_call_per_run() -> None:
    """64 uncompressed v2 batches cut into 64 runs: the numpy functions the plan calls are a handful, whatever the
    number of runs (a ``np.searchsorted`` a run, as the plan was, is two Python frames of numpy's each)."""
    rows = rows_of([(2, 0, 1_000)] * 64)
    calls = 0

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename.startswith(NUMPY):
            calls += 1

    sys.setprofile(profile)
    try:
        plan = list(memory._decode_plan(rows, 1_500))
    finally:
        sys.setprofile(None)
    assert [len(run) for _kind, run in plan] == [1] * 64
    assert calls <= 8
