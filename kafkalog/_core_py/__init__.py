"""The kernels in plain Python: the readable reference, and the fallback when ``_core`` is not built.

Every function here has a twin of the same name, signature and behaviour in ``_core.pyx``; the test
suite runs both through one fixture, so a difference between them is a failing test.  This package is
written to be read next to Kafka's Java: each kernel names the Kafka code whose rules it applies.

It is split by kernel family as the compiled twin is (``_core.pyx`` includes ``_core_pyx/<family>.pxi``),
so each kernel and its twin sit side by side, module for include file:

* ``crc``: CRC-32C and CRC-32;
* ``scan``: the batch scan and the offset search over a byte range;
* ``index``: the offset and time index searches;
* ``decode``: v2 records and v0/v1 messages to columns or ``Record`` objects,
  the Arrow gather, and LZ4 blocks that keep the block format's rules;
* ``encode``: the records section of a v2 batch, v0/v1 messages, and the cleaner's rewrite of plain v2 batches;
* ``offset_map``: SkimpyOffsetMap's probing and the cleaner's passes over it;
* ``validate``: the validator's per-record pass over a v2 batch, and its one-batch leader path.

The kernels are used from here, ``kafkalog._core_py.NAME``, the same names ``kafkalog._core`` has.

Kernels take the buffer as an argument and keep no view of it after they return (the mmap rule in
``docs/design.md`` §3), so an mmap they were given can still be resized or closed.  Buffers are any
object with the buffer protocol: ``bytes``, ``bytearray``, ``memoryview``, ``mmap.mmap``.

Errors are kafkalog's own (:mod:`kafkalog.errors`) and carry the byte position of the bad entry.
"""

from __future__ import annotations

from .crc import crc32, crc32c, crc32c_hardware, set_crc32c_software
from .decode import (
    Record,
    decode_legacy_records,
    decode_v2_batch_objects,
    decode_v2_batches,
    decode_v2_record_objects,
    decode_v2_record_objects_chunk,
    decode_v2_records,
    decode_v2_records_chunk,
    gather_slices,
    lz4_decode_block,
    records_in_range,
)
from .encode import (
    encode_legacy_messages,
    encode_v2_record_inputs,
    encode_v2_records,
    filter_v2_batches,
    split_records,
)
from .index import index_lookup, index_points, index_search
from .offset_map import (
    md5,
    offset_map_get,
    offset_map_latest_codes,
    offset_map_position_of,
    offset_map_put,
    offset_map_put_records,
)
from .scan import producer_fields, scan_batches, search_for_offset, single_entry_magic
from .validate import assign_offsets_v2_batch, leader_append_v2_batch, validate_v2_records

__all__ = [
    "IMPLEMENTATION",
    "Record",
    "assign_offsets_v2_batch",
    "crc32",
    "crc32c",
    "crc32c_hardware",
    "decode_legacy_records",
    "decode_v2_batch_objects",
    "decode_v2_batches",
    "decode_v2_record_objects",
    "decode_v2_record_objects_chunk",
    "decode_v2_records",
    "decode_v2_records_chunk",
    "encode_legacy_messages",
    "encode_v2_record_inputs",
    "encode_v2_records",
    "filter_v2_batches",
    "gather_slices",
    "index_lookup",
    "index_points",
    "lz4_decode_block",
    "md5",
    "offset_map_get",
    "offset_map_latest_codes",
    "offset_map_position_of",
    "offset_map_put",
    "offset_map_put_records",
    "index_search",
    "leader_append_v2_batch",
    "records_in_range",
    "scan_batches",
    "search_for_offset",
    "set_crc32c_software",
    "producer_fields",
    "single_entry_magic",
    "split_records",
    "validate_v2_records",
]

IMPLEMENTATION = "python"
