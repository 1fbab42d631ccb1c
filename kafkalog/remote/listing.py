"""One listing of a store: everything under a root, from one recursive ``fs.find``.

Telling which tiered-storage layout is at a root and building its partitions both need what is under the
root, to any depth (Aiven's keys sit three levels below its prefix, LocalTieredStorage's files two or three).
On an object store a recursive listing is one paginated ``LIST`` of the keys under a prefix, so
:func:`list_store` is called once and its :class:`StoreListing` is handed to
:func:`kafkalog.remote.detect_layout`, to each layout's ``looks_like`` and ``list_partitions``, rather than
each listing the root again (or, for LocalTieredStorage, each partition directory).

A :class:`StoreListing` holds the root as the filesystem names it (no protocol, no trailing ``/``), the files
under it with their sizes, and its directories (those the store reports, and every parent of a file: an
object store has no directories, only the ``/`` in its keys).  kafkalog's, no Kafka counterpart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["StoreListing", "list_store", "normal_root", "store_root"]


def normal_root(root: str) -> str:
    """``root`` without a trailing ``/`` (the filesystem's root stays ``/``)."""
    return str(root).rstrip("/") or "/"


def store_root(fs: Any, root: str) -> str:
    """``root`` as ``fs`` names what it lists (its ``_strip_protocol``: fsspec's memory filesystem roots every
    path at ``/``, say), without a trailing ``/``."""
    return normal_root(fs._strip_protocol(str(root)))


@dataclass(frozen=True)
class StoreListing:
    """What was under ``root`` when it was listed: ``files`` (full path to size) and ``directories`` (full
    paths, the root not among them)."""

    root: str
    files: Mapping[str, int]
    directories: frozenset[str]

    def relative(self, path: str) -> str:
        """``path`` relative to the root, without a leading ``/``."""
        return path[len(self.root):].lstrip("/") if self.root != "/" else path.lstrip("/")

    def children(self, directory: str) -> Iterator[tuple[str, bool]]:
        """``(name, is_directory)`` of each entry directly in ``directory`` (a full path), in name order."""
        base = normal_root(directory)
        prefix = "/" if base == "/" else base + "/"
        found = {p[len(prefix):]: False for p in self.files if p.startswith(prefix) and "/" not in p[len(prefix):]}
        found.update({p[len(prefix):]: True for p in self.directories
                      if p.startswith(prefix) and p != base and "/" not in p[len(prefix):]})
        yield from sorted(found.items())


def list_store(fs: Any, root: str) -> StoreListing:
    """The one recursive listing of ``root`` (``fs.find(root, detail=True, withdirs=True)``).  A root that
    does not exist lists as empty, as ``find`` gives it."""
    root = store_root(fs, root)
    found: dict[str, dict[str, Any]] = fs.find(root, detail=True, withdirs=True)
    files: dict[str, int] = {}
    directories: set[str] = set()
    for name, info in found.items():
        path = normal_root(str(name))
        if info.get("type") == "directory":
            directories.add(path)
        else:
            files[path] = int(info.get("size") or 0)
        # An object store's "directories" are the keys' prefixes: every parent under the root is one.
        parent = path.rsplit("/", 1)[0] if "/" in path.lstrip("/") else root
        while parent.startswith(root) and len(parent) > len(root):
            directories.add(parent)
            parent = parent.rsplit("/", 1)[0]
    directories.discard(root)
    return StoreListing(root, files, frozenset(directories))
