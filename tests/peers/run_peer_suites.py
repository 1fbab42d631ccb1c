"""Run kafka-python's and confluent-kafka-python's own integration suites against ``kafkalog serve``.

Usage (from the repository root; ``make peers`` runs the first line)::

    python tests/peers/run_peer_suites.py
    python tests/peers/run_peer_suites.py --suite kafka-python -- -k "test_end_to_end or test_group"
    python tests/peers/run_peer_suites.py --suite confluent-kafka --confluent-source ~/src/confluent-kafka-python

What it does, for each suite, with the client version installed beside kafkalog (``importlib.metadata``):

1. **Tests.**  ``pip download --no-deps --no-binary :all: NAME==VERSION`` into ``.oracle/peers/sdists`` (once;
   ``--offline`` never downloads), unpacked afresh into ``.oracle/peers/work/``.  kafka-python's sdist ships its
   ``test/`` tree less two support files, which ``tests/peers/overlay/kafka-python`` stands in for (their docstrings
   say how).  confluent-kafka's sdist ships no tests at all: they come from ``--confluent-source``, a checkout or a
   git repository of confluent-kafka-python (``--confluent-ref``, default ``v<version>``, picks the tag), copied
   into ``.oracle/peers/sources`` once; without one the suite is reported as not run.
2. **Tools.**  A virtual environment in ``.oracle/peers/venv`` that sees this interpreter's packages (the clients
   under test, pytest) and adds only what the suites need and kafkalog does not: pytest-timeout, and for
   confluent's conftest pytest-asyncio, trivup and the schema-registry client's imports.  Pinned below.
3. **Broker.**  ``kafkalog serve`` on a free port of 127.0.0.1, a new data directory per suite, with the properties
   of the suite's own broker configuration that kafkalog takes (kafka-python's ``servers/.../kafka.properties``,
   confluent's ``TestUtils.broker_conf``), stopped with SIGTERM afterwards.
4. **Run.**  The suite's pytest, pointed at the broker through its own switches (kafka-python: ``KAFKA_URI`` and
   ``KAFKA_VERSION``; confluent: ``BROKERS``), each test bounded by pytest-timeout (``--test-timeout``, signal
   method, so one hung test fails alone) and the whole run by ``--suite-timeout``, under the suite's own pytest
   configuration (its ``pyproject.toml``) less its ``addopts`` (kafka-python's ask for pytest-timeout's thread
   method, which ends the whole run at the first hung test).  Test bodies are never changed.
5. **Summary.**  Passed / failed / skipped / errors per suite, each failure's test id and first error line, each
   skip's reason, the directories not run and why, and, against each suite's ``expected`` below (the failures
   triaged: what a single PLAINTEXT node cannot do, and the APIs kafkalog does not answer
   yet), which failures are new and which expected ones now pass.  Printed, and written as JSON to ``--json``
   (default ``.oracle/peers/summary.json``; ``KAFKALOG_PEERS_CACHE`` moves the whole cache).

Exit status: 0 when every failure is an expected one (a suite whose tests cannot be had, confluent's without
``--confluent-source``, is reported as not run), 1 when there is an unexpected failure or a suite timed out, 3 when
``--offline`` and something is not cached yet (``tests/peers/test_peer_suites.py`` skips on that).
Slow (minutes per suite): not part of ``make test``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
#: The cache: ``KAFKALOG_PEERS_CACHE`` or the repository's ``.oracle/peers`` (ignored by git).
DEFAULT_CACHE = Path(os.environ.get("KAFKALOG_PEERS_CACHE") or ROOT / ".oracle" / "peers")
EXIT_NOT_CACHED = 3

#: The tools each suite's pytest needs besides the clients and pytest (pinned: a run is repeatable).
COMMON_TOOLS = ("pytest-timeout==2.4.0",)
CONFLUENT_TOOLS = (
    "pytest-asyncio==1.5.0",            # pyproject's asyncio_mode = "auto"
    "trivup==0.12.2",                   # imported by tests/integration/cluster_fixture.py even with BROKERS set
    "setuptools==80.10.2",              # trivup imports pkg_resources, gone from setuptools 81
    "cachetools==8.0.2", "httpx2==2.16.2", "authlib==1.9.10",    # confluent_kafka.schema_registry's imports,
    "avro==1.12.2", "fastavro==1.13.1",                          # which the conftest and tests.common load
    "protobuf==7.36.2", "googleapis-common-protos==1.76.0",
)


@dataclass(frozen=True)
class Suite:
    name: str                      # the distribution on PyPI
    sdist_prefix: str              # its sdist file's name before the version
    paths: tuple[str, ...]         # what pytest runs, relative to the tests' root
    broker_config: tuple[tuple[str, str], ...]
    tools: tuple[str, ...]
    #: directories not run, with why (what they need is not a broker)
    not_run: tuple[tuple[str, str], ...] = ()
    #: a test id (parameters stripped), a test file or a directory -> why its tests cannot pass against a single
    #: PLAINTEXT node
    expected: dict[str, str] = field(default_factory=dict)

    def expected_reason(self, test_id: str) -> str | None:
        """Why ``test_id`` is expected to fail, or ``None``: the entry of the test, else of its file or a directory
        above it."""
        if (reason := self.expected.get(base_id(test_id))) is not None:
            return reason
        path = test_id.split("::", 1)[0]
        while path:
            if (reason := self.expected.get(path)) is not None:
                return reason
            path = path.rpartition("/")[0]
        return None


_CONTROLLER = "a KRaft controller's API: kafkalog's broker has no Raft quorum"
_NO_API = "an API kafkalog's broker does not answer yet: "
KAFKA_PYTHON = Suite(
    name="kafka-python", sdist_prefix="kafka_python",
    paths=("test/integration",),
    # servers/resources/default/kafka.properties of kafka-python, less what is KRaft quorum or SASL/SSL plumbing
    broker_config=(
        ("node.id", "0"), ("num.partitions", "4"), ("default.replication.factor", "1"),
        ("socket.request.max.bytes", "104857600"), ("num.recovery.threads.per.data.dir", "1"),
        ("offsets.topic.replication.factor", "1"), ("offsets.topic.num.partitions", "2"),
        ("transaction.state.log.replication.factor", "1"), ("transaction.state.log.min.isr", "1"),
        ("log.retention.hours", "168"), ("log.segment.bytes", "1073741824"),
        ("log.retention.check.interval.ms", "300000"), ("log.cleaner.enable", "false"),
        ("offsets.commit.timeout.ms", "500"), ("group.min.session.timeout.ms", "1000"),
        ("group.initial.rebalance.delay.ms", "0"),
    ),
    tools=COMMON_TOOLS,
    expected={
        "test/integration/test_admin_integration.py::test_create_describe_delete_acls":
            "ACLs: kafkalog's broker has no authorizer (DescribeAcls, CreateAcls, DeleteAcls not answered)",
        "test/integration/test_admin_integration.py::test_describe_metadata_quorum": _CONTROLLER + " (DescribeQuorum)",
        "test/integration/test_ssl_integration.py::TestSSLConnection::test_ssl_handshake":
            "SSL: the fixture spawns a Kafka of its own with an SSL listener (kafkalog serve is PLAINTEXT only)",
        "test/integration/test_ssl_integration.py::TestSSLConnection::test_legacy_kafka_client_ssl":
            "SSL: the fixture spawns a Kafka of its own with an SSL listener (kafkalog serve is PLAINTEXT only)",
    },
)

CONFLUENT = Suite(
    name="confluent-kafka", sdist_prefix="confluent_kafka",
    paths=("tests/integration",),
    # tests/common TestUtils.broker_conf, less min.isr settings Kafka does not have and the share-group ones
    broker_config=(
        ("num.partitions", "1"), ("group.initial.rebalance.delay.ms", "0"),
        ("offsets.topic.replication.factor", "1"), ("transaction.state.log.replication.factor", "1"),
        ("transaction.state.log.min.isr", "1"),
    ),
    tools=COMMON_TOOLS + CONFLUENT_TOOLS,
    expected={
        "tests/integration/admin/test_basic_operations.py::test_basic_operations":
            "ACLs: its ACL steps need an authorizer (CreateAcls, DescribeAcls, DeleteAcls not answered); its topic, "
            "partition, group, configuration and offset steps before them pass",
        "tests/integration/admin/test_incremental_alter_configs.py::test_incremental_alter_configs":
            "expects Kafka 4.1+'s ELR (KIP-966) cluster-level min.insync.replicas on every topic "
            "(DYNAMIC_DEFAULT_BROKER_CONFIG); kafkalog's broker answers as Kafka 4.0, while the test's version gate "
            "reads a hard-coded 4.2.0 (TestUtils.broker_version)",
        "tests/integration/admin/test_user_scram_credentials.py::test_user_scram_credentials":
            _NO_API + "DescribeUserScramCredentials, AlterUserScramCredentials (SCRAM: SASL)",
        "tests/integration/admin/test_describe_operations.py::test_describe_operations":
            "SASL/PLAIN and ACLs: its sasl_cluster fixture starts a trivup Kafka 4.2.0 of its own, whatever BROKERS "
            "says (trivup downloads Kafka, which this machine cannot)",
        "tests/integration/share_consumer": "share groups (KIP-932): kafkalog's broker answers neither the share "
            "APIs (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge) nor GROUP configuration resources "
            "(share.auto.offset.reset is set through IncrementalAlterConfigs first)",
    },
    not_run=(
        ("tests/integration/schema_registry", "needs a Schema Registry server (SR_URL), not a broker"),
        ("tests/integration/share_consumer_oauth", "SASL/OAUTHBEARER: starts a trivup cluster of its own"),
        ("tests/integration/share_consumer_sasl", "SASL/PLAIN: starts a trivup cluster of its own"),
    ),
)

SUITES = {s.name: s for s in (KAFKA_PYTHON, CONFLUENT)}


class NotCachedError(Exception):
    """``--offline`` and something the run needs is not in the cache."""


class NoTestsError(Exception):
    """The suite's tests cannot be had: its sdist ships none and no source was given."""


# -- preparing ---------------------------------------------------------------------------------------------------


def installed_version(dist: str) -> str:
    return importlib.metadata.version(dist)


def sdist(suite: Suite, version: str, cache: Path, offline: bool) -> Path:
    target = cache / "sdists" / f"{suite.sdist_prefix}-{version}.tar.gz"
    if target.exists():
        return target
    if offline:
        raise NotCachedError(f"{target} is not cached")
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    f"{suite.name}=={version}", "-d", str(target.parent)], check=True, timeout=600)
    if not target.exists():
        raise FileNotFoundError(f"pip download did not leave {target}")
    return target


def unpack(archive: Path, into: Path) -> Path:
    """The archive's single top directory, unpacked under ``into`` (emptied first)."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (top,) = into.iterdir()
    return top


def confluent_tests(version: str, source: Path | None, ref: str | None, cache: Path) -> tuple[Path, str]:
    """A tar of confluent-kafka-python's ``tests/`` at ``ref``, cached; and the ref it is from."""
    ref = ref or f"v{version}"
    cached = cache / "sources" / f"confluent-kafka-python-tests-{ref}.tar"
    if cached.exists():
        return cached, ref
    if source is None:
        raise NoTestsError(f"confluent-kafka's sdist ships no tests and {cached} is not cached: give "
                           f"--confluent-source (a checkout or git repository of confluent-kafka-python)")
    cached.parent.mkdir(parents=True, exist_ok=True)
    if (source / "tests" / "integration").is_dir() and not (source / "objects").is_dir():
        with tarfile.open(cached, "w") as tar:
            tar.add(source / "tests", arcname="confluent-kafka-python/tests")
            tar.add(source / "pyproject.toml", arcname="confluent-kafka-python/pyproject.toml")
        return cached, "working tree of " + str(source)
    archive = subprocess.run(["git", "-C", str(source), "archive", "--prefix=confluent-kafka-python/", ref, "tests",
                              "pyproject.toml"],
                             check=True, capture_output=True, timeout=300).stdout
    cached.write_bytes(archive)
    return cached, ref


def tools_venv(cache: Path, requirements: tuple[str, ...], offline: bool) -> Path:
    """A venv that sees this interpreter's packages, with ``requirements`` installed in it; its python."""
    venv = cache / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        if offline:
            raise NotCachedError(f"{venv} is not made yet")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
        site_packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                             "['purelib'])"], check=True, capture_output=True, text=True,
                                            timeout=60).stdout.strip())
        # addsitedir, not a bare path: the .pth files there (an editable install among them) are read too
        dirs = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
        (site_packages / "kafkalog-peers-parent.pth").write_text(
            "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
    stamp = venv / "requirements.txt"
    have = set(stamp.read_text().split()) if stamp.exists() else set()
    missing = [r for r in requirements if r not in have]
    if missing:
        if offline:
            raise NotCachedError(f"{', '.join(missing)} not installed in {venv} yet")
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", *missing],
                       check=True, timeout=900)
        stamp.write_text("\n".join(sorted(have | set(missing))) + "\n")
    return python


def kafkalog_path(cache: Path) -> Path:
    """A directory holding only ``kafkalog`` (this checkout's), for PYTHONPATH: the repository root would also
    put kafkalog's ``tests`` package in front of the peers' own ``tests``."""
    path = cache / "kafkalog-path"
    path.mkdir(parents=True, exist_ok=True)
    link = path / "kafkalog"
    if not (link.is_symlink() and link.resolve() == ROOT / "kafkalog"):
        link.unlink(missing_ok=True)
        link.symlink_to(ROOT / "kafkalog", target_is_directory=True)
    return path


# -- the broker --------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def kafkalog_serve(config: tuple[tuple[str, str], ...], data_dir: Path, env: dict[str, str],
                   log_file: Path) -> Iterator[int]:
    """``kafkalog serve`` on a free port, until the block ends; yields the port."""
    port = free_port()
    listener = f"PLAINTEXT://127.0.0.1:{port}"
    args = [sys.executable, "-m", "kafkalog", "serve", "--log-dirs", str(data_dir), "--listeners", listener,
            "--config", f"advertised.listeners={listener}"]
    for name, value in config:
        args += ["--config", f"{name}={value}"]
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=env, cwd=data_dir.parent)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().decode()
            if "listening on" not in line:
                proc.wait(timeout=30)
                raise RuntimeError(f"kafkalog serve did not start ({proc.returncode}): {line.strip()} "
                                   f"{log_file.read_text()[-2000:]}")
            yield port
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- running and counting ----------------------------------------------------------------------------------------


def base_id(test_id: str) -> str:
    return test_id.split("[", 1)[0]


def summarize(results_file: Path, suite: Suite) -> dict[str, Any]:
    """Per test: an error if its setup or teardown failed, else its call's outcome (a skip at setup is a skip)."""
    outcomes: dict[str, tuple[str, str]] = {}
    if results_file.exists():
        for line in results_file.read_text().splitlines():
            r = json.loads(line)
            test_id, when, outcome = r["id"], r["when"], r["outcome"]
            if outcome == "failed" and when != "call":
                outcomes[test_id] = ("error", r["message"])
            elif test_id not in outcomes or outcomes[test_id][0] not in ("error", "failed"):
                outcomes[test_id] = (outcome, r["message"])
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    failures, skips = [], []
    for test_id, (outcome, message) in outcomes.items():
        counts["errors" if outcome == "error" else outcome] += 1
        if outcome in ("failed", "error"):
            reason = suite.expected_reason(test_id)
            failures.append({"id": test_id, "outcome": outcome, "message": message, "expected": reason})
        elif outcome == "skipped":
            skips.append({"id": test_id, "reason": message})
    passing_expected = sorted(i for i, (o, _) in outcomes.items() if o == "passed" and suite.expected_reason(i))
    return {"counts": counts, "failures": failures, "skipped": skips,
            "unexpected_failures": [f["id"] for f in failures if not f["expected"]],
            "expected_now_passing": passing_expected}


def run_suite(suite: Suite, args: argparse.Namespace) -> dict[str, Any]:
    cache: Path = args.cache
    version = installed_version(suite.name)
    report: dict[str, Any] = {"suite": suite.name, "version": version}
    try:
        work = cache / "work" / suite.name
        kafka_root = work
        if suite is KAFKA_PYTHON:
            tree = unpack(sdist(suite, version, cache, args.offline), work)
            shutil.copytree(HERE / "overlay" / "kafka-python", tree, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
            report["tests_from"] = f"sdist {suite.name}=={version}"
            kafka_root = tree / "no-kafka-distribution"  # the fixture wants one to exist; with KAFKA_URI it is unused
            kafka_root.mkdir()
        else:
            sdist(suite, version, cache, args.offline)  # checked: ships no tests (see the module docstring)
            tests_tar, ref = confluent_tests(version, args.confluent_source, args.confluent_ref, cache)
            tree = unpack(tests_tar, work)
            report["tests_from"] = f"confluent-kafka-python {ref} (the sdist of {version} ships no tests)"
        python = tools_venv(cache, suite.tools, args.offline)
    except NotCachedError as e:
        report.update(status="not cached", reason=str(e))
        return report
    except NoTestsError as e:
        report.update(status="not run", reason=str(e))
        return report

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(kafkalog_path(cache)), str(HERE)])
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    results = cache / f"{suite.name}-results.jsonl"
    results.unlink(missing_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix=f"{suite.name}-", dir=cache))
    started = time.monotonic()
    try:
        with kafkalog_serve(suite.broker_config, data_dir / "data", env,
                            cache / f"{suite.name}-broker.log") as port:
            run_env = dict(env, PEER_RESULTS=str(results))
            if suite is KAFKA_PYTHON:
                # 4.0.0: the version kafka-python infers from kafkalog's ApiVersions (Kafka 4.0's ranges), so the
                # suite's version gates match what the broker says it is
                run_env.update(KAFKA_URI=f"PLAINTEXT://127.0.0.1:{port}", KAFKA_VERSION=args.kafka_version,
                               KAFKA_ROOT=str(kafka_root))
            else:
                run_env.update(BROKERS=f"127.0.0.1:{port}")
            # the suite's own pytest configuration, less its addopts (pytest-timeout's thread method there ends the
            # whole run at the first hung test; the signal method fails that test alone)
            command = [str(python), "-m", "pytest", *(args.select or suite.paths), "-c", "pyproject.toml",
                       "--rootdir", ".", "-o", "addopts=", "-p", "no:cacheprovider", "-p", "peer_results", "-q",
                       "--timeout", str(args.test_timeout), "--timeout-method", "signal",
                       *(f"--ignore={p}" for p, _ in suite.not_run), *args.pytest_args]
            report["command"] = " ".join(command)
            report["broker_config"] = dict(suite.broker_config)
            with open(cache / f"{suite.name}-pytest.log", "wb") as out:
                proc = subprocess.Popen(command, cwd=tree, env=run_env, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
                try:
                    report["pytest_exit"] = proc.wait(timeout=args.suite_timeout)
                    report["status"] = "ran"
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    report["status"] = f"timed out after {args.suite_timeout} s (the counts are what it reached)"
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    report["duration_s"] = round(time.monotonic() - started, 1)
    report.update(summarize(results, suite))
    report["not_run"] = [{"path": p, "reason": r} for p, r in suite.not_run]
    report["logs"] = {"pytest": str(cache / f"{suite.name}-pytest.log"),
                      "broker": str(cache / f"{suite.name}-broker.log")}
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"== {report['suite']} {report['version']}: {report.get('tests_from', '')}")
    if report.get("status") != "ran":
        print(f"   {report.get('status')}: {report.get('reason', '')}")
        if "counts" not in report:
            return
    c = report["counts"]
    print(f"   {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped, {c['errors']} errors "
          f"in {report['duration_s']} s")
    for f in report["failures"]:
        why = f"expected: {f['expected']}" if f["expected"] else "UNEXPECTED"
        print(f"   {f['outcome'].upper():6} {f['id']}\n          {f['message'][:200]}\n          ({why})")
    for t in report["expected_now_passing"]:
        print(f"   NOW PASSING (listed as expected to fail): {t}")
    skipped: dict[str, int] = {}
    for s in report["skipped"]:
        skipped[s["reason"]] = skipped.get(s["reason"], 0) + 1
    for reason, n in sorted(skipped.items()):
        print(f"   skipped {n}: {reason}")
    for n in report["not_run"]:
        print(f"   not run: {n['path']}: {n['reason']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", choices=sorted(SUITES), help="one suite (repeatable; "
                        "default: both)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="downloads, venv, work trees, logs")
    parser.add_argument("--json", type=Path, help="the summary's file (default: CACHE/summary.json)")
    parser.add_argument("--offline", action="store_true", help="download nothing: exit 3 if not cached")
    parser.add_argument("--confluent-source", type=Path, help="a checkout or git repository of "
                        "confluent-kafka-python, for its tests (its sdist has none)")
    parser.add_argument("--confluent-ref", help="the git ref of those tests (default: v<installed version>)")
    parser.add_argument("--kafka-version", default="4.0.0", help="KAFKA_VERSION for kafka-python's suite")
    parser.add_argument("--test-timeout", type=int, default=60, help="seconds for one test")
    parser.add_argument("--suite-timeout", type=int, default=1200, help="seconds for one suite's whole run")
    parser.add_argument("--select", action="append", metavar="TEST", help="a test id or path to run instead of "
                        "the suite's integration directory (repeatable; relative to the suite's tree)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --), e.g. -k EXPR or test ids")
    args = parser.parse_args(argv)
    args.cache = args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    reports = [run_suite(SUITES[name], args) for name in (args.suite or sorted(SUITES))]
    for report in reports:
        print_report(report)
    out = args.json or args.cache / "summary.json"
    out.write_text(json.dumps(reports, indent=2) + "\n")
    print(f"summary: {out}")
    if any(r.get("status") == "not cached" for r in reports):
        return EXIT_NOT_CACHED
    if any(r.get("status") not in ("ran", "not run") or r.get("unexpected_failures") for r in reports):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
