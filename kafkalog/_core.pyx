# cython: freethreading_compatible = False
"""The compiled kernels: the loops that touch every byte of a log, over typed memoryviews.

Twin of ``kafkalog/_core_py.py``: the same functions, signatures, results and errors, checked by
one test suite and timed side by side by ``bench/``.  Read the plain twin to learn what a kernel
does; read this one to see how it is made fast:

* buffers arrive as ``const unsigned char[::1]`` (bytes, bytearray, memoryview or mmap) and are
  released when the call returns, so no view of an mmap outlives the call (design.md §3);
* fixed-width fields are read with the big-endian helpers of ``_kernels.h`` (memcpy + bswap);
* CRC-32C runs three crc32q chains on SSE4.2 CPUs and a slicing-by-8 table elsewhere;
* results are written through packed structs straight into numpy structured arrays whose dtypes
  are defined once, in ``_common.py``;
* errors are found in C and raised by one Python function, with the plain twin's messages.

Compiler directives are set in one place, ``setup.py`` (``KAFKALOG_CYTHON_DEBUG=1`` turns the checks
back on).
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np

from ._common import BATCH_DTYPE, HEADER_DTYPE, RECORD_DTYPE, TimestampType
from .errors import CorruptRecordError, InvalidRecordError, UnsupportedMagicError

__all__ = [
    "IMPLEMENTATION",
    "Record",
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
    "encode_v2_records",
    "gather_slices",
    "index_lookup",
    "index_points",
    "md5",
    "offset_map_get",
    "offset_map_latest_codes",
    "offset_map_position_of",
    "offset_map_put",
    "offset_map_put_records",
    "index_search",
    "scan_batches",
    "search_for_offset",
    "set_crc32c_software",
]

IMPLEMENTATION = "cython"


cdef extern from "_kernels.h" nogil:
    int64_t kl_get_i64(const unsigned char *p)
    int32_t kl_get_i32(const unsigned char *p)
    uint32_t kl_get_u32(const unsigned char *p)
    int16_t kl_get_i16(const unsigned char *p)
    void kl_put_i64(unsigned char *p, int64_t x)
    void kl_crc_init()
    void kl_crc32c_force_software(int on)
    uint32_t kl_crc32c(uint32_t crc, const unsigned char *p, size_t n)
    uint32_t kl_crc32(uint32_t crc, const unsigned char *p, size_t n)
    int kl_have_sse42
    void kl_md5(const unsigned char *p, size_t n, unsigned char out[16])
    void kl_prefetch(const void *p)
    void kl_md5_many(const unsigned char *const *keys, const int32_t *lens, int n, unsigned char (*out)[16])


kl_crc_init()

# Layout constants (the values of kafkalog/_common.py, as C constants for the loops).
cdef enum:
    LOG_OVERHEAD = 12
    MAGIC_OFFSET = 16
    HEADER_SIZE_UP_TO_MAGIC = 17
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    MAX_TIMESTAMP_OFFSET = 35
    RECORDS_COUNT_OFFSET = 57
    BASE_TIMESTAMP_OFFSET = 27
    COMPRESSION_CODEC_MASK = 0x07
    TIMESTAMP_TYPE_MASK = 0x08
    CONTROL_FLAG_MASK = 0x20
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


# ---------------------------------------------------------------------------------------------------
# CRCs


def crc32c(const unsigned char[::1] data, uint32_t crc=0):
    """CRC-32C (Castagnoli) of ``data``, continuing from ``crc`` (Kafka: ``Crc32C.compute``)."""
    cdef size_t n = data.shape[0]
    cdef const unsigned char *p = &data[0] if n else NULL
    if n >= NOGIL_CRC_BYTES:
        with nogil:
            crc = kl_crc32c(crc, p, n)
        return crc
    return kl_crc32c(crc, p, n)


def crc32(const unsigned char[::1] data, uint32_t crc=0):
    """CRC-32 (IEEE, as ``java.util.zip.CRC32``) of ``data``, continuing from ``crc``.

    The CRC of legacy (v0/v1) messages.
    """
    cdef size_t n = data.shape[0]
    cdef const unsigned char *p = &data[0] if n else NULL
    if n >= NOGIL_CRC_BYTES:
        with nogil:
            crc = kl_crc32(crc, p, n)
        return crc
    return kl_crc32(crc, p, n)


def crc32c_hardware():
    """Whether CRC-32C runs on the CPU's crc32 instruction (SSE4.2)."""
    return bool(kl_have_sse42)


def set_crc32c_software(bint on):
    """Force the table CRC-32C even where the CPU has SSE4.2 (for benchmarks); ``False`` undoes it."""
    kl_crc32c_force_software(1 if on else 0)


# ---------------------------------------------------------------------------------------------------
# The batch scan


cdef inline uint32_t _entry_crc(const unsigned char *p, size_t n, bint v2) noexcept nogil:
    return kl_crc32c(0, p, n) if v2 else kl_crc32(0, p, n)


cdef struct Frame:
    int64_t offset
    int32_t size
    int magic


cdef inline bint _all_zero(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    """Whether every byte of ``p[pos:end]`` is 0 (eight at a time, then the rest)."""
    cdef uint64_t word = 0
    cdef uint64_t acc = 0
    cdef int i
    while end - pos >= 64:
        for i in range(8):
            memcpy(&word, p + pos + 8 * i, 8)
            acc |= word
        if acc:
            return False
        pos += 64
    while pos < end:
        acc |= p[pos]
        pos += 1
    return acc == 0


cdef inline int _next_frame(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end,
                            int64_t max_entry_size, Frame *f) noexcept nogil:
    """-1 when a whole entry starts at ``pos`` (``f`` filled in), else the ScanStop that ends a walk
    there.  The same checks, in the same order, as ``_core_py._next_frame``."""
    cdef Py_ssize_t remaining = end - pos
    cdef const unsigned char *e = p + pos
    if remaining <= 0:
        return STOP_END
    if remaining < LOG_OVERHEAD:
        return STOP_PARTIAL
    f.offset = kl_get_i64(e)
    f.size = kl_get_i32(e + 8)
    if f.size < MIN_RECORD_OVERHEAD:
        return STOP_ZERO_TAIL if _all_zero(p, pos, end) else STOP_SIZE_TOO_SMALL
    if f.size > max_entry_size:
        return STOP_TOO_LARGE
    if remaining < HEADER_SIZE_UP_TO_MAGIC or remaining < LOG_OVERHEAD + <Py_ssize_t>f.size:
        return STOP_PARTIAL
    f.magic = e[MAGIC_OFFSET]
    if f.magic > 2:
        return STOP_BAD_MAGIC
    if (f.magic == 2 and LOG_OVERHEAD + f.size < RECORD_BATCH_OVERHEAD) or (
            f.magic == 1 and f.size < RECORD_OVERHEAD_V1):
        return STOP_SIZE_TOO_SMALL
    return -1


cdef inline int64_t _last_offset(const unsigned char *e, Frame *f) noexcept nogil:
    # Java long arithmetic: a hostile delta wraps instead of being undefined behaviour.
    if f.magic == 2:
        return <int64_t>(<uint64_t>f.offset + <uint64_t><int64_t>kl_get_i32(e + LAST_OFFSET_DELTA_OFFSET))
    return f.offset


def scan_batches(const unsigned char[::1] buf, Py_ssize_t start=0, Py_ssize_t end=-1,
                 bint check_crc=True, bint stop_on_invalid=True,
                 int64_t max_entry_size=0x7FFFFFFF, int64_t max_batches=0x7FFFFFFFFFFFFFFF):
    """Walk the log entries of ``buf[start:end]`` (any magic, mixed) and describe each one.

    Same contract as ``_core_py.scan_batches``: returns ``(batches, stop_position, stop_reason)``
    and never raises on bad bytes.
    """
    cdef Py_ssize_t total = buf.shape[0]
    if end < 0 or end > total:
        end = total
    if start < 0:
        start = 0
    cdef const unsigned char *p = &buf[0] if total else NULL
    cdef Py_ssize_t capacity = (end - start) // (LOG_OVERHEAD + MIN_RECORD_OVERHEAD) + 1
    if capacity > 4096:
        capacity = 4096
    if capacity > max_batches:
        capacity = max_batches if max_batches > 0 else 1
    rows_array = np.empty(capacity, dtype=BATCH_DTYPE)
    cdef BatchRow[::1] rows = rows_array
    cdef Py_ssize_t n = 0
    cdef Py_ssize_t pos = start
    cdef Py_ssize_t entry_end, crc_len
    cdef int reason
    cdef uint32_t stored, computed
    cdef int8_t valid
    cdef const unsigned char *e
    cdef BatchRow *row
    cdef Frame f
    while True:
        reason = _next_frame(p, pos, end, max_entry_size, &f)
        if reason == STOP_END:
            break
        if n >= max_batches:
            reason = STOP_LIMIT
            break
        if reason >= 0:
            break
        e = p + pos
        entry_end = pos + LOG_OVERHEAD + f.size
        valid = -1
        if check_crc:
            if f.magic == 2:
                stored = kl_get_u32(e + CRC_OFFSET)
                crc_len = entry_end - pos - ATTRIBUTES_OFFSET
                if f.size >= NOGIL_CRC_BYTES:
                    with nogil:
                        computed = _entry_crc(e + ATTRIBUTES_OFFSET, crc_len, True)
                else:
                    computed = _entry_crc(e + ATTRIBUTES_OFFSET, crc_len, True)
            else:
                stored = kl_get_u32(e + LOG_OVERHEAD)
                computed = _entry_crc(e + MAGIC_OFFSET, entry_end - pos - MAGIC_OFFSET, False)
            valid = 1 if computed == stored else 0
            if not valid and stop_on_invalid:
                reason = STOP_BAD_CRC
                break
        if n == capacity:
            capacity *= 2
            grown = np.empty(capacity, dtype=BATCH_DTYPE)
            grown[:n] = rows_array[:n]
            rows_array = grown
            rows = rows_array
        row = &rows[n]
        row.position = pos
        row.size = <int32_t>(entry_end - pos)
        row.base_offset = f.offset
        row.last_offset = _last_offset(e, &f)
        row.magic = <int8_t>f.magic
        row.valid = valid
        if f.magic == 2:
            row.crc = kl_get_u32(e + CRC_OFFSET)
            row.attributes = kl_get_i16(e + ATTRIBUTES_OFFSET)
            row.max_timestamp = kl_get_i64(e + MAX_TIMESTAMP_OFFSET)
            row.record_count = kl_get_i32(e + RECORDS_COUNT_OFFSET)
        else:
            row.crc = kl_get_u32(e + LOG_OVERHEAD)
            row.attributes = e[LOG_OVERHEAD + 5]
            row.max_timestamp = kl_get_i64(e + LOG_OVERHEAD + 6) if f.magic == 1 else -1
            row.record_count = 1 if (e[LOG_OVERHEAD + 5] & LEGACY_COMPRESSION_MASK) == 0 else -1
        n += 1
        pos = entry_end
    return rows_array[:n].copy() if n < capacity // 2 else rows_array[:n], pos, reason


def search_for_offset(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t end,
                      int64_t target_offset, int64_t max_entry_size=0x7FFFFFFF):
    """The first entry in ``buf[start:end]`` whose last offset is >= ``target_offset`` (see ``_core_py``).

    Returns ``(position, size, last_offset, stop_position, stop_reason)``.
    """
    cdef Py_ssize_t total = buf.shape[0]
    if end < 0 or end > total:
        end = total
    if start < 0:
        start = 0
    cdef const unsigned char *p = &buf[0] if total else NULL
    cdef Py_ssize_t pos = start
    cdef int reason
    cdef int64_t last
    cdef Frame f
    with nogil:
        while True:
            reason = _next_frame(p, pos, end, max_entry_size, &f)
            if reason >= 0:
                break
            last = _last_offset(p + pos, &f)
            if last >= target_offset:
                break
            pos += LOG_OVERHEAD + f.size
    if reason >= 0:
        return -1, 0, -1, pos, reason
    return pos, LOG_OVERHEAD + f.size, last, pos, STOP_END


# ---------------------------------------------------------------------------------------------------
# Index search


cdef inline int64_t _index_key(const unsigned char *p, Py_ssize_t slot, int kind,
                               int64_t base) noexcept nogil:
    if kind == 0:
        return base + kl_get_i32(p + slot * 8)
    if kind == 1:
        return kl_get_i32(p + slot * 8 + 4)
    if kind == 2:
        return kl_get_i64(p + slot * 12)
    return base + kl_get_i32(p + slot * 12 + 8)


def index_search(const unsigned char[::1] buf, Py_ssize_t entries, int kind, int64_t target,
                 int64_t base_offset, bint smallest_upper_bound=False):
    """The slot of the largest entry <= ``target`` (or the smallest >= it); -1 when none (see ``_core_py``).

    Kafka 2.1+ ``AbstractIndex.indexSlotRangeFor``, warm section first.
    """
    if kind < 0 or kind > 3:
        raise ValueError(f"{kind} is not a valid IndexKind")
    cdef Py_ssize_t entry_size = 8 if kind < 2 else 12
    if entries < 0:
        raise ValueError(f"negative entry count {entries}")
    if entries * entry_size > buf.shape[0]:
        raise ValueError(f"{entries} entries of {entry_size} bytes do not fit the {buf.shape[0]}-byte index")
    if entries == 0:
        return -1
    return _slot_for(&buf[0], entries, kind, target, base_offset, smallest_upper_bound)


cdef Py_ssize_t _slot_for(const unsigned char *p, Py_ssize_t entries, int kind, int64_t target,
                          int64_t base_offset, bint smallest_upper_bound) noexcept nogil:
    """Kafka 2.1+ ``indexSlotRangeFor`` over ``entries`` checked entries: warm section first."""
    cdef Py_ssize_t entry_size = 8 if kind < 2 else 12
    cdef Py_ssize_t first_hot = entries - 1 - WARM_SECTION_BYTES // entry_size
    cdef Py_ssize_t lo, hi, mid
    cdef int64_t found
    if entries == 0:
        return -1
    if first_hot < 0:
        first_hot = 0
    if _index_key(p, first_hot, kind, base_offset) < target:
        lo, hi = first_hot, entries - 1
    elif _index_key(p, 0, kind, base_offset) > target:
        return 0 if smallest_upper_bound else -1
    else:
        lo, hi = 0, first_hot
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        found = _index_key(p, mid, kind, base_offset)
        if found > target:
            hi = mid - 1
        elif found < target:
            lo = mid
        else:
            return mid
    if smallest_upper_bound:
        return -1 if lo == entries - 1 else lo + 1
    return lo


def index_lookup(object buf, Py_ssize_t entries, int kind, int64_t target, int64_t base_offset):
    """The largest-lower-bound entry for ``target`` as ``(key, value)``, or ``None`` (see ``_core_py``).

    The buffer is taken through the raw buffer protocol rather than a typed memoryview: this runs once
    per fetch, and setting up a memoryview costs more than the search of a warm index.
    """
    cdef Py_buffer view
    cdef Py_ssize_t slot, entry_size
    cdef const unsigned char *e
    if kind < 0 or kind > 3:
        raise ValueError(f"{kind} is not a valid IndexKind")
    entry_size = 8 if kind < 2 else 12
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if entries < 0 or entries * entry_size > view.len:
            raise ValueError(f"{entries} entries of {entry_size} bytes do not fit the {view.len}-byte index")
        slot = _slot_for(<const unsigned char *>view.buf, entries, kind, target, base_offset, False)
        if slot < 0:
            return None
        e = <const unsigned char *>view.buf + slot * entry_size
        if kind < 2:
            return base_offset + kl_get_i32(e), kl_get_i32(e + 4)
        return kl_get_i64(e), base_offset + kl_get_i32(e + 8)
    finally:
        PyBuffer_Release(&view)


def index_points(const int64_t[::1] positions, int64_t interval):
    """Which batches get an index entry when a segment is rebuilt (see ``_core_py``): one pass."""
    cdef Py_ssize_t n = positions.shape[0]
    chosen_array = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] chosen = chosen_array
    cdef Py_ssize_t i, k = 0
    cdef int64_t last = 0
    with nogil:
        for i in range(n):
            if positions[i] - last > interval:
                chosen[k] = i
                k += 1
                last = positions[i]
    return chosen_array[:k].copy()


# ---------------------------------------------------------------------------------------------------
# Varints (Kafka's ByteUtils) and the v2 record parser


# Error codes of the parsers; _raise turns one into the plain twin's exception and message.
cdef enum:
    E_OK = 0
    E_PREMATURE_EOF
    E_VARINT_PAST
    E_VARINT_LONG
    E_VARLONG_PAST
    E_VARLONG_LONG
    E_RECORD_SIZE_AVAIL
    E_EMPTY_BODY
    E_KEY_SIZE
    E_VALUE_SIZE
    E_NEG_HEADERS
    E_TOO_MANY_HEADERS
    E_NEG_HEADER_KEY
    E_HEADER_KEY_SIZE
    E_HEADER_VALUE_SIZE
    E_RECORD_SIZE_READ
    E_REMAINING
    E_COUNT_NEGATIVE
    E_COUNT_TOO_BIG
    E_LEGACY_SHORT_FRAME
    E_LEGACY_SIZE_SMALL
    E_LEGACY_TRUNCATED
    E_LEGACY_MAGIC
    E_LEGACY_V1_SMALL
    E_LEGACY_KEY
    E_LEGACY_VALUE


cdef struct Err:
    int code
    Py_ssize_t pos
    int64_t a
    int64_t b


cdef int _raise(Err *err) except -1:
    cdef int code = err.code
    cdef Py_ssize_t pos = err.pos
    a = err.a
    b = err.b
    if code == E_PREMATURE_EOF:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached", pos)
    if code == E_VARINT_PAST:
        raise InvalidRecordError("Found invalid record structure: a varint runs past the record", pos)
    if code == E_VARINT_LONG:
        raise InvalidRecordError("Varint is too long, the most significant bit in the 5th byte is set", pos)
    if code == E_VARLONG_PAST:
        raise InvalidRecordError("Found invalid record structure: a varlong runs past the record", pos)
    if code == E_VARLONG_LONG:
        raise InvalidRecordError("Varlong is too long, most significant bit in the 10th byte is set", pos)
    if code == E_RECORD_SIZE_AVAIL:
        raise InvalidRecordError(
            f"Invalid record size: expected {a} bytes in record payload, but instead the "
            f"buffer has only {b} remaining bytes", pos)
    if code == E_EMPTY_BODY:
        raise InvalidRecordError("Found invalid record structure: empty record body", pos)
    if code == E_KEY_SIZE:
        raise InvalidRecordError(f"Found invalid record structure: key size {a}", pos)
    if code == E_VALUE_SIZE:
        raise InvalidRecordError(f"Found invalid record structure: value size {a}", pos)
    if code == E_NEG_HEADERS:
        raise InvalidRecordError(f"Found invalid number of record headers {a}", pos)
    if code == E_TOO_MANY_HEADERS:
        raise InvalidRecordError(
            f"Found invalid number of record headers {a}: more than the {b} bytes left in the record", pos)
    if code == E_NEG_HEADER_KEY:
        raise InvalidRecordError(f"Invalid negative header key size {a}", pos)
    if code == E_HEADER_KEY_SIZE:
        raise InvalidRecordError(f"Found invalid record structure: header key size {a}", pos)
    if code == E_HEADER_VALUE_SIZE:
        raise InvalidRecordError(f"Found invalid record structure: header value size {a}", pos)
    if code == E_RECORD_SIZE_READ:
        raise InvalidRecordError(
            f"Invalid record size: expected to read {a} bytes in record payload, but instead read {b}", pos)
    if code == E_REMAINING:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", pos)
    if code == E_COUNT_NEGATIVE:
        raise InvalidRecordError(f"Found invalid record count {a}", pos)
    if code == E_COUNT_TOO_BIG:
        raise InvalidRecordError(
            f"Incorrect declared batch size, premature EOF reached: {a} records cannot fit in {b} bytes", pos)
    if code == E_LEGACY_SHORT_FRAME:
        raise CorruptRecordError(
            f"Truncated message: {a} bytes left, fewer than the {LOG_OVERHEAD}-byte log overhead", pos)
    if code == E_LEGACY_SIZE_SMALL:
        raise CorruptRecordError(
            f"Message size {a} is smaller than the minimum record overhead ({MIN_RECORD_OVERHEAD})", pos)
    if code == E_LEGACY_TRUNCATED:
        raise CorruptRecordError(f"Truncated message: size {a} but only {b} bytes follow", pos)
    if code == E_LEGACY_MAGIC:
        raise UnsupportedMagicError(f"Invalid magic {a} in a legacy message set", pos)
    if code == E_LEGACY_V1_SMALL:
        raise CorruptRecordError(
            f"Message size {a} is smaller than the v1 record overhead ({RECORD_OVERHEAD_V1})", pos)
    if code == E_LEGACY_KEY:
        raise CorruptRecordError(f"Key size {a} runs past the message of size {b}", pos)
    if code == E_LEGACY_VALUE:
        raise CorruptRecordError(f"Value size {a} runs past the message of size {b}", pos)
    raise AssertionError(f"unknown kernel error code {code}")


cdef inline int _fail(Err *err, int code, Py_ssize_t pos, int64_t a=0, int64_t b=0) noexcept nogil:
    err.code = code
    err.pos = pos
    err.a = a
    err.b = b
    return code


cdef inline int _read_varint(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end, int32_t *out,
                             Err *err) noexcept nogil:
    """ByteUtils.readVarint: at most 5 bytes; the high bits of the 5th fall off, as Java's do."""
    cdef uint32_t value = 0
    cdef int shift = 0
    cdef unsigned char b
    cdef Py_ssize_t i = pos[0]
    while True:
        if i >= end:
            return _fail(err, E_VARINT_PAST, i)
        b = p[i]
        i += 1
        if (b & 0x80) == 0:
            value |= (<uint32_t>b) << shift
            break
        value |= (<uint32_t>(b & 0x7F)) << shift
        shift += 7
        if shift > 28:
            return _fail(err, E_VARINT_LONG, i)
    pos[0] = i
    out[0] = <int32_t>((value >> 1) ^ (-(value & 1)))
    return E_OK


cdef inline int _read_varlong(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end, int64_t *out,
                              Err *err) noexcept nogil:
    """ByteUtils.readVarlong: at most 10 bytes, wrapped to 64 bits."""
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef unsigned char b
    cdef Py_ssize_t i = pos[0]
    while True:
        if i >= end:
            return _fail(err, E_VARLONG_PAST, i)
        b = p[i]
        i += 1
        if (b & 0x80) == 0:
            value |= (<uint64_t>b) << shift
            break
        value |= (<uint64_t>(b & 0x7F)) << shift
        shift += 7
        if shift > 63:
            return _fail(err, E_VARLONG_LONG, i)
    pos[0] = i
    out[0] = <int64_t>((value >> 1) ^ (-(value & 1)))
    return E_OK


cdef struct V2Record:
    int64_t offset
    int64_t timestamp
    Py_ssize_t key_pos
    Py_ssize_t value_pos
    int32_t key_len
    int32_t value_len
    int32_t n_headers
    Py_ssize_t record_start
    Py_ssize_t body_start
    Py_ssize_t body_end
    int32_t length


cdef inline int _check_count(int64_t count, Py_ssize_t start, Py_ssize_t end, Err *err) noexcept nogil:
    if count < 0:
        return _fail(err, E_COUNT_NEGATIVE, start, count)
    if count > (end - start) // MIN_V2_RECORD_SIZE:
        return _fail(err, E_COUNT_TOO_BIG, start, count, end - start)
    return E_OK


cdef inline int _read_record_head(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end,
                                  int64_t base_offset, int64_t base_timestamp, bint has_append_time,
                                  int64_t append_time, V2Record *r, Err *err) noexcept nogil:
    """DefaultRecord.readFrom up to the header count (the same checks as _walk_v2_records, in order)."""
    cdef int32_t length, offset_delta, key_len, value_len, n_headers
    cdef int64_t timestamp_delta
    if pos[0] >= end:
        return _fail(err, E_PREMATURE_EOF, pos[0])
    r.record_start = pos[0]
    if _read_varint(p, pos, end, &length, err):
        return err.code
    if length < 0 or length > end - pos[0]:
        return _fail(err, E_RECORD_SIZE_AVAIL, r.record_start, length, end - pos[0])
    r.length = length
    r.body_start = pos[0]
    r.body_end = pos[0] + length
    if pos[0] >= r.body_end:
        return _fail(err, E_EMPTY_BODY, r.record_start)
    pos[0] += 1  # attributes: unused by every version so far
    if _read_varlong(p, pos, r.body_end, &timestamp_delta, err):
        return err.code
    if _read_varint(p, pos, r.body_end, &offset_delta, err):
        return err.code
    if _read_varint(p, pos, r.body_end, &key_len, err):
        return err.code
    r.key_pos = pos[0]
    if key_len >= 0:
        if key_len > r.body_end - pos[0]:
            return _fail(err, E_KEY_SIZE, r.record_start, key_len)
        pos[0] += key_len
    else:
        key_len = -1
    if _read_varint(p, pos, r.body_end, &value_len, err):
        return err.code
    r.value_pos = pos[0]
    if value_len >= 0:
        if value_len > r.body_end - pos[0]:
            return _fail(err, E_VALUE_SIZE, r.record_start, value_len)
        pos[0] += value_len
    else:
        value_len = -1
    if _read_varint(p, pos, r.body_end, &n_headers, err):
        return err.code
    if n_headers < 0:
        return _fail(err, E_NEG_HEADERS, r.record_start, n_headers)
    if n_headers > r.body_end - pos[0]:
        return _fail(err, E_TOO_MANY_HEADERS, r.record_start, n_headers, r.body_end - pos[0])
    r.key_len = key_len
    r.value_len = value_len
    r.n_headers = n_headers
    r.offset = <int64_t>(<uint64_t>base_offset + <uint64_t><int64_t>offset_delta)
    if has_append_time:
        r.timestamp = append_time
    else:
        r.timestamp = <int64_t>(<uint64_t>base_timestamp + <uint64_t>timestamp_delta)
    return E_OK


cdef inline int _read_header(const unsigned char *p, Py_ssize_t *pos, V2Record *r, HeaderRow *h,
                             Err *err) noexcept nogil:
    cdef int32_t key_len, value_len
    if _read_varint(p, pos, r.body_end, &key_len, err):
        return err.code
    if key_len < 0:
        return _fail(err, E_NEG_HEADER_KEY, r.record_start, key_len)
    if key_len > r.body_end - pos[0]:
        return _fail(err, E_HEADER_KEY_SIZE, r.record_start, key_len)
    h.key_pos = pos[0]
    h.key_len = key_len
    pos[0] += key_len
    if _read_varint(p, pos, r.body_end, &value_len, err):
        return err.code
    h.value_pos = pos[0]
    if value_len >= 0:
        if value_len > r.body_end - pos[0]:
            return _fail(err, E_HEADER_VALUE_SIZE, r.record_start, value_len)
        pos[0] += value_len
    else:
        value_len = -1
    h.value_len = value_len
    return E_OK


cdef inline int _finish_record(Py_ssize_t pos, V2Record *r, Err *err) noexcept nogil:
    if pos != r.body_end:
        return _fail(err, E_RECORD_SIZE_READ, r.record_start, r.length, pos - r.body_start)
    return E_OK


cdef inline int _bounds(Py_ssize_t total, Py_ssize_t start, Py_ssize_t end) except -1:
    if start < 0 or end < start or end > total:
        raise ValueError(f"range [{start}, {end}) is outside the buffer of {total} bytes")
    return 0


cdef class _HeaderSink:
    """The header rows of a column decode, grown by doubling (their number is only known at the end)."""

    cdef object array
    cdef HeaderRow[::1] rows
    cdef Py_ssize_t n
    cdef Py_ssize_t capacity

    def __cinit__(self):
        self.capacity = 16
        self.array = np.empty(self.capacity, dtype=HEADER_DTYPE)
        self.rows = self.array
        self.n = 0

    cdef int reserve(self, Py_ssize_t more) except -1:
        if self.n + more <= self.capacity:
            return 0
        while self.n + more > self.capacity:
            self.capacity *= 2
        grown = np.empty(self.capacity, dtype=HEADER_DTYPE)
        grown[:self.n] = self.array[:self.n]
        self.array = grown
        self.rows = self.array
        return 0

    cdef object result(self):
        return self.array[:self.n].copy()


cdef int _decode_columns(const unsigned char *p, Py_ssize_t start, Py_ssize_t end, int64_t count,
                         bint last, int64_t base_offset, int64_t base_timestamp, bint has_append_time,
                         int64_t append_ts, RecordRow *out, _HeaderSink headers, Py_ssize_t *stop) except -1:
    """``count`` records from ``start`` into ``out[0:count]`` and ``headers`` (the loop of decode_v2_records);
    ``stop`` gets the position after them.  With ``last`` they are the batch's last: nothing may follow."""
    cdef Err err
    cdef Py_ssize_t pos = start
    cdef int64_t i
    cdef int32_t _h
    cdef V2Record r
    cdef RecordRow *row
    err.code = E_OK
    memset(&r, 0, sizeof(r))
    for i in range(count):
        if _read_record_head(p, &pos, end, base_offset, base_timestamp, has_append_time, append_ts,
                             &r, &err):
            _raise(&err)
        row = out + i
        row.offset = r.offset
        row.timestamp = r.timestamp
        row.key_pos = r.key_pos
        row.key_len = r.key_len
        row.value_pos = r.value_pos
        row.value_len = r.value_len
        row.header_index = <int32_t>headers.n
        row.header_count = r.n_headers
        row.crc = 0
        row.attributes = 0
        row.magic = 2
        row.pad = 0
        if r.n_headers:
            headers.reserve(r.n_headers)
            for _h in range(r.n_headers):
                if _read_header(p, &pos, &r, &headers.rows[headers.n], &err):
                    _raise(&err)
                headers.n += 1
        if _finish_record(pos, &r, &err):
            _raise(&err)
    if last and pos != end:
        _fail(&err, E_REMAINING, pos)
        _raise(&err)
    stop[0] = pos
    return 0


# What a record decode needs to know of one batch: where its records are and how to read them.
cdef struct BatchHead:
    Py_ssize_t start
    Py_ssize_t end
    int64_t count
    int64_t base_offset
    int64_t base_timestamp
    bint has_append_time
    int64_t append_ts
    bint is_control


cdef int _head_from_args(Py_ssize_t total, Py_ssize_t start, Py_ssize_t end, int64_t count,
                         int64_t base_offset, int64_t base_timestamp, object append_time,
                         BatchHead *h) except -1:
    """The single-batch kernels' arguments, checked, as a BatchHead (``_batch_head`` reads a scan row)."""
    cdef Err err
    _bounds(total, start, end)
    err.code = E_OK
    if _check_count(count, start, end, &err):
        _raise(&err)
    h.start = start
    h.end = end
    h.count = count
    h.base_offset = base_offset
    h.base_timestamp = base_timestamp
    h.has_append_time = append_time is not None
    h.append_ts = append_time if h.has_append_time else 0
    h.is_control = False
    return 0


cdef inline int64_t _chunk_size(int64_t count, int64_t max_records) noexcept nogil:
    return count if max_records < 0 or max_records > count else max_records


def decode_v2_records(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t end, int64_t count,
                      int64_t base_offset, int64_t base_timestamp, append_time=None):
    """Decode the ``count`` v2 records in ``buf[start:end]`` into columns (see ``_core_py``)."""
    cdef Py_ssize_t stop
    return _columns_chunk(&buf[0] if buf.shape[0] else NULL, buf.shape[0], start, end, count, base_offset,
                          base_timestamp, append_time, -1, &stop)


def decode_v2_records_chunk(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t end, int64_t count,
                            int64_t base_offset, int64_t base_timestamp, append_time=None,
                            int64_t max_records=-1):
    """The next ``max_records`` of the ``count`` v2 records left in ``buf[start:end]`` as columns, and the
    position after them (see ``_core_py``)."""
    cdef Py_ssize_t stop
    records, headers = _columns_chunk(&buf[0] if buf.shape[0] else NULL, buf.shape[0], start, end, count,
                                      base_offset, base_timestamp, append_time, max_records, &stop)
    return records, headers, stop


cdef tuple _columns_chunk(const unsigned char *p, Py_ssize_t total, Py_ssize_t start, Py_ssize_t end,
                          int64_t count, int64_t base_offset, int64_t base_timestamp, object append_time,
                          int64_t max_records, Py_ssize_t *stop):
    """``(records, headers)`` of the next ``max_records`` records of ``p[start:end]`` (``p`` is ``total``
    bytes); ``stop`` gets the position after them."""
    cdef BatchHead h
    _head_from_args(total, start, end, count, base_offset, base_timestamp, append_time, &h)
    cdef int64_t take = _chunk_size(count, max_records)
    records_array = np.empty(take, dtype=RECORD_DTYPE)
    cdef RecordRow[::1] records = records_array
    cdef _HeaderSink headers = _HeaderSink()
    # Called for count 0 too: bytes after the last declared record are an error either way.
    _decode_columns(p, h.start, h.end, take, take == count, h.base_offset, h.base_timestamp,
                    h.has_append_time, h.append_ts, &records[0] if take else NULL, headers, stop)
    return records_array, headers.result()


cdef int _batch_head(const unsigned char *p, Py_ssize_t total, const BatchRow *row, BatchHead *h,
                     Err *err) except -1:
    """Where one uncompressed v2 batch's records are and how to read them, checked against the buffer: a row
    that is no uncompressed v2 batch of the buffer raises ValueError (the caller's mistake); a record count
    the batch cannot hold is the batch's, returned as an error code in ``err`` for the caller to raise when
    the batches before it are decoded."""
    cdef Py_ssize_t pos = row.position
    cdef Py_ssize_t size = row.size
    cdef int16_t attributes
    if pos < 0 or size < RECORD_BATCH_OVERHEAD or pos > total - size:
        raise ValueError(f"batch row (position {pos}, size {size}) is outside the buffer of {total} bytes")
    if p[pos + MAGIC_OFFSET] != 2:
        raise ValueError(f"the entry at position {pos} is not a v2 batch")
    attributes = kl_get_i16(p + pos + ATTRIBUTES_OFFSET)
    if attributes & COMPRESSION_CODEC_MASK:
        raise ValueError(f"the batch at position {pos} is compressed: decode its decompressed records")
    h.start = pos + RECORD_BATCH_OVERHEAD
    h.end = pos + size
    h.count = kl_get_i32(p + pos + RECORDS_COUNT_OFFSET)
    h.base_offset = kl_get_i64(p + pos)
    h.base_timestamp = kl_get_i64(p + pos + BASE_TIMESTAMP_OFFSET)
    h.has_append_time = (attributes & TIMESTAMP_TYPE_MASK) != 0
    h.append_ts = kl_get_i64(p + pos + MAX_TIMESTAMP_OFFSET)
    h.is_control = (attributes & CONTROL_FLAG_MASK) != 0
    err.code = E_OK
    return _check_count(h.count, h.start, h.end, err)


cdef Py_ssize_t _good_heads(const unsigned char *p, Py_ssize_t total, const BatchRow[::1] rows, Err *err,
                            int64_t *n_records) except -1:
    """Check every row (ValueError for one that is no uncompressed v2 batch of the buffer); returns how
    many batches come before the first whose record count is bad (``err`` holds that error), and their
    records in ``n_records``.  The run kernels decode those, then raise ``err``: the first bad batch of
    a run is the one reported, whichever of its header or its records is bad."""
    cdef Py_ssize_t n = rows.shape[0]
    cdef Py_ssize_t good = n
    cdef Py_ssize_t i
    cdef BatchHead h
    cdef Err head_err
    n_records[0] = 0
    err.code = E_OK
    for i in range(n):
        if _batch_head(p, total, &rows[i], &h, &head_err) and good == n:
            good = i
            err[0] = head_err
        if good == n:
            n_records[0] += h.count
    return good


def decode_v2_batches(const unsigned char[::1] buf, batches):
    """Decode every record of a run of uncompressed v2 batches into one set of columns (see ``_core_py``)."""
    cdef const BatchRow[::1] rows = batches
    cdef Py_ssize_t total = buf.shape[0]
    cdef const unsigned char *p = &buf[0] if total else NULL
    cdef Py_ssize_t n = rows.shape[0]
    cdef Py_ssize_t i, good
    cdef int64_t n_records = 0
    cdef BatchHead h
    cdef Err err, scratch
    cdef Py_ssize_t stop
    good = _good_heads(p, total, rows, &err, &n_records)
    records_array = np.empty(n_records, dtype=RECORD_DTYPE)
    starts_array = np.empty(n + 1, dtype=np.int64)
    cdef RecordRow[::1] records = records_array
    cdef int64_t[::1] starts = starts_array
    cdef _HeaderSink headers = _HeaderSink()
    cdef int64_t at = 0
    for i in range(good):
        _batch_head(p, total, &rows[i], &h, &scratch)
        starts[i] = at
        _decode_columns(p, h.start, h.end, h.count, True, h.base_offset, h.base_timestamp,
                        h.has_append_time, h.append_ts, &records[at] if h.count else NULL, headers, &stop)
        at += h.count
    if good < n:
        _raise(&err)
    starts[n] = at
    return records_array, headers.result(), starts_array


# Records are leaves: bytes, ints and a list of (str, bytes) pairs, so the cycle collector has
# nothing to find in them.  Taking them out of its bookkeeping matters: decoding tens of thousands
# at once otherwise triggers a collection every few hundred records, each walking the list built so
# far.  (A caller who builds a cycle through a record's headers list leaks it; nothing worse.)
# A record's timestamp type, by its stored number + 1 (-1 NoTimestampType, 0 CreateTime, 1 LogAppendTime).
cdef tuple _TIMESTAMP_TYPES = (TimestampType.NO_TIMESTAMP_TYPE, TimestampType.CREATE_TIME,
                               TimestampType.LOG_APPEND_TIME)


# Records are leaves: bytes, ints and a list of (str, bytes) pairs, so the cycle collector has
# nothing to find in them.  Taking them out of its bookkeeping matters: decoding tens of thousands
# at once otherwise triggers a collection every few hundred records, each walking the list built so
# far.  (A caller who builds a cycle through a record's headers list leaks it; nothing worse.)
@cython.no_gc
@cython.freelist(64)
cdef class Record:
    """One record as a reader sees it: absolute ``offset``, ``timestamp`` (ms, -1 for none), ``key`` and
    ``value`` (``bytes`` or ``None``) and ``headers`` (a list of ``(str, bytes | None)``); and what the
    batch it came from says of it: ``timestamp_type`` and ``is_control`` (``control_type`` names which).

    Kafka: ``org.apache.kafka.common.record.Record``, with the batch facts a ``ConsumerRecord`` carries.
    Equal to any record, of either twin, with the same offset, timestamp, key, value and headers.
    """

    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object key
    cdef readonly object value
    # None until a record has headers or someone asks for them: most records have none, and an
    # empty list per record is a measurable share of the object decode.
    cdef list _headers
    cdef int8_t _timestamp_type
    cdef readonly bint is_control

    def __init__(self, int64_t offset, int64_t timestamp, key, value, headers=None,
                 timestamp_type=TimestampType.CREATE_TIME, bint is_control=False):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self._headers = list(headers) if headers is not None else None
        if timestamp_type not in (-1, 0, 1):
            raise ValueError(f"Unknown timestamp type id {timestamp_type!r}")
        self._timestamp_type = timestamp_type
        self.is_control = is_control

    @property
    def headers(self):
        if self._headers is None:
            self._headers = []
        return self._headers

    @property
    def timestamp_type(self):
        return _TIMESTAMP_TYPES[self._timestamp_type + 1]

    @property
    def control_type(self):
        if not self.is_control:
            return None
        # The record layer imports this module, so its control types are found when first asked for.
        from .record.types import ControlRecordType
        return ControlRecordType.parse(self.key)

    def as_tuple(self):
        return (self.offset, self.timestamp, self.key, self.value, self.headers)

    def __eq__(self, other):
        as_tuple = getattr(other, "as_tuple", None)
        if as_tuple is None:
            return NotImplemented
        return self.as_tuple() == as_tuple()

    def __hash__(self):
        return hash((self.offset, self.timestamp, self.key, self.value, tuple(self.headers)))

    def __reduce__(self):
        return (Record, (*self.as_tuple(), self._timestamp_type, self.is_control))

    def __repr__(self):
        control = ", is_control=True" if self.is_control else ""
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r}{control})")


cdef inline object _bytes_or_none(const unsigned char *p, Py_ssize_t pos, int32_t length):
    if length < 0:
        return None
    return PyBytes_FromStringAndSize(<const char *>(p + pos), length)


cdef int _decode_objects(const unsigned char *p, Py_ssize_t start, Py_ssize_t end, int64_t count,
                         bint last, int64_t base_offset, int64_t base_timestamp, bint has_append_time,
                         int64_t append_ts, bint is_control, list out, Py_ssize_t *stop) except -1:
    """``count`` records from ``start`` appended to ``out`` as Record objects (the loop of
    decode_v2_record_objects); ``stop`` and ``last`` as for ``_decode_columns``."""
    cdef Err err
    cdef Py_ssize_t pos = start
    cdef int64_t _i
    cdef int32_t _h
    cdef V2Record r
    cdef HeaderRow hrow
    cdef Record rec
    cdef list headers
    err.code = E_OK
    memset(&r, 0, sizeof(r))
    memset(&hrow, 0, sizeof(hrow))
    for _i in range(count):
        if _read_record_head(p, &pos, end, base_offset, base_timestamp, has_append_time, append_ts,
                             &r, &err):
            _raise(&err)
        rec = Record.__new__(Record)
        rec.offset = r.offset
        rec.timestamp = r.timestamp
        rec._timestamp_type = 1 if has_append_time else 0
        rec.is_control = is_control
        rec.key = _bytes_or_none(p, r.key_pos, r.key_len)
        rec.value = _bytes_or_none(p, r.value_pos, r.value_len)
        if r.n_headers:
            headers = []
            for _h in range(r.n_headers):
                if _read_header(p, &pos, &r, &hrow, &err):
                    _raise(&err)
                headers.append((
                    PyUnicode_DecodeUTF8(<const char *>(p + hrow.key_pos), hrow.key_len, "replace"),
                    _bytes_or_none(p, hrow.value_pos, hrow.value_len),
                ))
            rec._headers = headers
        if _finish_record(pos, &r, &err):
            _raise(&err)
        out.append(rec)
    if last and pos != end:
        _fail(&err, E_REMAINING, pos)
        _raise(&err)
    stop[0] = pos
    return 0


def decode_v2_record_objects(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t end,
                             int64_t count, int64_t base_offset, int64_t base_timestamp,
                             append_time=None, bint is_control=False):
    """The same decode as ``decode_v2_records``, producing ``Record`` objects."""
    cdef Py_ssize_t stop
    return _objects_chunk(&buf[0] if buf.shape[0] else NULL, buf.shape[0], start, end, count, base_offset,
                          base_timestamp, append_time, is_control, -1, &stop)


def decode_v2_record_objects_chunk(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t end,
                                   int64_t count, int64_t base_offset, int64_t base_timestamp,
                                   append_time=None, bint is_control=False, int64_t max_records=-1):
    """The next ``max_records`` of the ``count`` v2 records left in ``buf[start:end]`` as ``Record`` objects,
    and the position after them (see ``_core_py``)."""
    cdef Py_ssize_t stop
    records = _objects_chunk(&buf[0] if buf.shape[0] else NULL, buf.shape[0], start, end, count, base_offset,
                             base_timestamp, append_time, is_control, max_records, &stop)
    return records, stop


cdef list _objects_chunk(const unsigned char *p, Py_ssize_t total, Py_ssize_t start, Py_ssize_t end,
                         int64_t count, int64_t base_offset, int64_t base_timestamp, object append_time,
                         bint is_control, int64_t max_records, Py_ssize_t *stop):
    """The next ``max_records`` records of ``p[start:end]`` (``p`` is ``total`` bytes) as Record objects;
    ``stop`` gets the position after them."""
    cdef BatchHead h
    _head_from_args(total, start, end, count, base_offset, base_timestamp, append_time, &h)
    cdef int64_t take = _chunk_size(count, max_records)
    cdef list out = []
    _decode_objects(p, h.start, h.end, take, take == count, h.base_offset, h.base_timestamp,
                    h.has_append_time, h.append_ts, is_control, out, stop)
    return out


def decode_v2_batch_objects(const unsigned char[::1] buf, batches):
    """Every record of a run of uncompressed v2 batches as Record objects, in one list (see ``_core_py``)."""
    cdef const BatchRow[::1] rows = batches
    cdef Py_ssize_t total = buf.shape[0]
    cdef const unsigned char *p = &buf[0] if total else NULL
    cdef Py_ssize_t i, good
    cdef int64_t n_records
    cdef BatchHead h
    cdef Err err, scratch
    cdef Py_ssize_t stop
    cdef list out = []
    good = _good_heads(p, total, rows, &err, &n_records)
    for i in range(good):
        _batch_head(p, total, &rows[i], &h, &scratch)
        _decode_objects(p, h.start, h.end, h.count, True, h.base_offset, h.base_timestamp,
                        h.has_append_time, h.append_ts, h.is_control, out, &stop)
    if good < rows.shape[0]:
        _raise(&err)
    return out


# ---------------------------------------------------------------------------------------------------
# Legacy messages


def decode_legacy_records(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t end):
    """Decode the framed v0/v1 messages filling ``buf[start:end]`` into columns (see ``_core_py``)."""
    _bounds(buf.shape[0], start, end)
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t capacity = (end - start) // (LOG_OVERHEAD + MIN_RECORD_OVERHEAD) + 1
    if capacity > 4096:
        capacity = 4096
    rows_array = np.empty(capacity, dtype=RECORD_DTYPE)
    cdef RecordRow[::1] rows = rows_array
    cdef Py_ssize_t n = 0
    cdef Py_ssize_t pos = start
    cdef Py_ssize_t message, message_end, key_size_at, key_pos, value_size_at, value_pos
    cdef int64_t offset, timestamp
    cdef int32_t size, key_len, value_len
    cdef int magic
    cdef Err err
    cdef RecordRow *row
    err.code = E_OK
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            _fail(&err, E_LEGACY_SHORT_FRAME, pos, end - pos)
            _raise(&err)
        offset = kl_get_i64(p + pos)
        size = kl_get_i32(p + pos + 8)
        if size < MIN_RECORD_OVERHEAD:
            _fail(&err, E_LEGACY_SIZE_SMALL, pos, size)
            _raise(&err)
        if size > end - pos - LOG_OVERHEAD:
            _fail(&err, E_LEGACY_TRUNCATED, pos, size, end - pos - LOG_OVERHEAD)
            _raise(&err)
        message = pos + LOG_OVERHEAD
        message_end = message + size
        magic = p[message + 4]
        if magic > 1:
            _fail(&err, E_LEGACY_MAGIC, pos, magic)
            _raise(&err)
        if magic == 1:
            if size < RECORD_OVERHEAD_V1:
                _fail(&err, E_LEGACY_V1_SMALL, pos, size)
                _raise(&err)
            timestamp = kl_get_i64(p + message + 6)
            key_size_at = message + 14
        else:
            timestamp = -1
            key_size_at = message + 6
        key_len = kl_get_i32(p + key_size_at)
        key_pos = key_size_at + 4
        if key_len < 0:
            key_len = -1
        elif key_len > message_end - 4 - key_pos:
            _fail(&err, E_LEGACY_KEY, pos, key_len, size)
            _raise(&err)
        value_size_at = key_pos + (key_len if key_len > 0 else 0)
        value_len = kl_get_i32(p + value_size_at)
        value_pos = value_size_at + 4
        if value_len < 0:
            value_len = -1
        elif value_len > message_end - value_pos:
            _fail(&err, E_LEGACY_VALUE, pos, value_len, size)
            _raise(&err)
        if n == capacity:
            capacity *= 2
            grown = np.empty(capacity, dtype=RECORD_DTYPE)
            grown[:n] = rows_array[:n]
            rows_array = grown
            rows = rows_array
        row = &rows[n]
        row.offset = offset
        row.timestamp = timestamp
        row.key_pos = key_pos
        row.value_pos = value_pos
        row.key_len = key_len
        row.value_len = value_len
        row.header_index = 0
        row.header_count = 0
        row.crc = kl_get_u32(p + message)
        row.attributes = <int8_t>p[message + 5]
        row.magic = <int8_t>magic
        row.pad = 0
        n += 1
        pos = message_end
    return rows_array[:n].copy()


# ---------------------------------------------------------------------------------------------------
# Column gather (records and headers to Arrow's variable-width layout)


cdef int64_t _INT32_MAX = 2147483647


def gather_slices(const unsigned char[::1] data, const int64_t[::1] positions, const int32_t[::1] lengths):
    """Copy slices end to end in Arrow's binary layout (see ``_core_py``): one memcpy a slice."""
    cdef Py_ssize_t n = positions.shape[0], i
    cdef Py_ssize_t size = data.shape[0]
    cdef int64_t total = 0, length
    if lengths.shape[0] != n:
        raise ValueError(f"{n} positions but {lengths.shape[0]} lengths")
    offsets_array = np.empty(n + 1, dtype=np.int32)
    cdef int32_t[::1] offsets = offsets_array
    cdef bint outside = False
    with nogil:
        offsets[0] = 0
        for i in range(n):
            length = lengths[i] if lengths[i] > 0 else 0
            if length and (positions[i] < 0 or positions[i] + length > size):
                outside = True
            total += length
            offsets[i + 1] = <int32_t>total  # meaningless past 2 GiB, which raises below
    if total > _INT32_MAX:
        raise ValueError(f"{total} bytes of slices do not fit Arrow's int32 offsets")
    if outside:
        raise ValueError(f"a slice lies outside the {size}-byte buffer")
    values_array = np.empty(total, dtype=np.uint8)
    if total == 0:
        return offsets_array, values_array
    cdef unsigned char[::1] values = values_array
    with nogil:
        for i in range(n):
            if lengths[i] > 0:
                memcpy(&values[offsets[i]], &data[positions[i]], <size_t>lengths[i])
    return offsets_array, values_array


# ---------------------------------------------------------------------------------------------------
# v2 encode


cdef inline Py_ssize_t _varint_size(uint32_t v) noexcept nogil:
    cdef Py_ssize_t n = 1
    while v & ~0x7F:
        v >>= 7
        n += 1
    return n


cdef inline Py_ssize_t _varlong_size(uint64_t v) noexcept nogil:
    cdef Py_ssize_t n = 1
    while v & ~(<uint64_t>0x7F):
        v >>= 7
        n += 1
    return n


cdef inline uint32_t _zigzag32(int32_t v) noexcept nogil:
    return (<uint32_t>v << 1) ^ <uint32_t>(v >> 31)


cdef inline uint64_t _zigzag64(int64_t v) noexcept nogil:
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


cdef inline unsigned char *_put_varint(unsigned char *out, uint32_t v) noexcept nogil:
    while v & ~0x7F:
        out[0] = <unsigned char>((v & 0x7F) | 0x80)
        out += 1
        v >>= 7
    out[0] = <unsigned char>v
    return out + 1


cdef inline unsigned char *_put_varlong(unsigned char *out, uint64_t v) noexcept nogil:
    while v & ~(<uint64_t>0x7F):
        out[0] = <unsigned char>((v & 0x7F) | 0x80)
        out += 1
        v >>= 7
    out[0] = <unsigned char>v
    return out + 1


cdef inline bytes _as_bytes(object x):
    if type(x) is bytes:
        return <bytes>x
    return bytes(x)


cdef inline Py_ssize_t _field_size(object x) except -1:
    """Bytes a key or value field takes: its varint length and its data (-1 for null: one byte)."""
    cdef Py_ssize_t n
    if x is None:
        return 1
    n = PyBytes_GET_SIZE(x)
    return _varint_size(_zigzag32(<int32_t>n)) + n


cdef inline unsigned char *_put_field(unsigned char *out, object x):
    cdef Py_ssize_t n
    if x is None:
        out[0] = 1
        return out + 1
    n = PyBytes_GET_SIZE(x)
    out = _put_varint(out, _zigzag32(<int32_t>n))
    memcpy(out, PyBytes_AS_STRING(x), n)
    return out + n


def encode_v2_records(timestamps, keys, values, headers, int64_t base_timestamp, offset_deltas=None):
    """The records section of a v2 batch (Kafka: ``DefaultRecord.writeTo``), see ``_core_py``."""
    cdef Py_ssize_t n = len(timestamps)
    if len(keys) != n or len(values) != n or (headers is not None and len(headers) != n) or (
            offset_deltas is not None and len(offset_deltas) != n):
        raise ValueError("encode_v2_records: the columns differ in length")
    # First pass: normalise the fields to bytes and size every record, so the output is allocated once.
    cdef list key_list = [None if k is None else _as_bytes(k) for k in keys]
    cdef list value_list = [None if v is None else _as_bytes(v) for v in values]
    cdef list header_list = [None] * n
    cdef Py_ssize_t *body_sizes = <Py_ssize_t *>malloc((n if n else 1) * sizeof(Py_ssize_t))
    if body_sizes == NULL:
        raise MemoryError()
    cdef Py_ssize_t i, body, total = 0
    cdef int64_t ts_delta
    cdef int32_t offset_delta
    cdef unsigned char *out
    cdef object record_headers, hk, hv
    try:
        for i in range(n):
            ts_delta = <int64_t>(<uint64_t><int64_t>timestamps[i] - <uint64_t>base_timestamp)
            offset_delta = <int32_t>(offset_deltas[i] if offset_deltas is not None else i)
            body = 1 + _varlong_size(_zigzag64(ts_delta)) + _varint_size(_zigzag32(offset_delta))
            body += _field_size(key_list[i]) + _field_size(value_list[i])
            record_headers = headers[i] if headers is not None else None
            if record_headers:
                encoded = []
                for hk, hv in record_headers:
                    if hk is None:
                        raise ValueError("Invalid null header key found in headers")
                    encoded.append((hk.encode("utf-8"), None if hv is None else _as_bytes(hv)))
                header_list[i] = encoded
                body += _varint_size(_zigzag32(<int32_t>len(encoded)))
                for hk, hv in encoded:
                    body += _field_size(hk) + _field_size(hv)
            else:
                body += 1
            body_sizes[i] = body
            total += _varint_size(_zigzag32(<int32_t>body)) + body
        result = PyBytes_FromStringAndSize(NULL, total)
        out = <unsigned char *>PyBytes_AS_STRING(result)
        for i in range(n):
            out = _put_varint(out, _zigzag32(<int32_t>body_sizes[i]))
            out[0] = 0
            out += 1
            ts_delta = <int64_t>(<uint64_t><int64_t>timestamps[i] - <uint64_t>base_timestamp)
            out = _put_varlong(out, _zigzag64(ts_delta))
            offset_delta = <int32_t>(offset_deltas[i] if offset_deltas is not None else i)
            out = _put_varint(out, _zigzag32(offset_delta))
            out = _put_field(out, key_list[i])
            out = _put_field(out, value_list[i])
            record_headers = header_list[i]
            if record_headers is None:
                out[0] = 0
                out += 1
            else:
                out = _put_varint(out, _zigzag32(<int32_t>len(record_headers)))
                for hk, hv in record_headers:
                    out = _put_field(out, hk)
                    out = _put_field(out, hv)
        return result
    finally:
        free(body_sizes)


# ---------------------------------------------------------------------------------------------------
# SkimpyOffsetMap (Kafka: kafka/log/OffsetMap.scala, storage/.../SkimpyOffsetMap.java)
#
# The table is ``slots`` entries of 24 bytes: the MD5 of a key (16 bytes) and its offset (int64,
# big-endian); an all-zero entry is empty.  Probe ``a`` for a hash reads the big-endian int32 at byte
# min(a, 12) of the hash and adds max(0, a - 12), as Java ints (wrapping), then takes
# ``Utils.abs(probe) % slots`` (abs of MIN_VALUE is 0): thirteen windows of the digest, then a walk
# from the last one.  The counters (lookups, probes) are the caller's; kernels return what they add.

cdef enum:
    MAP_HASH_SIZE = 16
    MAP_ENTRY_SIZE = 24
    # Keys hashed ahead, with their first probe prefetched: a large map is mostly cache misses, and this
    # lets them overlap.  Puts and gets still happen one at a time, in order.
    MAP_PREFETCH_GROUP = 16


def md5(const unsigned char[::1] data):
    """MD5 of ``data`` (the compiled twin's own, checked against hashlib)."""
    cdef unsigned char out[16]
    kl_md5(&data[0] if data.shape[0] else NULL, data.shape[0], out)
    return PyBytes_FromStringAndSize(<const char *>out, 16)


cdef inline Py_ssize_t _map_position(const unsigned char *hash, int attempt, Py_ssize_t slots) noexcept nogil:
    cdef int window = attempt if attempt < MAP_HASH_SIZE - 4 else MAP_HASH_SIZE - 4
    cdef uint32_t extra = <uint32_t>(attempt - (MAP_HASH_SIZE - 4)) if attempt > MAP_HASH_SIZE - 4 else 0
    cdef int32_t probe = <int32_t>(<uint32_t>kl_get_u32(hash + window) + extra)
    cdef int64_t magnitude = 0 if probe == -2147483648 else (probe if probe >= 0 else -<int64_t>probe)
    return <Py_ssize_t>(magnitude % slots) * MAP_ENTRY_SIZE


cdef inline bint _map_is_empty(const unsigned char *entry) noexcept nogil:
    cdef uint64_t a, b, c
    memcpy(&a, entry, 8)
    memcpy(&b, entry + 8, 8)
    memcpy(&c, entry + 16, 8)
    return a == 0 and b == 0 and c == 0


cdef inline int _map_put(unsigned char *table, Py_ssize_t slots, const unsigned char *hash, int64_t offset,
                         int64_t *probes) noexcept nogil:
    """SkimpyOffsetMap.put after the fullness check: returns 1 for a new entry, 0 for an update."""
    cdef int attempt = 0
    cdef Py_ssize_t pos = _map_position(hash, attempt, slots)
    probes[0] += 1
    while not _map_is_empty(table + pos):
        if memcmp(table + pos, hash, MAP_HASH_SIZE) == 0:
            kl_put_i64(table + pos + MAP_HASH_SIZE, offset)
            return 0
        attempt += 1
        pos = _map_position(hash, attempt, slots)
        probes[0] += 1
    memcpy(table + pos, hash, MAP_HASH_SIZE)
    kl_put_i64(table + pos + MAP_HASH_SIZE, offset)
    return 1


cdef inline int64_t _map_get(const unsigned char *table, Py_ssize_t slots, const unsigned char *hash,
                             int64_t *probes) noexcept nogil:
    """SkimpyOffsetMap.get: -1 when absent; gives up after slots + 12 attempts (KAFKA-3682)."""
    cdef int64_t max_attempts = slots + MAP_HASH_SIZE - 4
    cdef int64_t attempt = 0
    cdef Py_ssize_t pos
    while True:
        if attempt >= max_attempts:
            return -1
        pos = _map_position(hash, <int>attempt, slots)
        probes[0] += 1
        if _map_is_empty(table + pos):
            return -1
        attempt += 1
        if memcmp(table + pos, hash, MAP_HASH_SIZE) == 0:
            return kl_get_i64(table + pos + MAP_HASH_SIZE)


cdef int _check_table(Py_ssize_t table_size, Py_ssize_t slots) except -1:
    if slots <= 0 or slots * MAP_ENTRY_SIZE > table_size:
        raise ValueError(f"{slots} slots of {MAP_ENTRY_SIZE} bytes do not fit a table of {table_size} bytes")
    return 0


def offset_map_position_of(const unsigned char[::1] hash, int attempt, Py_ssize_t slots):
    """The byte position probe ``attempt`` of ``hash`` lands on (Kafka: ``positionOf``)."""
    if hash.shape[0] != MAP_HASH_SIZE:
        raise ValueError(f"a hash is {MAP_HASH_SIZE} bytes, not {hash.shape[0]}")
    if slots <= 0 or attempt < 0:
        raise ValueError("slots must be positive and attempt non-negative")
    return _map_position(&hash[0], attempt, slots)


def offset_map_put(unsigned char[::1] table, Py_ssize_t slots, const unsigned char[::1] key, int64_t offset):
    """Put ``key`` -> ``offset``; returns ``(new_entry, probes)`` (Kafka: ``put``, fullness checked by the caller)."""
    _check_table(table.shape[0], slots)
    cdef unsigned char hash[16]
    cdef int64_t probes = 0
    kl_md5(&key[0] if key.shape[0] else NULL, key.shape[0], hash)
    cdef int new = _map_put(&table[0], slots, hash, offset, &probes)
    return bool(new), probes


def offset_map_get(const unsigned char[::1] table, Py_ssize_t slots, const unsigned char[::1] key):
    """The offset stored for ``key`` or -1, and the probes it took: ``(offset, probes)`` (Kafka: ``get``)."""
    _check_table(table.shape[0], slots)
    cdef unsigned char hash[16]
    cdef int64_t probes = 0
    kl_md5(&key[0] if key.shape[0] else NULL, key.shape[0], hash)
    cdef int64_t found = _map_get(&table[0], slots, hash, &probes)
    return found, probes


cdef int _check_keys_inside(const RecordRow[::1] records, Py_ssize_t total) except -1:
    """Raise ValueError unless every keyed record's key lies inside the data (the kernels below then
    read keys without checks, outside the GIL)."""
    cdef Py_ssize_t i
    cdef const RecordRow *row
    for i in range(records.shape[0]):
        row = &records[i]
        if row.key_len >= 0 and (row.key_pos < 0 or row.key_pos + row.key_len > total):
            raise ValueError(f"record {i}'s key ({row.key_pos}, {row.key_len}) is outside the data")
    return 0


def offset_map_put_records(unsigned char[::1] table, Py_ssize_t slots, const unsigned char[::1] data,
                           const RecordRow[::1] records, int64_t start_offset, int64_t entries,
                           int64_t max_entries):
    """Put every keyed record at or past ``start_offset`` into the map, in order, until the map holds
    ``max_entries`` (the cleaner's ``buildOffsetMapForSegment`` loop; Kafka checks fullness before every put,
    even of a key already present).

    Returns ``(processed, entries, lookups, probes, last_put_offset, full)``: ``processed`` records were
    handled before the map filled (all of them when ``full`` is False); ``last_put_offset`` is -1 when
    nothing was put.
    """
    _check_table(table.shape[0], slots)
    cdef Py_ssize_t n = records.shape[0]
    cdef Py_ssize_t total = data.shape[0]
    cdef const unsigned char *p = &data[0] if total else NULL
    cdef unsigned char *t = &table[0]
    cdef int64_t lookups = 0, probes = 0, last = -1
    cdef Py_ssize_t i
    cdef const RecordRow *row
    _check_keys_inside(records, total)
    cdef unsigned char hashes[MAP_PREFETCH_GROUP][16]
    cdef const unsigned char *key_ptrs[MAP_PREFETCH_GROUP]
    cdef int32_t key_lens[MAP_PREFETCH_GROUP]
    cdef Py_ssize_t group_start, g, k
    cdef bint full = False
    i = 0
    with nogil:
        group_start = 0
        while group_start < n and not full:
            g = n - group_start if n - group_start < MAP_PREFETCH_GROUP else MAP_PREFETCH_GROUP
            # The keys lie a value apart in the data: fetch the next group's while this one is hashed.
            for k in range(group_start + g, min(group_start + 2 * g, n)):
                if records[k].key_len > 0:
                    kl_prefetch(p + records[k].key_pos)
            for k in range(g):
                row = &records[group_start + k]
                key_ptrs[k] = p + row.key_pos if row.key_len >= 0 else p
                key_lens[k] = row.key_len if row.key_len >= 0 and row.offset >= start_offset else -1
            kl_md5_many(key_ptrs, key_lens, <int>g, hashes)
            for k in range(g):
                if key_lens[k] >= 0:
                    kl_prefetch(t + _map_position(hashes[k], 0, slots))
            for k in range(g):
                i = group_start + k
                row = &records[i]
                if row.key_len < 0 or row.offset < start_offset:
                    continue
                if entries >= max_entries:
                    full = True
                    break
                lookups += 1
                entries += _map_put(t, slots, hashes[k], row.offset, &probes)
                last = row.offset
            group_start += g
        if not full:
            i = n
    return i, entries, lookups, probes, last, full


def offset_map_latest_codes(const unsigned char[::1] table, Py_ssize_t slots, const unsigned char[::1] data,
                            const RecordRow[::1] records, int64_t latest_offset):
    """For each record, what the map says of it (the key test of the cleaner's ``shouldRetainRecord``):
    2 = past the mapped range (kept), 1 = the latest for its key, 0 = superseded, -1 = no key.

    Returns ``(codes, lookups, probes)``.
    """
    _check_table(table.shape[0], slots)
    cdef Py_ssize_t n = records.shape[0]
    cdef Py_ssize_t total = data.shape[0]
    cdef const unsigned char *p = &data[0] if total else NULL
    codes_array = np.empty(n, dtype=np.int8)
    cdef int8_t[::1] codes = codes_array
    cdef int64_t lookups = 0, probes = 0, found
    cdef Py_ssize_t i
    cdef const RecordRow *row
    _check_keys_inside(records, total)
    cdef unsigned char hashes[MAP_PREFETCH_GROUP][16]
    cdef const unsigned char *key_ptrs[MAP_PREFETCH_GROUP]
    cdef int32_t key_lens[MAP_PREFETCH_GROUP]
    cdef Py_ssize_t group_start, g, k
    cdef const unsigned char *t = &table[0]
    with nogil:
        group_start = 0
        while group_start < n:
            g = n - group_start if n - group_start < MAP_PREFETCH_GROUP else MAP_PREFETCH_GROUP
            for k in range(group_start + g, min(group_start + 2 * g, n)):
                if records[k].key_len > 0:
                    kl_prefetch(p + records[k].key_pos)
            for k in range(g):
                row = &records[group_start + k]
                key_ptrs[k] = p + row.key_pos if row.key_len >= 0 else p
                key_lens[k] = row.key_len if row.key_len >= 0 and row.offset <= latest_offset else -1
            kl_md5_many(key_ptrs, key_lens, <int>g, hashes)
            for k in range(g):
                if key_lens[k] >= 0:
                    kl_prefetch(t + _map_position(hashes[k], 0, slots))
            for k in range(g):
                i = group_start + k
                row = &records[i]
                if row.offset > latest_offset:
                    codes[i] = 2
                elif row.key_len < 0:
                    codes[i] = -1
                else:
                    lookups += 1
                    found = _map_get(t, slots, hashes[k], &probes)
                    codes[i] = 1 if row.offset >= found else 0
            group_start += g
    return codes_array, lookups, probes
