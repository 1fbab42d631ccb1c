"""FIFOs, sockets and devices named like a log's files (issue 15, defect 12).

Opening a FIFO for reading blocks until a writer comes, so a FIFO named ``00000000000000000000.index``
used to hang every opener of its directory forever: ``Log``, ``LogManager`` in both modes, and the
``verify``, ``stats``, ``recover``, ``clean`` and ``dump`` commands.  kafkalog now opens its files with
``fsutil.open_regular``, which checks the type first and opens without blocking: such a file is a
:class:`~kafkalog.errors.KafkaStorageError` naming it, or, where the loader passes over files that are not
segments (a ``.log`` that is not a regular file is not one), it is passed over.

Every opener runs in one child interpreter, each under a 5-second alarm, so that a hang shows as ``HANG``
in the child's report instead of hanging the test suite.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fault_utils import run_child

PARTITION_FILES = [
    "00000000000000000000.log",
    "00000000000000000000.index",
    "00000000000000000000.timeindex",
    "00000000000000000005.index",
    "00000000000000000005.timeindex",
    "00000000000000000005.txnindex",
    "00000000000000000006.snapshot",
    "leader-epoch-checkpoint",
    "partition.metadata",
]
ROOT_FILES = [
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "meta.properties",
]

_CHILD = r"""
import contextlib, io, os, shutil, signal, socket, stat, sys, traceback
from pathlib import Path
from kafkalog import MemoryRecords
from kafkalog.cli import main
from kafkalog.errors import KafkaLogError
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.topic import TopicPartition

base, kind = Path(sys.argv[1]), sys.argv[2]
names = sys.argv[3:]


class Hang(BaseException):
    pass


def alarm(signum, frame):
    raise Hang()


signal.signal(signal.SIGALRM, alarm)


template = base / "template"
with LogManager([template]) as manager:
    log = manager.get_or_create_log(TopicPartition("t", 0))
    for i in range(5):
        log.append(MemoryRecords.with_records([(b"k", b"v", 1_700_000_000_000 + i)]))
    log.roll()
    log.append(MemoryRecords.with_records([(b"k", b"v", 1_700_000_000_010)]))


def build(name):
    root = base / "root"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(template, root)
    partition = root / "t-0"
    path = (partition if name.startswith(("0", "leader", "partition")) else root) / name
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        sockets.append(s)
    else:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    return root, partition, path


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    text = out.getvalue() + err.getvalue()
    return status, text


openers = {
    "Log": lambda root, partition, path: Log(partition).close(),
    "Log-read-only": lambda root, partition, path: Log(partition, read_only=True).close(),
    "LogManager": lambda root, partition, path: LogManager([root]).shutdown(),
    "LogManager-read-only": lambda root, partition, path: LogManager([root], read_only=True).shutdown(),
    "verify": lambda root, partition, path: cli("--no-progress", "verify", str(partition)),
    "stats": lambda root, partition, path: cli("--no-progress", "stats", str(partition)),
    "recover": lambda root, partition, path: cli("--no-progress", "recover", str(partition)),
    "clean": lambda root, partition, path: cli("--no-progress", "clean", "--config", "cleanup.policy=compact",
                                               str(partition)),
    "dump": lambda root, partition, path: cli("--no-progress", "dump", "--files", str(path)),
}
sockets = []
for name in names:
    for opener, run in openers.items():
        root, partition, path = build(name)
        signal.alarm(5)
        try:
            result = run(root, partition, path)
            if isinstance(result, tuple):
                status, text = result
                outcome = f"status {status} named={name in text} traceback={'Traceback' in text}"
            else:
                outcome = "ok"
        except Hang:
            outcome = "HANG"
        except KafkaLogError as e:
            outcome = f"error {type(e).__name__} named={name in str(e)}"
        except BaseException as e:
            outcome = "foreign " + "".join(traceback.format_exception_only(e)).strip().replace("\n", " ")
        finally:
            signal.alarm(0)
        print(name, opener, outcome, flush=True)
        for s in sockets:
            s.close()
        sockets.clear()
"""


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path (a UNIX socket's path must fit 108 bytes), on tmpfs where there is one
    (the logs built for each opener are fsynced)."""
    parent = next((p for p in ("/dev/shm", "/tmp") if os.path.isdir(p) and os.access(p, os.W_OK)), None)
    directory = Path(tempfile.mkdtemp(prefix="kl-", dir=parent))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _can_mknod(directory: Path) -> bool:
    probe = directory / "probe"
    try:
        os.mknod(probe, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (OSError, AttributeError):
        return False
    probe.unlink()
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="no FIFOs, sockets or device nodes")
@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_no_opener_blocks_on_a_special_file(short_dir: Path, kind: str) -> None:
    if kind == "device" and not _can_mknod(short_dir):
        pytest.skip("making a device node is not permitted here")
    names = PARTITION_FILES + ROOT_FILES
    result = run_child(_CHILD, "cython" if kind != "fifo" else "python", str(short_dir), kind, *names,
                       timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(names) * 9, result.stdout + result.stderr
    # A hang, a foreign exception or a traceback is a failure; so is an error that does not name the file.
    # Success is fine: a loader passes over a file that is not a segment (a .log that is not a regular
    # file), and what a command does not read, it does not open.
    problems = [line for line in lines if "HANG" in line or "foreign" in line or "traceback=True" in line
                or (("error" in line or "status 2" in line) and "named=False" in line)]
    assert not problems, "\n".join(problems)
