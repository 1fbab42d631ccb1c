# The record encode kernel of kafkalog._core (included by _core.pyx); plain twin:
# kafkalog/_core_py/encode.py.
#
# Kafka: clients/.../utils/ByteUtils.java (writeVarint, writeVarlong, zig-zag encoded) and
# DefaultRecord.writeTo: the records section of a v2 batch, sized first, then written in one buffer.

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
