# The validator's per-record pass over one v2 batch: twin of kafkalog/_core_py/validate.py (read it for
# the rules).  The records are read with decode.pxi's parser (_read_record_head, _read_header,
# _finish_record), so the framing errors are the record decode's; nothing is allocated per record.
# leader_append_v2_batch is the log's fused leader append's kernel (kafkalog/log/leader_append.py).

cdef enum:
    RECORD_NO_KEY = 1
    RECORD_BAD_TIMESTAMP = 2


cdef extern from *:
    int __builtin_clzll(unsigned long long) nogil


cdef inline int _v_varint_size(int64_t value) noexcept nogil:
    """Bytes of ``value`` as a zig-zag varint: 7 bits a byte of its significant bits."""
    cdef uint64_t zigzag = ((<uint64_t>value) << 1) ^ (<uint64_t>(value >> 63))
    return (64 - __builtin_clzll(zigzag | 1) + 6) // 7


cdef inline int64_t _v_field_size(int32_t length) noexcept nogil:
    return 1 if length < 0 else _v_varint_size(length) + length


cdef int64_t _v_wide_delta_size(int64_t value, int64_t base) except -1:
    """The varint size of ``value - base`` when the difference leaves the ``long`` range (a hostile offset
    or timestamp delta that wrapped): Python sizes it wider, and so does the twin."""
    cdef object wide = <object>value - <object>base
    zigzag = (wide << 1) ^ (wide >> 63)
    return max(1, (zigzag.bit_length() + 6) // 7)


cdef inline int64_t _v_delta_size(int64_t value, int64_t base) except -1:
    """The varint size of ``value - base`` as Python ints give it."""
    cdef int64_t difference = <int64_t>(<uint64_t>value - <uint64_t>base)
    if ((value ^ base) & (value ^ difference)) < 0:
        return _v_wide_delta_size(value, base)
    return _v_varint_size(difference)


cdef int64_t _v_header_key_size(const unsigned char *p, Py_ssize_t pos, int32_t length) except -1:
    """A header key's bytes as the object decode sizes it: its UTF-8 text (malformed bytes replaced as Java
    replaces them, :mod:`kafkalog._java_utf8`), re-encoded.  ASCII is itself; anything else goes through the
    codec."""
    cdef int32_t i
    cdef Py_ssize_t n
    for i in range(length):
        if p[pos + i] >= 0x80:
            n = len(PyUnicode_DecodeUTF8(<const char *>(p + pos), length, _JAVA_UTF8_ERRORS).encode())
            return _v_varint_size(n) + n
    return _v_varint_size(length) + length


def validate_v2_records(const unsigned char[::1] buf, Py_ssize_t start, Py_ssize_t end, int64_t count,
                        int64_t base_offset, int64_t base_timestamp, append_time=None, *, int64_t now,
                        int64_t timestamp_before_max_ms, int64_t timestamp_after_max_ms, bint compacted,
                        bint check_timestamps):
    """Read and check the ``count`` v2 records of ``buf[start:end]`` (see ``_core_py.validate``)."""
    cdef BatchHead h
    cdef Err err
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t pos
    cdef int64_t i, body, size = 0, max_timestamp = -1, difference
    cdef int32_t _h
    cdef bint in_sequence = True
    cdef V2Record r
    cdef HeaderRow hrow
    cdef list errors = []
    _head_from_args(buf.shape[0], start, end, count, base_offset, base_timestamp, append_time, &h)
    err.code = E_OK
    memset(&r, 0, sizeof(r))
    memset(&hrow, 0, sizeof(hrow))
    pos = start
    for i in range(count):
        if _read_record_head(p, &pos, end, base_offset, base_timestamp, h.has_append_time, h.append_ts,
                             &r, &err):
            _raise(&err)
        if compacted and r.key_len < 0:
            errors.append((i, RECORD_NO_KEY, r.timestamp, r.offset))
        elif check_timestamps and r.timestamp != -1:
            # Java long arithmetic, as recordHasInvalidTimestamp does it
            difference = <int64_t>(<uint64_t>now - <uint64_t>r.timestamp)
            if (difference > timestamp_before_max_ms
                    or <int64_t>(<uint64_t>0 - <uint64_t>difference) > timestamp_after_max_ms):
                errors.append((i, RECORD_BAD_TIMESTAMP, r.timestamp, r.offset))
        if r.timestamp > max_timestamp:
            max_timestamp = r.timestamp
        if r.offset != i:
            in_sequence = False
        body = (1 + _v_delta_size(r.timestamp, base_timestamp) + _v_delta_size(r.offset, base_offset)
                + _v_field_size(r.key_len) + _v_field_size(r.value_len) + _v_varint_size(r.n_headers))
        for _h in range(r.n_headers):
            if _read_header(p, &pos, &r, &hrow, &err):
                _raise(&err)
            body += _v_header_key_size(p, hrow.key_pos, hrow.key_len) + _v_field_size(hrow.value_len)
        if _finish_record(pos, &r, &err):
            _raise(&err)
        size += body + _v_varint_size(body)
    if pos != end:
        _fail(&err, E_REMAINING, pos)
        _raise(&err)
    return count, max_timestamp, size, in_sequence, errors


cdef enum:
    PARTITION_LEADER_EPOCH_AT = 12
    PRODUCER_ID_AT = 43
    BASE_SEQUENCE_AT = 53
    # computeAttributes keeps the codec, the transactional, control and delete-horizon flags
    KEPT_ATTRIBUTES = COMPRESSION_CODEC_MASK | 0x10 | CONTROL_FLAG_MASK | 0x40


def assign_offsets_v2_batch(unsigned char[::1] buf, int64_t next_offset, int32_t partition_leader_epoch, *,
                            int64_t now, int64_t timestamp_before_max_ms, int64_t timestamp_after_max_ms,
                            bint compacted, bint client):
    """assignOffsetsNonCompressed for the one uncompressed CreateTime v2 batch filling ``buf``: checks, then
    the header rewritten in place; ``None`` (nothing written) when it does not qualify or a check fails
    (see ``_core_py.validate``)."""
    cdef int64_t last_offset, largest
    if buf.shape[0] < RECORD_BATCH_OVERHEAD:
        return None
    if not _assign_in_place(&buf[0], buf.shape[0], next_offset, partition_leader_epoch, now,
                            timestamp_before_max_ms, timestamp_after_max_ms, compacted, client, &last_offset,
                            &largest):
        return None
    return last_offset, largest


def leader_append_v2_batch(unsigned char[::1] buf, int64_t next_offset, int32_t partition_leader_epoch, clock, *,
                           int64_t timestamp_before_max_ms, int64_t timestamp_after_max_ms, bint compacted,
                           int64_t max_size):
    """A client's append of one uncompressed CreateTime v2 batch with no producer id: the shallow pass's
    checks, the time read (``clock()``), then assign_offsets_v2_batch's (see ``_core_py.validate``).  Returns
    ``(last_offset, max_timestamp, partition_leader_epoch)`` when taken; else ``None`` (the clock not read) or
    the time read, nothing written."""
    cdef Py_ssize_t size = buf.shape[0]
    cdef unsigned char *p
    cdef int32_t sent_epoch
    cdef int64_t now, last_offset, largest
    if size < RECORD_BATCH_OVERHEAD or size > max_size:
        return None
    p = &buf[0]
    # analyzeAndValidateRecords: one whole v2 batch, base offset 0 from a client, its CRC; no producer id
    if (LOG_OVERHEAD + <int64_t>kl_get_i32(p + 8) != size or p[MAGIC_OFFSET] != 2 or kl_get_i64(p) != 0
            or kl_get_i64(p + PRODUCER_ID_AT) > -1):
        return None
    if kl_get_u32(p + CRC_OFFSET) != kl_crc32c(0, p + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET):
        return None
    sent_epoch = kl_get_i32(p + PARTITION_LEADER_EPOCH_AT)
    now = clock()
    if not _assign_in_place(p, size, next_offset, partition_leader_epoch, now, timestamp_before_max_ms,
                            timestamp_after_max_ms, compacted, True, &last_offset, &largest):
        return now
    return last_offset, largest, sent_epoch


cdef bint _assign_in_place(unsigned char *p, Py_ssize_t size, int64_t next_offset, int32_t partition_leader_epoch,
                           int64_t now, int64_t timestamp_before_max_ms, int64_t timestamp_after_max_ms,
                           bint compacted, bint client, int64_t *last_offset_out,
                           int64_t *largest_out) noexcept nogil:
    """assign_offsets_v2_batch over the ``size`` bytes at ``p`` (at least a batch header): whether it took the
    batch, its last offset and largest timestamp in the two outputs."""
    cdef Py_ssize_t pos = RECORD_BATCH_OVERHEAD
    cdef int16_t attributes
    cdef int32_t last_offset_delta, count, _h
    cdef int64_t i, base_offset, base_timestamp, largest = -1, difference, last_offset
    cdef V2Record r
    cdef HeaderRow hrow
    cdef Err err
    attributes = kl_get_i16(p + ATTRIBUTES_OFFSET)
    if (LOG_OVERHEAD + <int64_t>kl_get_i32(p + 8) != size or p[MAGIC_OFFSET] != 2
            or attributes & (COMPRESSION_CODEC_MASK | TIMESTAMP_TYPE_MASK)):
        return False
    last_offset_delta = kl_get_i32(p + LAST_OFFSET_DELTA_OFFSET)
    count = kl_get_i32(p + RECORDS_COUNT_OFFSET)
    if count <= 0 or next_offset > <int64_t>0x7FFFFFFFFFFFFFFF - count:
        return False
    # validateBatch for a client's batch (a v2 log takes transactional and idempotent ones)
    if client and (<int64_t>last_offset_delta + 1 != count or attributes & CONTROL_FLAG_MASK
                   or (kl_get_i64(p + PRODUCER_ID_AT) > -1 and kl_get_i32(p + BASE_SEQUENCE_AT) < 0)):
        return False
    base_offset = kl_get_i64(p)
    base_timestamp = kl_get_i64(p + BASE_TIMESTAMP_OFFSET)
    err.code = E_OK
    memset(&r, 0, sizeof(r))
    memset(&hrow, 0, sizeof(hrow))
    if _check_count(count, pos, size, &err):
        return False
    # validateRecord for each record, as validate_v2_records does it (check_timestamps: a CreateTime log)
    for i in range(count):
        if _read_record_head(p, &pos, size, base_offset, base_timestamp, False, 0, &r, &err):
            return False
        if compacted and r.key_len < 0:
            return False
        if r.timestamp != -1:
            difference = <int64_t>(<uint64_t>now - <uint64_t>r.timestamp)
            if (difference > timestamp_before_max_ms
                    or <int64_t>(<uint64_t>0 - <uint64_t>difference) > timestamp_after_max_ms):
                return False
        if r.timestamp > largest:
            largest = r.timestamp
        for _h in range(r.n_headers):
            if _read_header(p, &pos, &r, &hrow, &err):
                return False
        if _finish_record(pos, &r, &err):
            return False
    if pos != size:
        return False
    # setLastOffset, setPartitionLeaderEpoch, setMaxTimestamp(CreateTime, largest)
    last_offset = next_offset + count - 1
    kl_put_i64(p, <int64_t>(<uint64_t>last_offset - <uint64_t>last_offset_delta))
    kl_put_i32(p + PARTITION_LEADER_EPOCH_AT, partition_leader_epoch)
    if largest != kl_get_i64(p + MAX_TIMESTAMP_OFFSET):
        kl_put_i16(p + ATTRIBUTES_OFFSET, attributes & KEPT_ATTRIBUTES)
        kl_put_i64(p + MAX_TIMESTAMP_OFFSET, largest)
        kl_put_i32(p + CRC_OFFSET, <int32_t>kl_crc32c(0, p + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET))
    last_offset_out[0] = last_offset
    largest_out[0] = largest
    return True
