# The validator's per-record pass over one v2 batch: twin of kafkalog/_core_py/validate.py (read it for
# the rules).  The records are read with decode.pxi's parser (_read_record_head, _read_header,
# _finish_record), so the framing errors are the record decode's; nothing is allocated per record.

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
    """A header key's bytes as the object decode sizes it: its UTF-8 text (invalid bytes replaced),
    re-encoded.  ASCII is itself; anything else goes through Python's codec."""
    cdef int32_t i
    cdef Py_ssize_t n
    for i in range(length):
        if p[pos + i] >= 0x80:
            n = len(PyUnicode_DecodeUTF8(<const char *>(p + pos), length, "replace").encode())
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
