"""Kafka's tiered storage, read: the layouts a ``RemoteStorageManager`` leaves in a store (KIP-405).

Each layout lists what is under a root of an fsspec filesystem and gives the same thing: the
topic-partitions found (:class:`RemotePartition`), each with its segments in offset order
(:class:`RemoteSegment`: base offset, size of the original ``.log``, :meth:`~RemoteSegment.read` of a byte
range of it, :meth:`~RemoteSegment.index` for the indexes uploaded with it).

- :mod:`~kafkalog.remote.local_tiered`: Kafka's own ``LocalTieredStorage``
  (``<topic>-<partition>-<topicId>/<offset>-<segmentId>.log|.index|...``);
- :mod:`~kafkalog.remote.aiven`: Aiven's tiered-storage plugin (``<prefix><topic>-<topicId>/<partition>/
  <offset>-<segmentId>.log|.indexes|.rsm-manifest``, chunked and optionally zstd-compressed);
- :mod:`~kafkalog.remote.metadata`: the ``__remote_log_metadata`` topic's records, and which segments it
  says were copied.

Layouts read only through ``fs.ls``/``find``/``info``/``size`` and ranged ``fs.cat_file``.  Finding the layout
and building its partitions share one recursive listing of the root (:mod:`~kafkalog.remote.listing`).
"""

from __future__ import annotations

from typing import Any

from ..errors import IllegalArgumentError, RemoteLayoutError
from . import aiven, local_tiered
from .listing import StoreListing, list_store
from .segment import IndexType, RemotePartition, RemoteSegment, SkippedSegment

__all__ = ["LAYOUTS", "LAYOUT_OPTIONS", "IndexType", "RemotePartition", "RemoteSegment", "SkippedSegment",
           "StoreListing", "detect_layout", "list_partitions", "list_store"]

#: The layouts by the name a user gives them (the ``layout`` option).
LAYOUTS = {"kafka-local-tiered-storage": local_tiered, "aiven-tiered-storage": aiven}
#: The options each layout's ``list_partitions`` takes.
LAYOUT_OPTIONS = {"kafka-local-tiered-storage": ("copied",), "aiven-tiered-storage": ("prefix", "copied")}


def detect_layout(fs: Any, root: str, prefix: str | None = None,
                  listing: StoreListing | None = None) -> str | None:
    """The name of the tiered-storage layout under ``root`` (a key of :data:`LAYOUTS`), or ``None`` when it
    is neither (a broker's log dir, say).  Aiven's is found under a prefix of whole directories too, or under
    ``prefix`` when given.  Both are told from one recursive listing of ``root``: ``listing`` when the
    caller made it (to build the partitions from it after), else made here."""
    if listing is None:
        listing = list_store(fs, root)
    if local_tiered.looks_like(fs, root, listing):
        return "kafka-local-tiered-storage"
    if aiven.looks_like(fs, root, prefix, listing):
        return "aiven-tiered-storage"
    return None


def list_partitions(fs: Any, root: str, layout: str | None = None, **options: Any) -> list[RemotePartition]:
    """The partitions under ``root`` in ``layout`` (detected when ``None``); ``options`` go to the layout's
    ``list_partitions`` (``copied=``, and ``prefix=`` for Aiven's).  A layout detected here is listed from the
    listing that detected it."""
    listing = list_store(fs, root) if layout is None else None
    name = layout if layout is not None else detect_layout(fs, root, options.get("prefix"), listing)
    if name is None:
        raise RemoteLayoutError("no tiered-storage layout found (neither Kafka's LocalTieredStorage nor Aiven's "
                                "plugin)", path=str(root))
    if name not in LAYOUTS:
        raise RemoteLayoutError(f"unknown layout {name!r}: use one of {', '.join(LAYOUTS)}")
    unknown = sorted(set(options) - set(LAYOUT_OPTIONS[name]))
    if unknown:
        raise IllegalArgumentError(f"unknown option {', '.join(unknown)} for layout {name}: it takes "
                                   f"{', '.join(LAYOUT_OPTIONS[name])}")
    if name == "aiven-tiered-storage":
        return aiven.list_partitions(fs, root, listing=listing, **options)
    return local_tiered.list_partitions(fs, root, listing=listing, **options)
