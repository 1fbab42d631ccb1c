"""A partition wherever it lies, read-only: the one read model below the Spark source and the CLI.

A partition is a broker's partition dir on the local disk, one copied to a URL (:mod:`kafkalog.urls`), or a
partition of a tiered-storage layout (:mod:`kafkalog.remote`); each is read through the same shapes:

- :mod:`~kafkalog.partition_view.sources`: where its segments come from (:class:`SegmentSource`: a local dir,
  a dir at a URL, a tiered layout's segments), a segment's ``.log`` opened read-only and an offset's position
  found in it;
- :mod:`~kafkalog.partition_view.tiered`: the partitions of a tiered layout found at a path, and their log end
  offset, the offsets of timestamps and the aborted transactions, from what the layout uploaded;
- :mod:`~kafkalog.partition_view.facts`: what a reader learns of any of them (:class:`PartitionFacts`: log
  start and end offsets, segments, offsets of timestamps, transactions) and the broker partition dirs a path
  or URL names.

It sits above the log, the tools, :mod:`kafkalog.urls` and :mod:`kafkalog.remote`, and below
:mod:`kafkalog.spark` (which turns the facts into read tasks and Arrow) and :mod:`kafkalog.cli`; it imports
neither of those, nor PySpark.  kafkalog's, no Kafka counterpart.
"""

from __future__ import annotations

from .facts import Found, PartitionFacts, partition_dirs_at, partition_facts
from .sources import LocalDir, SegmentSource, UrlDir

__all__ = ["Found", "LocalDir", "PartitionFacts", "SegmentSource", "UrlDir", "partition_dirs_at", "partition_facts"]
