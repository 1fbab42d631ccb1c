"""Small file-system helpers the log and the log manager share."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_dir", "raise_open_file_limit"]


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory, so that new files and renames in it survive a crash (Kafka: ``Utils.flushDir``).

    Where a platform cannot open or sync a directory this does nothing, as Kafka's does.
    """
    try:
        fd = os.open(Path(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def raise_open_file_limit() -> None:
    """Raise the soft limit on open files to the hard limit.

    Every segment keeps its log file open, as a broker's does, and the usual default soft limit (1024) is
    smaller than a broker's logs need; brokers are run with a raised limit for the same reason.
    """
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard or hard == resource.RLIM_INFINITY:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass
