"""The scenario generator (``tests/oracle/generator.py``): the same scenario for the same seed, valid scenarios
only, and, over a few dozen seeds, every op, codec, magic, origin and profile the issue asks to cover."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.oracle.generator import PROFILES, generate
from tests.oracle.scenario import OP_FIELDS, parse_scenario


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_a_seed_gives_one_scenario(kafka: str) -> None:
    assert generate(11, kafka).dumps() == generate(11, kafka).dumps()
    assert generate(11, kafka).dumps() != generate(12, kafka).dumps()
    assert len(generate(3, kafka, ops=7).ops) == 7
    assert generate(3, kafka, profile="compaction").config["cleanup.policy"].startswith("compact")


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_generated_scenarios_are_valid_and_canonical(kafka: str) -> None:
    for seed in range(40):
        scenario = generate(seed, kafka)
        again = parse_scenario(json.loads(scenario.dumps()))
        assert again.ops == scenario.ops
        assert 15 <= len(scenario.ops) <= 45


def test_the_issues_list_is_covered() -> None:
    ops: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for kafka in ("3.9", "4"):
        for seed in range(42):
            scenario = generate(seed, kafka)
            seen[f"profile {scenario.description.split('profile ')[1]}"] += 1
            for name, value in scenario.config.items():
                seen[f"config {name}"] += 1
                if name == "message.timestamp.type":
                    seen[f"timestamp {value}"] += 1
            for op in scenario.ops:
                ops[op["op"]] += 1
                if op["op"] == "append":
                    seen[f"codec {op['compression']}"] += 1
                    seen[f"magic {op['magic']} on {kafka}"] += 1
                    seen[f"origin {op['origin']}"] += 1
                    records = op["records"]
                    seen["null key"] += any(r["key"] is None for r in records)
                    seen["null value"] += any(r["value"] is None for r in records)
                    seen["headers"] += any(r["headers"] for r in records)
                    if op["producer"] is not None:
                        seen["transactional" if op["producer"]["transactional"] else "idempotent"] += 1
                elif op["op"] == "marker":
                    seen[f"marker {op['type']}"] += 1
                elif op["op"] == "reopen":
                    seen["clean reopen" if op["clean_shutdown"] else "unclean reopen"] += 1
                    seen["torn tail"] += op["truncate_bytes"] > 0
                    seen["corrupted tail"] += op["corrupt_byte"] > 0
    assert set(ops) == set(OP_FIELDS)
    wanted = [f"profile {p}" for p in PROFILES] + [f"codec {c}" for c in ("none", "gzip", "snappy", "lz4", "zstd")] + [
        "magic 0 on 3.9", "magic 1 on 3.9", "magic 2 on 3.9", "magic 2 on 4", "origin client", "origin replication",
        "null key", "null value", "headers", "transactional", "idempotent", "marker commit", "marker abort",
        "clean reopen", "unclean reopen", "torn tail", "corrupted tail", "timestamp LogAppendTime",
        "config segment.bytes", "config segment.ms", "config segment.index.bytes", "config retention.bytes",
        "config retention.ms", "config cleanup.policy", "config delete.retention.ms", "config message.format.version",
        "config compression.type", "config min.compaction.lag.ms", "config producer.id.expiration.ms"]
    missing = [w for w in wanted if not seen[w]]
    assert not missing
    assert not seen["magic 0 on 4"] and not seen["magic 1 on 4"]
