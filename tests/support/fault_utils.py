"""Helpers for the tests that could kill or hang the test runner: a child interpreter to run them in,
and a small filesystem to fill.

A SIGBUS kills the process that takes it, and a blocking ``open`` never returns, so a test that checks
that neither happens any more runs the operation in a child interpreter with a time limit: a signal
then shows as a negative return code, a hang as a timeout, and the test fails instead of the suite.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What a child may take before it is taken for hung.
CHILD_TIMEOUT = 30.0


def child_env(impl_name: str) -> dict[str, str]:
    """The environment of a child interpreter that runs the ``impl_name`` kernel twin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALOG_")}
    if impl_name == "python":
        env["KAFKALOG_PURE_PYTHON"] = "1"
    else:
        env["KAFKALOG_REQUIRE_EXTENSION"] = "1"
    return env


def run_child(code: str, impl_name: str, *args: str, timeout: float = CHILD_TIMEOUT,
              check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on the ``impl_name`` twin, with ``args`` as ``sys.argv[1:]``.

    With ``check`` a child killed by a signal, or one that ran past ``timeout``, fails the test with what
    it printed; otherwise the result is returned whatever the return code.
    """
    try:
        result = subprocess.run([sys.executable, "-c", code, *args], env=child_env(impl_name), cwd=str(ROOT),
                                capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child hung (no answer in {timeout} s); it printed {e.stdout!r} {e.stderr!r}")
    if check and result.returncode < 0:
        name = signal.Signals(-result.returncode).name
        pytest.fail(f"the child was killed by {name}; stdout {result.stdout!r}, stderr {result.stderr[-2000:]!r}")
    return result


def _mount_tmpfs(target: Path, size: int) -> str | None:
    """Mount a tmpfs of ``size`` bytes at ``target``; ``None`` when done, else why it could not be."""
    if not sys.platform.startswith("linux"):
        return "tmpfs mounts are a Linux feature"
    mount = shutil.which("mount")
    if mount is None:
        return "no mount command"
    try:
        result = subprocess.run([mount, "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(target)],
                                capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"mount failed: {e}"
    if result.returncode != 0:
        return f"mounting a tmpfs is not permitted here: {result.stderr.strip() or result.returncode}"
    return None


def _unmount(target: Path) -> None:
    umount = shutil.which("umount")
    if umount is not None:
        subprocess.run([umount, "-l", str(target)], capture_output=True, timeout=30, check=False)


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A directory on a tmpfs of 1 MiB of its own, unmounted afterwards; the test is skipped, saying why,
    where a tmpfs cannot be mounted (not root, not Linux, no mount permission in a container)."""
    target = Path(tempfile.mkdtemp(prefix="kafkalog-small-fs-"))
    reason = _mount_tmpfs(target, 1 << 20)
    if reason is not None:
        target.rmdir()
        pytest.skip(reason)
    try:
        yield target
    finally:
        _unmount(target)
        shutil.rmtree(target, ignore_errors=True)


def _mount_ext4(target: Path, image: Path, size: int) -> str | None:
    """Make an ext4 filesystem of ``size`` bytes in ``image`` and mount it at ``target`` through a loop
    device; ``None`` when done, else why it could not be."""
    mkfs = shutil.which("mkfs.ext4") or shutil.which("mkfs.ext4", path="/sbin:/usr/sbin")
    mount = shutil.which("mount")
    if not sys.platform.startswith("linux") or mkfs is None or mount is None:
        return "no mkfs.ext4 or mount command"
    with open(image, "wb") as f:
        f.truncate(size)
    try:
        made = subprocess.run([mkfs, "-q", "-F", str(image)], capture_output=True, text=True, timeout=60,
                              check=False)
        if made.returncode != 0:
            return f"mkfs.ext4 failed: {made.stderr.strip()}"
        mounted = subprocess.run([mount, "-o", "loop", str(image), str(target)], capture_output=True, text=True,
                                 timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"mount failed: {e}"
    if mounted.returncode != 0:
        return f"mounting a loop device is not permitted here: {mounted.stderr.strip() or mounted.returncode}"
    return None


@pytest.fixture(params=["tmpfs", "ext4"])
def small_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A directory on a small filesystem of its own: a 1 MiB tmpfs, or an 8 MiB ext4 on a loop device
    (where a page written through a map into a sparse file has no block when the disk is full, as on a
    broker's disk); skipped, saying why, where it cannot be mounted."""
    target = Path(tempfile.mkdtemp(prefix="kafkalog-small-fs-"))
    if request.param == "tmpfs":
        reason = _mount_tmpfs(target, 1 << 20)
    else:
        reason = _mount_ext4(target, tmp_path / "ext4.img", 8 << 20)
    if reason is not None:
        target.rmdir()
        pytest.skip(reason)
    try:
        yield target
    finally:
        _unmount(target)
        shutil.rmtree(target, ignore_errors=True)


def fill(directory: Path, name: str = "filler") -> Path:
    """Fill the filesystem of ``directory`` to the last byte with a file ``name``; returns its path."""
    path = directory / name
    block = b"\xaa" * 4096
    with open(path, "ab", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\xaa")
        except OSError:
            pass
    return path
