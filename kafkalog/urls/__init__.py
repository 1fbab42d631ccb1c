"""Reading Kafka logs from wherever they are: a local path (the fast path) or a URL of any filesystem fsspec
knows (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ``memory://``), read-only, through ranged reads.

- :mod:`~kafkalog.urls.location`: a path or URL and its options, the filesystem built lazily;
- :mod:`~kafkalog.urls.channel`: a ``.log`` object as a read-only ``FileMessageSet``, an index object;
- :mod:`~kafkalog.urls.partition`: log dirs and partition dirs at a URL, opened as a read-only ``Log``.

Needs the ``storage`` extra (``pip install 'kafkalog[storage]'``: fsspec and s3fs; ``gcs``, ``azure`` and
``hdfs`` add the other filesystems; the extra keeps its published name, ``storage``).  kafkalog's, no Kafka
counterpart.

The package is named for what it reads, URLs, and not ``storage``: in Kafka "storage" is the module of
segments, indexes and producer state (``org.apache.kafka.storage.internals.log``), which here are
:mod:`kafkalog.segment`, :mod:`kafkalog.index` and :mod:`kafkalog.producer_state`.  :mod:`~kafkalog.urls.files`
and :mod:`~kafkalog.urls.channel` belong here too: they read a broker's files (checkpoints, snapshots,
indexes, ``.log`` objects) by ranged reads through a :class:`StorageLocation`, where the segment layer reads
local files through a mapped or open file.  This layer sits below the tiered-storage readers
(:mod:`kafkalog.remote`), the tools, the CLI and the Spark source.
"""

from __future__ import annotations

from .location import Storage, StorageLocation, is_url, locate, parse_storage_options

__all__ = ["Storage", "StorageLocation", "is_url", "locate", "parse_storage_options"]
