# The batch scan of kafkalog._core (included by _core.pyx); plain twin: kafkalog/_core_py/scan.py.
#
# Kafka: clients/.../record/ByteBufferLogInputStream.nextBatch and FileLogInputStream.nextBatch (the
# framing checks), FileRecords.searchForOffsetWithSize (search_for_offset).  An entry is a 12-byte frame,
# offset (int64) and size (int32), then ``size`` bytes whose byte 4 (16 from the frame's start) is the
# magic.  The walk stops, without raising, at the first entry it cannot take and says why (ScanStop).

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
    there.  The same checks, in the same order, as ``_core_py.scan._next_frame``."""
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


def single_entry_magic(const unsigned char[::1] buf, int64_t max_entry_size=0x7FFFFFFF):
    """The magic of the one entry ``buf`` holds, or -1 when it does not hold exactly one whole entry
    (see ``_core_py.single_entry_magic``): the frame checks of ``scan_batches``, no array."""
    cdef Py_ssize_t end = buf.shape[0]
    cdef Frame f
    if end == 0:
        return -1
    if _next_frame(&buf[0], 0, end, max_entry_size, &f) >= 0 or LOG_OVERHEAD + <Py_ssize_t>f.size != end:
        return -1
    return f.magic


def producer_fields(const unsigned char[::1] buf, const int64_t[::1] positions):
    """The producer id and epoch of the v2 batch at each of ``positions`` in ``buf`` (see ``_core_py``).

    Returns ``(producer_ids, producer_epochs)``."""
    cdef Py_ssize_t n = positions.shape[0]
    cdef Py_ssize_t total = buf.shape[0]
    cdef Py_ssize_t i
    for i in range(n):
        if positions[i] < 0 or positions[i] > total - RECORD_BATCH_OVERHEAD:
            raise ValueError(f"producer_fields: the batch at {positions[i]} is outside the buffer")
    ids_array = np.empty(n, dtype=np.int64)
    epochs_array = np.empty(n, dtype=np.int16)
    cdef int64_t[::1] ids = ids_array
    cdef int16_t[::1] epochs = epochs_array
    cdef const unsigned char *p
    if n:
        p = &buf[0]
        with nogil:
            for i in range(n):
                ids[i] = kl_get_i64(p + positions[i] + PRODUCER_ID_OFFSET)
                epochs[i] = kl_get_i16(p + positions[i] + PRODUCER_EPOCH_OFFSET)
    return ids_array, epochs_array


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
