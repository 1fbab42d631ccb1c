"""Generated oracle scenarios: a seeded generator of configurations and op sequences.

``generate(seed, kafka)`` returns the same :class:`~tests.oracle.scenario.Scenario` for the same arguments, on
any machine (``random.Random(seed)``, no clock, no set iteration), so a failing seed is a reproducible case;
:func:`tests.oracle.run.shrink` then cuts it down to a regression file.

Each scenario first draws a *profile*, a topic configuration that makes one area of the log do its work, then a
sequence of ops biased towards that area, from a small model of what the log holds (its end offset as the
generator expects it, the clock, each producer's next sequence and open transaction), so that most ops are ones
the log accepts and a few are ones it refuses (a sequence gap, a fenced epoch, an offset out of range), which must
be refused alike.  Between them the profiles cover what issue 29 lists:

=================  ==================================================================================
profile            what it exercises
=================  ==================================================================================
``appends``        leader, follower and coordinator appends, every codec, keys, null values, headers,
                   the topic's ``compression.type`` recompressing, reads at every isolation
``legacy``         (3.9 only) v0 and v1 messages, ``message.format.version`` converting v2 down, and v1
                   wrappers, LogAppendTime
``producers``      idempotent and transactional producers, duplicates, gaps, fenced epochs, commits and
                   aborts spanning segments, producer expiration
``rolls``          rolls by size, by time (``segment.ms`` and ``advance_time``) and by a full index,
                   explicit rolls, truncations, ``truncate_fully_and_start_at``
``retention``      retention by size and by time, log start offset moves (``delete_records``), the high
                   watermark, delayed file deletion
``recovery``       clean and unclean reopens, a torn or corrupted tail, a recovery point behind
``compaction``     cleaning with keys, tombstones, transactions and markers, the delete horizon,
                   ``min.compaction.lag.ms``, ``compact,delete``
=================  ==================================================================================

Every profile mixes in some of the other ops, so each scenario is a little of everything around one theme.

For the Kafka 4 line the generator leaves out what changes of Kafka 4.x, which kafkalog deliberately does not
follow (it ports 3.9), would make differ for the rest of the scenario (``docs/oracle.rst``, "Kafka 4 changes
kafkalog does not follow"): clean reopens (4.x's close leaves the active indexes untrimmed, so the reopened log
takes its offset index for full and rolls at the next append), reads at the ``high_watermark`` and
``txn_committed`` isolations (4.x's read names the batch's base offset, and fetching the high watermark's
metadata through it can move the high watermark back), and cleanings (4.x's cleaner keeps the empty batch that
ends at the high watermark where 3.9 keeps the one that ends the cleaning round): so no ``compaction`` profile
either.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests.oracle.scenario import DEFAULT_TIME_MS, Scenario, parse_scenario

__all__ = ["PROFILES", "generate"]

PROFILES = ("appends", "legacy", "producers", "rolls", "retention", "recovery", "compaction")
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_KEYS = ("a", "b", "c", "d", "e", "k1", "k2", "long-key-" + "x" * 40)


@dataclass
class _Producer:
    id: int
    epoch: int = 0
    sequence: int = 0
    transactional: bool = False
    in_txn: bool = False


@dataclass
class _Model:
    """What the generator expects of the log; only a guide (an op the log refuses leaves it behind)."""

    rng: random.Random
    kafka: str
    profile: str
    config: dict[str, str]
    now: int = DEFAULT_TIME_MS
    end_offset: int = 0
    start_offset: int = 0
    leader_epoch: int = 0
    producers: list[_Producer] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)

    @property
    def compacted(self) -> bool:
        return "compact" in self.config.get("cleanup.policy", "delete")

    # -- records ----------------------------------------------------------------------------------

    def record(self, magic: int) -> dict[str, Any]:
        rng = self.rng
        # A compacted topic refuses keyless records: a few go anyway, to be refused alike.
        keyless = rng.random() < (0.03 if self.compacted else 0.25)
        key = None if keyless else rng.choice(_KEYS)
        tombstone = rng.random() < (0.2 if self.compacted else 0.05)
        value = None if tombstone else rng.choice(("v", "value", "", "é-ü-∑", "x" * rng.randint(10, 120)))
        timestamp = self.now + rng.randint(-5_000, 2_000)
        if rng.random() < 0.03:
            timestamp = -1  # no timestamp
        headers: dict[str, str] = {}
        if magic == 2 and rng.random() < 0.25:
            headers = {f"h{i}": rng.choice(("", "v", "header-value")) for i in range(rng.randint(1, 3))}
        return {"key": key, "value": value, "timestamp": timestamp, "headers": headers}

    def magic(self) -> int:
        if self.kafka == "3.9" and self.profile == "legacy":
            return self.rng.choice((0, 1, 1, 2))
        return 2

    def codec(self, magic: int) -> str:
        codecs: tuple[str, ...] = ("none", "none", *(_CODECS if magic == 2 else _CODECS[:4]))
        return codecs[self.rng.randrange(len(codecs))]

    # -- ops --------------------------------------------------------------------------------------

    def append(self, producer: _Producer | None = None, origin: str | None = None) -> None:
        rng = self.rng
        magic = 2 if producer is not None else self.magic()
        n = rng.choice((1, 1, 2, 3, 5, 8))
        op: dict[str, Any] = {"op": "append", "records": [self.record(magic) for _ in range(n)],
                              "compression": self.codec(magic), "magic": magic, "leader_epoch": self.leader_epoch,
                              "origin": origin or rng.choice(("client", "client", "client", "replication"))}
        if producer is not None:
            sequence = producer.sequence
            roll = rng.random()
            if roll < 0.04 and sequence > 0:
                sequence = max(0, sequence - n)  # a retry of the last batch (or an overlap): a duplicate
            elif roll < 0.07:
                sequence += rng.randint(1, 3)  # a gap: out of order
            op["producer"] = {"id": producer.id, "epoch": producer.epoch, "sequence": sequence,
                              "transactional": producer.transactional}
            if producer.transactional:
                producer.in_txn = True
            producer.sequence = sequence + n
        if op["origin"] == "replication" and rng.random() < 0.1:
            # A follower's batch from elsewhere than the end: behind it (refused) or past it (a gap).
            op["base_offset"] = max(0, self.end_offset + rng.choice((-3, -1, 2, 7)))
        self.ops.append(op)
        self.end_offset = max(self.end_offset, op.get("base_offset", self.end_offset)) + n

    def marker(self, producer: _Producer) -> None:
        self.ops.append({"op": "marker", "type": "commit" if self.rng.random() < 0.55 else "abort",
                         "producer": {"id": producer.id, "epoch": producer.epoch},
                         "coordinator_epoch": self.rng.choice((0, 0, 3)), "leader_epoch": self.leader_epoch})
        producer.in_txn = False
        self.end_offset += 1

    def producer_op(self) -> None:
        rng = self.rng
        if not self.producers or (len(self.producers) < 4 and rng.random() < 0.15):
            self.producers.append(_Producer(1000 + len(self.producers), rng.choice((0, 0, 5)),
                                            transactional=rng.random() < 0.6))
        producer = rng.choice(self.producers)
        roll = rng.random()
        if producer.transactional and producer.in_txn and roll < 0.3:
            self.marker(producer)
        elif roll < 0.05:
            # The producer is fenced by a new epoch, which starts its sequence again.
            producer.epoch += 1
            producer.sequence = 0
            self.append(producer, "client")
        else:
            self.append(producer, rng.choice(("client", "client", "client", "replication")))

    def offset_near_end(self) -> int:
        return max(0, self.end_offset + self.rng.randint(-8, 2))

    def read(self) -> None:
        rng = self.rng
        isolations = ("log_end", "high_watermark", "txn_committed") if self.kafka == "3.9" else ("log_end",)
        self.ops.append({"op": "read", "offset": max(self.start_offset, self.offset_near_end() - rng.randint(0, 20)),
                         "max_bytes": rng.choice((0, 1, 60, 200, 1000, 100_000)),
                         "isolation": rng.choice(isolations),
                         "min_one_message": rng.random() < 0.7})

    def advance(self, largest: int) -> None:
        ms = self.rng.randint(1, largest)
        self.ops.append({"op": "advance_time", "ms": ms})
        self.now += ms

    def high_watermark(self) -> None:
        offset = self.end_offset if self.rng.random() < 0.7 else self.offset_near_end()
        self.ops.append({"op": "update_high_watermark", "offset": offset})

    def reopen(self) -> None:
        rng = self.rng
        op: dict[str, Any] = {"op": "reopen", "clean_shutdown": rng.random() < 0.5 and self.kafka == "3.9"}
        if not op["clean_shutdown"]:
            if rng.random() < 0.4:
                op["truncate_bytes"] = rng.choice((1, 5, 30, 61, 200))
            if rng.random() < 0.3:
                op["corrupt_byte"] = rng.choice((1, 2, 10, 40, 70))
            if rng.random() < 0.3:
                op["recovery_point"] = max(0, self.end_offset - rng.randint(0, 10))
        self.ops.append(op)
        if not op["clean_shutdown"] and (op.get("truncate_bytes") or op.get("corrupt_byte")):
            self.end_offset = max(self.start_offset, self.end_offset - 3)

    def other(self) -> None:
        """One op of any kind, by weight."""
        rng = self.rng
        kinds = {"append": 30, "producer": 8, "read": 10, "roll": 4, "hw": 6, "advance": 6, "flush": 3,
                 "retention": 3, "clean": 3, "delete_records": 2, "truncate_to": 2, "truncate_fully": 0.5,
                 "reopen": 2}
        kind = rng.choices(list(kinds), list(kinds.values()))[0]
        self.apply(kind)

    def apply(self, kind: str) -> None:
        rng = self.rng
        if kind == "append":
            self.append()
        elif kind == "producer":
            self.producer_op()
        elif kind == "read":
            self.read()
        elif kind == "roll":
            self.ops.append({"op": "roll"})
        elif kind == "hw":
            self.high_watermark()
        elif kind == "advance":
            self.advance(rng.choice((1_000, 20_000, 90_000)))
        elif kind == "flush":
            self.ops.append({"op": "flush"})
        elif kind == "retention":
            self.ops.append({"op": "retention"})
        elif kind == "clean":
            if self.kafka == "3.9":
                self.ops.append({"op": "clean"})
        elif kind == "delete_records":
            offset = max(0, self.offset_near_end() - rng.randint(0, 10))
            self.ops.append({"op": "delete_records", "offset": offset})
            self.start_offset = max(self.start_offset, min(offset, self.end_offset))
        elif kind == "truncate_to":
            offset = max(0, self.end_offset - rng.randint(0, 12))
            self.ops.append({"op": "truncate_to", "offset": offset})
            self.end_offset = min(self.end_offset, offset)
        elif kind == "truncate_fully":
            offset = self.end_offset + rng.randint(0, 20)
            self.ops.append({"op": "truncate_fully_and_start_at", "offset": offset})
            self.end_offset = self.start_offset = offset
        elif kind == "reopen":
            self.reopen()
        elif kind == "epoch":
            self.leader_epoch += 1
        else:
            raise ValueError(kind)


def _config(rng: random.Random, kafka: str, profile: str) -> dict[str, str]:
    config: dict[str, str] = {}

    def maybe(name: str, p: float, *choices: Any) -> None:
        if rng.random() < p:
            config[name] = str(rng.choice(choices))

    maybe("segment.bytes", 0.7, 300, 600, 1024, 4096)
    maybe("compression.type", 0.25, "producer", "gzip", "snappy", "lz4", "zstd", "uncompressed")
    maybe("message.timestamp.type", 0.1, "LogAppendTime")
    maybe("index.interval.bytes", 0.3, 1, 100, 1000)
    if profile == "legacy" and kafka == "3.9":
        config["message.format.version"] = rng.choice(("0.9.0", "0.10.0", "0.10.2", "2.8"))
        maybe("message.timestamp.type", 0.3, "LogAppendTime", "CreateTime")
    elif profile == "rolls":
        maybe("segment.ms", 0.6, 5_000, 30_000)
        maybe("segment.index.bytes", 0.6, 16, 24, 40, 100)
        maybe("segment.jitter.ms", 0.1, 0)
        config.setdefault("index.interval.bytes", "1")
    elif profile == "retention":
        maybe("retention.bytes", 0.6, 300, 800, 2000)
        maybe("retention.ms", 0.6, 10_000, 60_000, 200_000)
        maybe("file.delete.delay.ms", 0.6, 0, 1_000, 30_000)
        maybe("cleanup.policy", 0.15, "compact,delete")
    elif profile == "recovery":
        maybe("flush.messages", 0.3, 1, 3)
        maybe("segment.index.bytes", 0.3, 24, 100)
    elif profile == "producers":
        maybe("producer.id.expiration.ms", 0.4, 60_000, 700_000)
    elif profile == "compaction":
        config["cleanup.policy"] = rng.choice(("compact", "compact", "compact,delete"))
        maybe("delete.retention.ms", 0.7, 0, 1_000, 30_000)
        maybe("min.compaction.lag.ms", 0.2, 5_000)
        maybe("file.delete.delay.ms", 0.5, 0, 1_000)
        config.setdefault("segment.bytes", str(rng.choice((300, 600, 1024))))
    return config


#: Each profile's weights over the model's op kinds (``other`` draws from all of them).
_PROFILE_OPS: dict[str, dict[str, float]] = {
    "appends": {"append": 10, "read": 4, "hw": 2, "roll": 1, "other": 3, "epoch": 0.5},
    "legacy": {"append": 10, "read": 3, "hw": 1, "roll": 1, "clean": 0.5, "reopen": 0.5, "other": 3},
    "producers": {"producer": 10, "append": 2, "read": 2, "hw": 2, "roll": 1, "advance": 1, "reopen": 0.7,
                  "truncate_to": 0.4, "other": 2},
    "rolls": {"append": 8, "roll": 2, "advance": 3, "truncate_to": 1, "truncate_fully": 0.3, "read": 2, "hw": 1,
              "other": 2},
    "retention": {"append": 8, "hw": 3, "advance": 3, "retention": 3, "delete_records": 2, "roll": 1, "read": 2,
                  "other": 2},
    "recovery": {"append": 8, "producer": 3, "reopen": 3, "flush": 2, "roll": 1, "read": 2, "hw": 1, "other": 2},
    "compaction": {"append": 8, "producer": 3, "roll": 2, "hw": 3, "clean": 3, "advance": 2, "read": 2,
                   "retention": 1, "other": 2},
}


def generate(seed: int, kafka: str = "3.9", ops: int | None = None, profile: str | None = None) -> Scenario:
    """The scenario of ``seed`` for Kafka line ``kafka``: its profile drawn from the seed unless given, and
    ``ops`` ops (drawn from the seed, 15 to 45, unless given)."""
    rng = random.Random(f"{seed}-{kafka}")
    profiles = [p for p in PROFILES if kafka == "3.9" or p not in ("legacy", "compaction")]
    chosen = profile if profile is not None else profiles[seed % len(profiles)]
    model = _Model(rng, kafka, chosen, _config(rng, kafka, chosen))
    count = ops if ops is not None else rng.randint(15, 45)
    weights = _PROFILE_OPS[chosen]
    while len(model.ops) < count:
        kind = rng.choices(list(weights), list(weights.values()))[0]
        if kind == "other":
            model.other()
        else:
            model.apply(kind)
    data = {"kafka": kafka, "description": f"generated: seed {seed}, profile {chosen}", "config": model.config,
            "time_ms": DEFAULT_TIME_MS, "ops": model.ops[:count]}
    return parse_scenario(data, f"<generated seed={seed} kafka={kafka} profile={chosen}>")
