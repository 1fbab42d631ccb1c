# cython: freethreading_compatible = False
"""The compiled kernels: the loops that touch every byte of a log, over typed memoryviews.

Twin of ``kafkalog/_core_py/``: the same functions, signatures, results and errors, checked by
one test suite and timed side by side by ``kafkalog.bench``.  Read the plain twin to learn what a kernel
does; read this one to see how it is made fast:

* buffers arrive as ``const unsigned char[::1]`` (bytes, bytearray, memoryview or mmap) and are
  released when the call returns, so no view of an mmap outlives the call (design.md §3);
* fixed-width fields are read with the big-endian helpers of ``_kernels.h`` (memcpy + bswap);
* CRC-32C runs three crc32q chains on SSE4.2 CPUs and a slicing-by-8 table elsewhere;
* results are written through packed structs straight into numpy structured arrays whose dtypes
  are defined once, in ``_common.py``;
* errors are found in C and raised by one Python function, with the plain twin's messages.

The source is split by kernel family into Cython include files, as msgpack-python builds one extension
from several: this file holds what every family shares (the C helpers of ``_kernels.h``, the layout
constants, the row structs) and includes the families from ``_core_pyx/``, each the twin of the module
of the same name in ``_core_py/``:

* ``crc.pxi``: CRC-32C and CRC-32;
* ``scan.pxi``: the batch scan and the offset search over a byte range;
* ``index.pxi``: the offset and time index searches;
* ``decode.pxi``: v2 records and v0/v1 messages to columns or Record objects, the Arrow gather, and
  LZ4 blocks that keep the block format's rules;
* ``encode.pxi``: the records section of a v2 batch, and v0/v1 messages;
* ``offset_map.pxi``: SkimpyOffsetMap's probing and the cleaner's passes over it;
* ``validate.pxi``: the validator's per-record pass over a v2 batch.

Compiler directives are set in one place, ``setup.py`` (``KAFKALOG_CYTHON_DEBUG=1`` turns the checks
back on).
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject, PyTypeObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.type cimport PyType_Modified
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np

from ._common import BATCH_DTYPE, HEADER_DTYPE, RECORD_DTYPE, ControlRecordType, TimestampType
from ._java_utf8 import JAVA_UTF8
from .errors import CorruptRecordError, InvalidRecordError, UnsupportedMagicError

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
    "producer_fields",
    "records_in_range",
    "scan_batches",
    "search_for_offset",
    "set_crc32c_software",
    "single_entry_magic",
    "split_records",
    "validate_v2_records",
]

IMPLEMENTATION = "cython"


cdef extern from "_kernels.h" nogil:
    int64_t kl_get_i64(const unsigned char *p)
    int32_t kl_get_i32(const unsigned char *p)
    uint32_t kl_get_u32(const unsigned char *p)
    int16_t kl_get_i16(const unsigned char *p)
    void kl_put_i64(unsigned char *p, int64_t x)
    void kl_put_i32(unsigned char *p, int32_t x)
    void kl_put_i16(unsigned char *p, int16_t x)
    void kl_crc_init()
    void kl_crc32c_force_software(int on)
    uint32_t kl_crc32c(uint32_t crc, const unsigned char *p, size_t n)
    uint32_t kl_crc32(uint32_t crc, const unsigned char *p, size_t n)
    int kl_have_sse42
    void kl_md5(const unsigned char *p, size_t n, unsigned char out[16])
    void kl_prefetch(const void *p)
    void kl_prefetch_read(const void *p)
    void kl_md5_many(const unsigned char *const *keys, const int32_t *lens, int n, unsigned char (*out)[16])


kl_crc_init()

# Layout constants (the values of kafkalog/_common.py, as C constants for the loops).
cdef enum:
    LOG_OVERHEAD = 12
    LENGTH_OFFSET = 8
    MAGIC_OFFSET = 16
    HEADER_SIZE_UP_TO_MAGIC = 17
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    MAX_TIMESTAMP_OFFSET = 35
    RECORDS_COUNT_OFFSET = 57
    BASE_TIMESTAMP_OFFSET = 27
    PRODUCER_ID_OFFSET = 43
    PRODUCER_EPOCH_OFFSET = 51
    COMPRESSION_CODEC_MASK = 0x07
    TIMESTAMP_TYPE_MASK = 0x08
    TRANSACTIONAL_FLAG_MASK = 0x10
    CONTROL_FLAG_MASK = 0x20
    DELETE_HORIZON_FLAG_MASK = 0x40
    # filter_v2_batches' word on a batch (_common.FILTER_RETAIN_EMPTY, FILTER_EMPTY_TXN_MARKER)
    FILTER_RETAIN_EMPTY = 1
    FILTER_EMPTY_TXN_MARKER = 2
    RECORD_BATCH_OVERHEAD = 61
    MIN_RECORD_OVERHEAD = 14
    RECORD_OVERHEAD_V1 = 22
    MIN_V2_RECORD_SIZE = 7
    LEGACY_COMPRESSION_MASK = 0x07
    # CRC work below this many bytes is not worth giving the GIL away for.
    NOGIL_CRC_BYTES = 65536
    WARM_SECTION_BYTES = 8192

# ScanStop values (kafkalog._common.ScanStop).
cdef enum:
    STOP_END = 0
    STOP_PARTIAL = 1
    STOP_SIZE_TOO_SMALL = 2
    STOP_TOO_LARGE = 3
    STOP_BAD_MAGIC = 4
    STOP_BAD_CRC = 5
    STOP_LIMIT = 6
    STOP_ZERO_TAIL = 7

cdef packed struct BatchRow:
    int64_t position
    int32_t size
    int64_t base_offset
    int64_t last_offset
    int64_t max_timestamp
    uint32_t crc
    int32_t record_count
    int16_t attributes
    int8_t magic
    int8_t valid

cdef packed struct RecordRow:
    int64_t offset
    int64_t timestamp
    int64_t key_pos
    int64_t value_pos
    int32_t key_len
    int32_t value_len
    int32_t header_index
    int32_t header_count
    uint32_t crc
    int8_t attributes
    int8_t magic
    int16_t pad

cdef packed struct HeaderRow:
    int64_t key_pos
    int64_t value_pos
    int32_t key_len
    int32_t value_len


# The codec error handler header keys are decoded with: malformed UTF-8 replaced as Java's decoder replaces it
# (importing the module registers it).
cdef bytes _JAVA_UTF8_ERRORS = JAVA_UTF8.encode("ascii")

include "_core_pyx/crc.pxi"
include "_core_pyx/scan.pxi"
include "_core_pyx/index.pxi"
include "_core_pyx/decode.pxi"
include "_core_pyx/encode.pxi"
include "_core_pyx/offset_map.pxi"
include "_core_pyx/validate.pxi"
