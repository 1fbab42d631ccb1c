"""Decoded record columns to Arrow record batches with the columns of Spark's Kafka source.

Spark's Kafka source gives these columns; the ``kafkalog`` data source gives the same, typed as Spark
turns them into Arrow (``pyspark.sql.pandas.types.to_arrow_schema`` with the UTC time zone, which the
Python data-source worker checks field for field):

=============  ===========================================  ============================================
column         Arrow type                                   from
=============  ===========================================  ============================================
key            binary                                       the record's key (null for Kafka's -1)
value          binary                                       the record's value (null: a tombstone)
topic          string                                       the partition dir's name
partition      int32                                        the partition dir's name
offset         int64                                        the record's absolute offset
timestamp      timestamp[us, UTC]                           the record's timestamp (ms) * 1000; for a
                                                            LogAppendTime batch the broker's append time
timestampType  int32                                        0 CreateTime, 1 LogAppendTime, -1 none (v0)
headers        list<struct<key: string, value: binary>>     v2 record headers (``includeHeaders`` only)
=============  ===========================================  ============================================

The columns come straight from the record-decode kernels' output (:class:`~kafkalog.record.RecordColumns`):
keys, values and header fields are copied into Arrow's variable-width layout by the ``gather_slices``
kernel, one ``memcpy`` per field, and the fixed-width columns are numpy arrays handed to Arrow without a
Python object per record.  The columns are a consumer's read (:mod:`kafkalog.log.consumer_view`): records outside
the requested offsets were cut, and control batches and (for ``read_committed``) aborted transactional batches were
left undecoded, before they reach this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import MAGIC_V0, TIMESTAMP_TYPE_MASK
from .._java_utf8 import JAVA_UTF8

if TYPE_CHECKING:
    import pyarrow as pa

    from ..record import RecordColumns

__all__ = ["SPARK_SCHEMA", "SPARK_SCHEMA_WITH_HEADERS", "arrow_schema", "to_arrow"]

#: The data source's schema in Spark's DDL, without and with the ``headers`` column.
SPARK_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
                "timestampType int")
SPARK_SCHEMA_WITH_HEADERS = SPARK_SCHEMA + ", headers array<struct<key: string, value: binary>>"


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema of the batches :func:`to_arrow` makes (what Spark expects for :data:`SPARK_SCHEMA`)."""
    import pyarrow as pa

    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", pa.list_(pa.field("element", _header_type()))))
    return pa.schema(fields)


def _header_type() -> pa.DataType:
    import pyarrow as pa

    return pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])


def _variable_width(kind: pa.DataType, data: Any, positions: npt.NDArray[Any], lengths: npt.NDArray[Any]) -> pa.Array:
    """A binary or string Arrow array of the slices of ``data`` (null where a length is negative)."""
    import pyarrow as pa

    offsets, values = _impl.core.gather_slices(data, np.ascontiguousarray(positions, dtype=np.int64),
                                               np.ascontiguousarray(lengths, dtype=np.int32))
    nulls = lengths < 0
    null_count = int(np.count_nonzero(nulls))
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(kind, len(positions), [validity, pa.py_buffer(offsets), pa.py_buffer(values)],
                                 null_count=null_count)


def _repeated_string(text: str, n: int) -> pa.Array:
    import pyarrow as pa

    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def _fixed(kind: pa.DataType, values: npt.NDArray[Any]) -> pa.Array:
    import pyarrow as pa

    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(np.ascontiguousarray(values))])


def _headers(columns: RecordColumns, records: npt.NDArray[Any]) -> pa.Array:
    """The ``headers`` column: record ``i`` holds headers ``header_index .. header_index + header_count``."""
    import pyarrow as pa

    counts = records["header_count"].astype(np.int64)
    list_offsets = np.zeros(len(records) + 1, dtype=np.int32)
    np.cumsum(counts, out=list_offsets[1:])
    total = int(list_offsets[-1])
    first = records["header_index"].astype(np.int64)
    taken = np.arange(total, dtype=np.int64) + np.repeat(first - list_offsets[:-1], counts)
    headers = columns.headers[taken] if total else columns.headers[:0]
    keys = _variable_width(pa.string(), columns.data, headers["key_pos"], headers["key_len"])
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:
        # Kafka writes header keys as UTF-8 Java strings; a foreign writer may not have, and then the key is
        # the string Kafka's own reader makes of the bytes (Java's replacements, not Python's).
        keys = pa.array([None if k is None else k.decode("utf-8", JAVA_UTF8)
                         for k in _variable_width(pa.binary(), columns.data, headers["key_pos"],
                                                  headers["key_len"]).to_pylist()], pa.string())
    values = _variable_width(pa.binary(), columns.data, headers["value_pos"], headers["value_len"])
    structs = pa.StructArray.from_arrays([keys, values], fields=list(_header_type()))
    return pa.ListArray.from_arrays(pa.array(list_offsets, type=pa.int32()), structs,
                                    type=pa.list_(pa.field("element", _header_type())))


def to_arrow(columns: RecordColumns, *, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """Every record of ``columns`` as one Arrow record batch of the data source's schema.

    ``columns`` are a consumer's (:meth:`ConsumerView.segment_columns
    <kafkalog.log.consumer_view.ConsumerView.segment_columns>`, :meth:`Log.record_columns
    <kafkalog.log.reads.LogReads.record_columns>`): cut to the range, without control and aborted batches, which
    were never decoded, so nothing is dropped here.  Their batch rows (``batches`` and ``starts``, which
    :meth:`~kafkalog.record.memory.MemoryRecords.record_columns` gives too) say each record's timestamp type."""
    import pyarrow as pa

    records = columns.records
    batches = columns.batches
    starts = columns.starts
    if batches is None or starts is None:
        raise ValueError("to_arrow needs the columns' batch rows (MemoryRecords.record_columns gives them)")
    n = len(records)
    # Bit 3 of a v1 message's or a v2 batch's attributes: LogAppendTime.  Worked out per batch, then repeated
    # over each batch's span of records.
    per_batch = np.where(batches["magic"] == MAGIC_V0, -1,
                         (batches["attributes"] & TIMESTAMP_TYPE_MASK) != 0).astype(np.int32)
    timestamp_type = np.repeat(per_batch, np.diff(starts))
    arrays = [
        _variable_width(pa.binary(), columns.data, records["key_pos"], records["key_len"]),
        _variable_width(pa.binary(), columns.data, records["value_pos"], records["value_len"]),
        _repeated_string(topic, n),
        _fixed(pa.int32(), np.full(n, partition, dtype=np.int32)),
        _fixed(pa.int64(), records["offset"].astype(np.int64)),
        _fixed(pa.timestamp("us", tz="UTC"), records["timestamp"].astype(np.int64) * 1000),
        _fixed(pa.int32(), timestamp_type),
    ]
    if include_headers:
        arrays.append(_headers(columns, records))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))
