""":class:`kafkalog.cleaner.config.CleanerConfig`: its defaults (Kafka 3.8.0 ``CleanerConfig`` and the broker's
``log.cleaner.*`` defaults), the broker properties it is read from, and the values it refuses.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import sys
from types import ModuleType

import pytest

from kafkalog.cleaner.config import CleanerConfig
from kafkalog.config.config_def import ConfigError
from kafkalog.errors import IllegalStateError
from kafkalog.scheduler import MockTime

# --- CleanerConfig ----------------------------------------------------------------------------------------------


def test_cleaner_config_defaults() -> None:
    config = CleanerConfig()
    assert config == CleanerConfig(num_threads=1, dedupe_buffer_size=128 * 1024 * 1024,
                                   dedupe_buffer_load_factor=0.9, io_buffer_size=512 * 1024,
                                   max_message_size=1048588, max_io_bytes_per_second=sys.float_info.max,
                                   backoff_ms=15000, enable_cleaner=True, hash_algorithm="MD5")
    assert config.dedupe_buffer_size_per_thread == 128 * 1024 * 1024
    assert config.io_buffer_size_per_thread == 256 * 1024
    assert config.hashlib_name == "md5"
    assert config.new_digest().digest_size == 16
    assert hash(config) == hash(CleanerConfig())
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_threads = 2  # type: ignore[misc]


def test_cleaner_config_test_constructor() -> None:
    # Kafka 3.8.0 CleanerConfig(boolean enableCleaner)
    config = CleanerConfig.from_enable(False)
    assert (config.num_threads, config.dedupe_buffer_size, config.dedupe_buffer_load_factor, config.io_buffer_size,
            config.max_message_size, config.max_io_bytes_per_second, config.backoff_ms, config.enable_cleaner) == \
        (1, 4 * 1024 * 1024, 0.9, 1024 * 1024, 32 * 1024 * 1024, sys.float_info.max, 15000, False)


def test_cleaner_config_from_props() -> None:
    config = CleanerConfig.from_props({
        "log.cleaner.threads": "4",
        "log.cleaner.dedupe.buffer.size": "1000000000000",
        "log.cleaner.io.buffer.load.factor": "0.75",
        "log.cleaner.io.buffer.size": 1 << 20,
        "message.max.bytes": " 2000000 ",
        "log.cleaner.io.max.bytes.per.second": "1e6",
        "log.cleaner.backoff.ms": "100",
        "log.cleaner.enable": "FALSE",
        # other broker properties, and the topic defaults under log.cleaner., are not the cleaner's
        "log.segment.bytes": "1024",
        "log.cleaner.min.cleanable.ratio": "0.1",
        "log.cleaner.delete.retention.ms": "5",
    })
    assert config == CleanerConfig(4, 1_000_000_000_000, 0.75, 1 << 20, 2_000_000, 1e6, 100, False)
    assert config.dedupe_buffer_size_per_thread == 2**31 - 1  # capped per thread, as Kafka does
    assert config.io_buffer_size_per_thread == (1 << 20) // 4 // 2
    assert CleanerConfig.from_props({}) == CleanerConfig()
    assert CleanerConfig.from_props(config.to_props()) == config
    assert config.to_props()["log.cleaner.enable"] == "false"


@pytest.mark.parametrize(("props", "name", "fragment"), [
    ({"log.cleaner.threads": "-1"}, "log.cleaner.threads", "Value must be at least 0"),
    ({"log.cleaner.threads": "two"}, "log.cleaner.threads", "Not a number of type INT"),
    ({"log.cleaner.io.buffer.size": -5}, "log.cleaner.io.buffer.size", "Value must be at least 0"),
    ({"log.cleaner.backoff.ms": "-1"}, "log.cleaner.backoff.ms", "Value must be at least 0"),
    ({"message.max.bytes": 2**31}, "message.max.bytes", "out of range"),
    ({"log.cleaner.dedupe.buffer.size": -1}, "log.cleaner.dedupe.buffer.size", "Value must be at least 0"),
    ({"log.cleaner.io.buffer.load.factor": "1.5"}, "log.cleaner.io.buffer.load.factor", "at most 1"),
    ({"log.cleaner.io.buffer.load.factor": 0}, "log.cleaner.io.buffer.load.factor", "above 0"),
    ({"log.cleaner.io.buffer.load.factor": "NaN"}, "log.cleaner.io.buffer.load.factor", "NaN"),
    ({"log.cleaner.io.max.bytes.per.second": 0}, "log.cleaner.io.max.bytes.per.second", "above 0"),
    ({"log.cleaner.enable": "yes"}, "log.cleaner.enable", "either true or false"),
    ({"log.cleaner.thread": "2"}, "log.cleaner.thread", "Unknown log cleaner config name"),
])
def test_cleaner_config_from_props_rejects(props: dict[str, object], name: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as raised:
        CleanerConfig.from_props(props)
    assert raised.value.name == name
    assert fragment in str(raised.value)


def test_cleaner_config_constructor_rejects() -> None:
    with pytest.raises(ConfigError, match=r"Invalid value True for configuration log\.cleaner\.threads"):
        CleanerConfig(num_threads=True)
    with pytest.raises(ConfigError, match=r"log\.cleaner\.enable"):
        CleanerConfig(enable_cleaner=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="hash_algorithm"):
        CleanerConfig(hash_algorithm="CRC32")
    assert CleanerConfig(max_io_bytes_per_second=math.inf).max_io_bytes_per_second == math.inf
    assert CleanerConfig(dedupe_buffer_load_factor=1).dedupe_buffer_load_factor == 1.0
    no_threads = CleanerConfig(num_threads=0)
    assert no_threads.num_threads == 0  # Kafka allows it: no cleaner thread at all
    with pytest.raises(IllegalStateError, match="0 threads"):
        _ = no_threads.io_buffer_size_per_thread


def test_cleaner_config_hash_algorithm_is_md5_only(impl: ModuleType, tmp_path: pathlib.Path) -> None:
    """Kafka 3.8.0 fixes the offset map's digest (``CleanerConfig.HASH_ALGORITHM = "MD5"``; ``SkimpyOffsetMap``
    always hashes with MD5), and kafkalog's map computes MD5 alone: another digest, which 0.10.1's
    ``CleanerConfig(hashAlgorithm)`` took, is refused when the configuration is made, not when a cleaner thread
    builds its map.  The name is Java's, case-insensitive."""
    for name in ("SHA-256", "sha-256", "SHA-1", "SHA", "SHA-512"):
        with pytest.raises(ConfigError, match="MD5 only") as raised:
            CleanerConfig(hash_algorithm=name)
        assert raised.value.name == "hash_algorithm"
    config = CleanerConfig(dedupe_buffer_size=1 << 16, hash_algorithm="md5")
    assert config.hashlib_name == "md5"
    # every configuration that can be made gives its threads a map
    from kafkalog.cleaner import LogCleaner

    cleaner = LogCleaner(config, [tmp_path], {}, time=MockTime())
    stats = cleaner.run_once()
    assert stats == []
