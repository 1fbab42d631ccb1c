"""Reading Kafka logs from wherever they are: a local path (the fast path) or a URL of any filesystem fsspec
knows (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ``memory://``), read-only, through ranged reads.

- :mod:`~kafkalog.storage.location`: a path or URL and its options, the filesystem built lazily;
- :mod:`~kafkalog.storage.channel`: a ``.log`` object as a read-only ``FileMessageSet``, an index object;
- :mod:`~kafkalog.storage.partition`: log dirs and partition dirs at a URL, opened as a read-only ``Log``.

Needs the ``storage`` extra (``pip install 'kafkalog[storage]'``: fsspec and s3fs; ``gcs``, ``azure`` and
``hdfs`` add the other filesystems).  kafkalog's, no Kafka counterpart.
"""

from __future__ import annotations

from .location import Storage, StorageLocation, is_url, locate, parse_storage_options

__all__ = ["Storage", "StorageLocation", "is_url", "locate", "parse_storage_options"]
