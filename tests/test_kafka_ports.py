"""Kafka's own log-layer tests, accounted for one by one.

Kafka's test suites are the executable specification kafkalog is held to.  ``data/kafka_log_tests.json``
lists the test methods of the suites (names only): every ``@Test`` of ``core/src/test/scala/unit/kafka/log``
at 3.8.0 (``remote/`` aside) and 0.10.1.1, and of 3.8.0's ``FileRecordsTest`` (clients),
``LogOffsetMetadataTest`` (storage), and the classic group coordinator's ``GroupCoordinatorTest``,
``GroupMetadataManagerTest`` and ``GroupMetadataTest`` (``core/src/test/scala/unit/kafka/coordinator/group``).
Each one is either

- **ported**: a test in one of the modules that mirror its suite (:data:`SUITE_MODULES`) is named after it
  in snake_case (``testTruncateTo`` -> ``test_truncate_to``; a name without ``test`` gets the prefix), or
  its docstring starts with Kafka's name; or any test's docstring cites ``Suite.method``; or
- **listed as not ported**, with the reason, in the docstring of one of those modules, under a line
  ``Kafka tests not ported:`` with one item per reason: ``- ``testA``, ``Suite.testB``: why``.

Run as a script (``python tests/test_kafka_ports.py [-v]``) it prints the count per suite and, with
``-v``, what is neither ported nor listed.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent
KAFKA_TESTS = json.loads((TESTS / "data" / "kafka_log_tests.json").read_text())
TAGS = ("3.8.0", "0.10.1.1")

#: LogCleanerTest (CleanerTest in 0.10.1.1), split by area; testLogToClean* are with the manager's tests.
CLEANER_TEST_MODULES = ("cleaner/test_cleaner.py", "cleaner/test_cleaner_transactions.py",
                        "cleaner/test_cleaner_recovery.py", "cleaner/test_cleaner_offset_map_stats.py",
                        "cleaner/test_cleaner_config.py", "cleaner/test_cleaner_manager.py")

#: The kafkalog test modules that mirror each Kafka suite: globs of paths relative to tests/ (``log/test_log*.py``).
SUITE_MODULES: dict[str, tuple[str, ...]] = {
    # 3.8.0
    "BrokerCompressionTest": ("log/test_broker_compression.py",),
    "LocalLogTest": ("log/test_local_log.py", "log/test_log.py", "log/test_topic.py"),
    "LogCleanerIntegrationTest": ("cleaner/test_cleaner_integration.py",),
    "LogCleanerLagIntegrationTest": ("cleaner/test_cleaner_integration.py",),
    "LogCleanerParameterizedIntegrationTest": ("cleaner/test_cleaner_integration.py",),
    "LogCleanerManagerTest": ("cleaner/test_cleaner_manager.py",),
    "LogCleanerTest": CLEANER_TEST_MODULES,
    "LogConcurrencyTest": ("log/test_log_concurrency.py",),
    "LogConfigTest": ("log/test_config.py",),
    "LogLoaderTest": ("log/test_log_loader.py",),
    "LogManagerTest": ("log/manager/test_log_manager*.py",),
    "LogSegmentTest": ("storage/test_segment.py",),
    "LogSegmentsTest": ("storage/test_log_segments.py",),
    "LogValidatorTest": ("log/test_validator*.py", "log/test_log_append_info.py"),
    "OffsetIndexTest": ("storage/test_offset_index.py", "storage/test_index_*.py"),
    "OffsetMapTest": ("cleaner/test_offset_map.py",),
    "ProducerStateManagerTest": ("storage/test_producer_state*.py",),
    "TimeIndexTest": ("storage/test_time_index.py", "storage/test_index_*.py"),
    "TransactionIndexTest": ("storage/test_transaction_index.py",),
    "TransactionCoordinatorTest": ("broker/test_txn_coordinator.py",),
    "TransactionMetadataTest": ("broker/test_txn_metadata.py",),
    "TransactionStateManagerTest": ("broker/test_txn_state_manager.py",),
    "TransactionLogTest": ("broker/test_txn_records.py",),
    "TransactionMarkerChannelManagerTest": ("broker/test_txn_state_manager.py",),
    "UnifiedLogTest": ("log/test_log*.py",),
    "VerificationGuardTest": ("storage/test_verification_guard.py",),
    "FileRecordsTest": ("storage/test_file_message_set.py",),
    "LogOffsetMetadataTest": ("log/test_fetch.py",),
    "GroupCoordinatorTest": ("broker/test_group_*.py",),
    "GroupMetadataManagerTest": ("broker/test_group_restart.py",),
    "GroupMetadataTest": ("broker/test_group_metadata.py",),
    # 0.10.1.1 only
    "CleanerTest": CLEANER_TEST_MODULES,
    "FileMessageSetTest": ("storage/test_file_message_set.py",),
    "LogTest": ("log/test_log*.py", "log/test_topic.py"),
}

NOT_PORTED_HEADING = "Kafka tests not ported:"

#: A floor under the count of ported tests, per tag: raised as ports land, so none is lost unnoticed.
PORTED_AT_LEAST = {"3.8.0": 925, "0.10.1.1": 131}


def snake_case(name: str) -> str:
    """Kafka's camelCase test name as a pytest name: ``testLogRollAfterLogHandlerClosed`` ->
    ``test_log_roll_after_log_handler_closed``, ``randomLookupTest`` -> ``test_random_lookup_test``."""
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s).lower()
    return s if s.startswith("test") else "test_" + s


@dataclass
class Module:
    name: str
    #: (function name, docstring) of every test function, methods of test classes included.
    tests: list[tuple[str, str]]
    #: Kafka names listed as not ported (bare or ``Suite.name``) -> the reason given.
    not_ported: dict[str, str] = field(default_factory=dict)


def parse_not_ported(doc: str) -> dict[str, str]:
    """The items under :data:`NOT_PORTED_HEADING` in a module docstring."""
    lines = doc.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == NOT_PORTED_HEADING)
    except StopIteration:
        return {}
    items: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith("- "):
            items.append(line[2:].strip())
        elif items and line.startswith("  ") and line.strip():
            items[-1] += " " + line.strip()
        elif items and not line.strip():
            continue
        elif items:
            break
    found: dict[str, str] = {}
    for item in items:
        names, sep, reason = item.partition(": ")
        if not sep:
            raise AssertionError(f"not-ported item without a reason: {item!r}")
        for name in names.split(","):
            found[name.strip().strip("`")] = reason.strip()
    return found


@functools.cache
def load_modules() -> dict[str, Module]:
    modules = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        name = path.relative_to(TESTS).as_posix()
        tree = ast.parse(path.read_text())
        tests = [(node.name, ast.get_docstring(node) or "") for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")]
        modules[name] = Module(name, tests, parse_not_ported(ast.get_docstring(tree) or ""))
    return modules


def modules_of(suite: str, modules: dict[str, Module]) -> list[Module]:
    patterns = SUITE_MODULES[suite]
    return [m for name, m in modules.items() if any(Path(name).match(p) for p in patterns)]


def ports_of(suite: str, name: str, modules: dict[str, Module]) -> list[str]:
    """The kafkalog tests that port ``suite.name``, as ``module::function``."""
    found = []
    wanted = snake_case(name)
    starts = re.compile(rf"^{re.escape(name)}\b")
    cited = re.compile(rf"(?<![\w.]){re.escape(suite)}\.{re.escape(name)}\b")
    own = {m.name for m in modules_of(suite, modules)}
    for module in modules.values():
        for function, doc in module.tests:
            mine = module.name in own and (function == wanted or starts.match(doc))
            if mine or cited.search(doc):
                found.append(f"{module.name}::{function}")
    return found


def listing_of(suite: str, name: str, modules: dict[str, Module]) -> tuple[str, str] | None:
    """``(module, reason)`` where ``suite.name`` is listed as not ported, else ``None``."""
    for module in modules_of(suite, modules):
        for key in (f"{suite}.{name}", name):
            if key in module.not_ported:
                return module.name, module.not_ported[key]
    return None


@dataclass
class Account:
    ported: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    listed: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)
    missing: list[tuple[str, str, str]] = field(default_factory=list)

    def count(self, tag: str) -> tuple[int, int, int]:
        """(ported, listed, total) for ``tag``."""
        total = sum(len(v) for v in KAFKA_TESTS[tag].values())
        return (sum(1 for k in self.ported if k[0] == tag), sum(1 for k in self.listed if k[0] == tag), total)


@functools.cache
def account() -> Account:
    modules = load_modules()
    result = Account()
    for tag in TAGS:
        for suite, names in KAFKA_TESTS[tag].items():
            for name in names:
                key = (tag, suite, name)
                ports = ports_of(suite, name, modules)
                if ports:
                    result.ported[key] = ports
                    continue
                listed = listing_of(suite, name, modules)
                if listed is not None:
                    result.listed[key] = listed
                else:
                    result.missing.append(key)
    return result


# -------------------------------------------------------------------------------------------------------------


def test_every_suite_has_its_modules() -> None:
    suites = {suite for tag in TAGS for suite in KAFKA_TESTS[tag]}
    assert suites <= set(SUITE_MODULES), suites - set(SUITE_MODULES)


def test_listed_names_are_kafka_tests() -> None:
    """A name listed as not ported is a test of a suite that the module mirrors (no typos, no strays)."""
    modules = load_modules()
    for module in modules.values():
        suites = [s for s in SUITE_MODULES if module in modules_of(s, modules)]
        known = {f"{s}.{n}" for tag in TAGS for s in suites for n in KAFKA_TESTS[tag].get(s, [])}
        known |= {n.split(".", 1)[1] for n in known}
        for name, reason in module.not_ported.items():
            assert name in known, f"{module.name} lists {name!r}, which is not a test of {suites}"
            assert len(reason) >= 10, f"{module.name}: the reason for {name} says too little: {reason!r}"


def test_nothing_is_both_ported_and_listed() -> None:
    modules = load_modules()
    for tag in TAGS:
        for suite, names in KAFKA_TESTS[tag].items():
            for name in names:
                listed = listing_of(suite, name, modules)
                ports = ports_of(suite, name, modules)
                assert not (ports and listed), f"{suite}.{name} is ported ({ports}) and listed in {listed}"


def test_ported_count_does_not_fall() -> None:
    result = account()
    for tag in TAGS:
        assert result.count(tag)[0] >= PORTED_AT_LEAST[tag], tag


def test_kafka_tests_accounted_for() -> None:
    """Every Kafka test is ported or listed with its reason."""
    result = account()
    assert not result.missing, "\n".join(f"{t} {s}.{n}" for t, s, n in result.missing)


def main(argv: list[str]) -> int:
    result = account()
    for tag in TAGS:
        for suite, names in KAFKA_TESTS[tag].items():
            ported = sum(1 for n in names if (tag, suite, n) in result.ported)
            listed = sum(1 for n in names if (tag, suite, n) in result.listed)
            print(f"{tag:9} {suite:40} ported {ported:3}  listed {listed:3}  of {len(names):3}")
        ported, listed, total = result.count(tag)
        print(f"{tag:9} {'TOTAL':40} ported {ported:3}  listed {listed:3}  of {total:3}\n")
    if "-v" in argv:
        for tag, suite, name in result.missing:
            print(f"missing {tag} {suite}.{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
