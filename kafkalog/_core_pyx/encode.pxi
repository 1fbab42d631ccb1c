# The record encode kernel of kafkalog._core (included by _core.pyx); plain twin:
# kafkalog/_core_py/encode.py.
#
# Kafka: clients/.../utils/ByteUtils.java (writeVarint, writeVarlong, zig-zag encoded) and
# DefaultRecord.writeTo: the records section of a v2 batch, sized first, then written in one buffer; and
# MemoryRecords.filterTo's rewrite of plain v2 batches for the cleaner (filter_v2_batches).

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


# -- From record inputs: split_records and encode_v2_record_inputs ---------------------------------------
#
# The producer's path (MemoryRecords.with_records) used to split its tuples into columns in Python and then
# call encode_v2_records, which made two more lists: the checks took four fifths of the time.  Here the
# checks of the plain twin's split_records run in one C loop that leaves, per record, its timestamp and
# borrowed pointers to its key and value; the encode reads those arrays.  The errors are the plain twin's,
# raised in the same order: every record is checked (in input order, each field in the plain twin's order)
# before any field is converted or encoded.

cdef struct _Inputs:
    Py_ssize_t n, capacity
    int64_t *timestamps
    PyObject **keys        # borrowed: held by an exact tuple in ``owned``, or by ``owned`` itself
    PyObject **values
    bint any_headers


cdef int _inputs_grow(_Inputs *inputs) except -1:
    return _inputs_reserve(inputs, inputs.capacity * 2 if inputs.capacity else 64)


cdef int _inputs_reserve(_Inputs *inputs, Py_ssize_t capacity) except -1:
    cdef void *p
    if capacity < 1:
        capacity = 1
    p = realloc(inputs.timestamps, capacity * sizeof(int64_t))
    if p == NULL:
        raise MemoryError()
    inputs.timestamps = <int64_t *>p
    p = realloc(inputs.keys, capacity * sizeof(PyObject *))
    if p == NULL:
        raise MemoryError()
    inputs.keys = <PyObject **>p
    p = realloc(inputs.values, capacity * sizeof(PyObject *))
    if p == NULL:
        raise MemoryError()
    inputs.values = <PyObject **>p
    inputs.capacity = capacity
    return 0


cdef void _inputs_free(_Inputs *inputs) noexcept:
    free(inputs.timestamps)
    free(inputs.keys)
    free(inputs.values)


cdef inline bint _is_bytes_like(object x):
    return type(x) is bytes or isinstance(x, (bytes, bytearray, memoryview))


cdef object _checked_headers(object record_headers):
    """The plain twin's header checks; the headers as a list, or None when there are none."""
    if not record_headers:
        return None
    for header in record_headers:
        if not isinstance(header, (tuple, list)) or len(header) != 2:
            raise TypeError(f"A record header is a (key, value) pair, not {header!r}")
        header_key, header_value = header
        if header_key is None:
            raise ValueError("Invalid null header key found in headers")
        if not isinstance(header_key, str):
            raise TypeError(f"A header key is a str, not {type(header_key).__name__}")
        if header_value is not None and not _is_bytes_like(header_value):
            raise TypeError(f"A header value is bytes-like or None, not {type(header_value).__name__}")
    return list(record_headers)


cdef list _check_inputs(object records, _Inputs *inputs, list owned):
    """Every record checked and unpacked into ``inputs`` (the plain twin's ``split_records``); returns the
    headers column, or None when no record has headers.  ``owned`` keeps every object pointed to alive."""
    cdef object record, key, value, timestamp, record_headers
    cdef Py_ssize_t m, i
    cdef int overflow
    cdef int64_t t
    cdef list headers = None
    cdef bint listed = type(records) is list or type(records) is tuple
    if listed:
        _inputs_reserve(inputs, len(records))
        # a copy of the list's pointers holds every record (cheaper than appending them one by one); a
        # generator is still read one record at a time, so its first bad record stops it as in the plain twin
        records = list(records)
        owned.append(records)
    for record in records:
        if not listed:
            owned.append(record)
        if type(record) is tuple:
            # the tuple holds its items, and ``owned`` the tuple: its key and value can be borrowed
            m = PyTuple_GET_SIZE(record)
            if not 2 <= m <= 4:
                raise ValueError(
                    f"A record is (key, value), (key, value, timestamp) or (key, value, timestamp, headers); "
                    f"got a sequence of {m}")
            key = <object>PyTuple_GET_ITEM(record, 0)
            value = <object>PyTuple_GET_ITEM(record, 1)
            timestamp = <object>PyTuple_GET_ITEM(record, 2) if m > 2 else None
            record_headers = <object>PyTuple_GET_ITEM(record, 3) if m > 3 else None
        else:
            if isinstance(record, (tuple, list)):
                m = len(record)
                if not 2 <= m <= 4:
                    raise ValueError(
                        f"A record is (key, value), (key, value, timestamp) or (key, value, timestamp, "
                        f"headers); got a sequence of {m}")
                key, value = record[0], record[1]
                timestamp = record[2] if m > 2 else None
                record_headers = record[3] if m > 3 else None
            elif hasattr(record, "key") and hasattr(record, "value"):
                key, value = record.key, record.value
                timestamp = getattr(record, "timestamp", None)
                record_headers = getattr(record, "headers", None)
            else:
                raise TypeError(
                    "A record is a tuple (key, value[, timestamp[, headers]]) or an object with key and value "
                    f"attributes, not {type(record).__name__}")
            owned.append(key)
            owned.append(value)
        if timestamp is not None and not isinstance(timestamp, int):
            raise TypeError(f"A record timestamp is an int (milliseconds), not {type(timestamp).__name__}")
        if key is not None and not _is_bytes_like(key):
            raise TypeError(f"A record key must be bytes-like or None, not {type(key).__name__}")
        if value is not None and not _is_bytes_like(value):
            raise TypeError(f"A record value must be bytes-like or None, not {type(value).__name__}")
        if timestamp is None:
            t = -1
        else:
            t = PyLong_AsLongLongAndOverflow(timestamp, &overflow)
            if overflow < 0 or (overflow == 0 and t < -1):
                raise ValueError(f"Invalid negative timestamp {timestamp}")
            if overflow > 0:
                raise ValueError(f"Invalid timestamp {timestamp}: larger than a Java long holds")
        i = inputs.n
        if record_headers is not None:
            record_headers = _checked_headers(record_headers)
            if record_headers is not None:
                if headers is None:
                    headers = [None] * i
                inputs.any_headers = True
        if headers is not None:
            headers.append(record_headers)
        if i == inputs.capacity:
            _inputs_grow(inputs)
        inputs.timestamps[i] = t
        inputs.keys[i] = <PyObject *>key
        inputs.values[i] = <PyObject *>value
        inputs.n = i + 1
    return headers


def split_records(records):
    """Record inputs split into checked key, value, timestamp and header columns, see ``_core_py``."""
    cdef _Inputs inputs
    memset(&inputs, 0, sizeof(_Inputs))
    cdef list owned = []
    cdef list keys, values, timestamps
    cdef Py_ssize_t i
    try:
        headers = _check_inputs(records, &inputs, owned)
        keys = [None] * inputs.n
        values = [None] * inputs.n
        timestamps = [None] * inputs.n
        for i in range(inputs.n):
            keys[i] = <object>inputs.keys[i]
            values[i] = <object>inputs.values[i]
            timestamps[i] = inputs.timestamps[i]
        if headers is None:
            headers = [None] * inputs.n
        return keys, values, timestamps, headers
    finally:
        _inputs_free(&inputs)


cdef inline Py_ssize_t _put_bytes_field(unsigned char *out, Py_ssize_t length, const char *data) noexcept nogil:
    """A key or value: its zig-zag varint length and its bytes, or varint -1 for null (``length`` < 0)."""
    cdef unsigned char *at = out
    if length < 0:
        out[0] = 1
        return 1
    at = _put_varint(at, _zigzag32(<int32_t>length))
    memcpy(at, data, length)
    return (at - out) + length


def encode_v2_record_inputs(records, base_timestamp=None):
    """The records section of a v2 batch from record inputs, with its count and first and largest
    timestamps, see ``_core_py``."""
    cdef _Inputs inputs
    memset(&inputs, 0, sizeof(_Inputs))
    cdef list owned = []
    cdef list headers, header_list = None
    cdef Py_ssize_t n, i, body, total = 0
    cdef int j
    cdef Py_ssize_t *lengths = NULL  # key length, value length and record size, three a record (-1: null)
    cdef const char **data = NULL    # key and value bytes, two a record
    cdef int64_t base, first, largest, ts_delta
    cdef unsigned char *out
    cdef object field, record_headers, hk, hv
    try:
        headers = _check_inputs(records, &inputs, owned)
        n = inputs.n
        if n == 0:
            return b"", 0, -1, -1
        first = inputs.timestamps[0]
        base = first if base_timestamp is None else <int64_t>base_timestamp
        lengths = <Py_ssize_t *>malloc(3 * n * sizeof(Py_ssize_t))
        data = <const char **>malloc(2 * n * sizeof(const char *))
        if lengths == NULL or data == NULL:
            raise MemoryError()
        # Every record passed its checks: now bytearrays and memoryviews become bytes, header keys UTF-8,
        # and each record is sized, so the output is allocated once.
        largest = first
        for i in range(n):
            if inputs.timestamps[i] > largest:
                largest = inputs.timestamps[i]
            ts_delta = <int64_t>(<uint64_t>inputs.timestamps[i] - <uint64_t>base)
            body = 1 + _varlong_size(_zigzag64(ts_delta)) + _varint_size(_zigzag32(<int32_t>i))
            for j in range(2):
                field = <object>(inputs.keys[i] if j == 0 else inputs.values[i])
                if field is None:
                    lengths[3 * i + j] = -1
                    body += 1
                    continue
                if type(field) is not bytes:
                    field = bytes(field)
                    owned.append(field)
                lengths[3 * i + j] = PyBytes_GET_SIZE(field)
                data[2 * i + j] = PyBytes_AS_STRING(field)
                body += _varint_size(_zigzag32(<int32_t>lengths[3 * i + j])) + lengths[3 * i + j]
            record_headers = headers[i] if headers is not None else None
            if record_headers is None:
                body += 1
            else:
                if header_list is None:
                    header_list = [None] * n
                encoded = []
                for hk, hv in record_headers:
                    encoded.append((hk.encode("utf-8"), None if hv is None else _as_bytes(hv)))
                header_list[i] = encoded
                body += _varint_size(_zigzag32(<int32_t>len(encoded)))
                for hk, hv in encoded:
                    body += _field_size(hk) + _field_size(hv)
            lengths[3 * i + 2] = body
            total += _varint_size(_zigzag32(<int32_t>body)) + body
        result = PyBytes_FromStringAndSize(NULL, total)
        out = <unsigned char *>PyBytes_AS_STRING(result)
        for i in range(n):
            out = _put_varint(out, _zigzag32(<int32_t>lengths[3 * i + 2]))
            out[0] = 0  # attributes
            out += 1
            ts_delta = <int64_t>(<uint64_t>inputs.timestamps[i] - <uint64_t>base)
            out = _put_varlong(out, _zigzag64(ts_delta))
            out = _put_varint(out, _zigzag32(<int32_t>i))
            out += _put_bytes_field(out, lengths[3 * i], data[2 * i])
            out += _put_bytes_field(out, lengths[3 * i + 1], data[2 * i + 1])
            if header_list is None or header_list[i] is None:
                out[0] = 0
                out += 1
            else:
                record_headers = header_list[i]
                out = _put_varint(out, _zigzag32(<int32_t>len(record_headers)))
                for hk, hv in record_headers:
                    out = _put_field(out, hk)
                    out = _put_field(out, hv)
        return result, n, first, largest
    finally:
        _inputs_free(&inputs)
        free(lengths)
        free(data)


# -- v0/v1 messages: encode_legacy_messages ---------------------------------------------------------------
#
# Kafka: LegacyRecord.write behind the 12-byte log overhead, once per message (what a broker writes when it
# converts records to message format 0.10 or older).  Sized first, then written into one bytes object; the
# CRC-32 of each message runs over what was just written, from the magic byte to the end.

def encode_legacy_messages(keys, values, timestamps, offsets, int magic, int attributes):
    """v0 or v1 messages, each framed by its offset and size (Kafka: ``LegacyRecord.write``), see ``_core_py``."""
    cdef Py_ssize_t n = len(keys)
    if len(values) != n or len(timestamps) != n or len(offsets) != n:
        raise ValueError("encode_legacy_messages: the columns differ in length")
    if magic != 0 and magic != 1:
        raise ValueError(f"Legacy messages have magic 0 or 1, not {magic}")
    cdef list key_list = [None if k is None else _as_bytes(k) for k in keys]
    cdef list value_list = [None if v is None else _as_bytes(v) for v in values]
    cdef Py_ssize_t header = 4 + 2 + (8 if magic == 1 else 0)  # crc, magic, attributes[, timestamp]
    cdef Py_ssize_t i, total = 0, size, length
    cdef int64_t offset, timestamp
    cdef object field
    cdef unsigned char *out
    cdef unsigned char *message
    for i in range(n):
        total += 12 + header + 8
        field = key_list[i]
        if field is not None:
            total += PyBytes_GET_SIZE(field)
        field = value_list[i]
        if field is not None:
            total += PyBytes_GET_SIZE(field)
    result = PyBytes_FromStringAndSize(NULL, total)
    out = <unsigned char *>PyBytes_AS_STRING(result)
    for i in range(n):
        offset = offsets[i]
        timestamp = timestamps[i]
        message = out + 12
        size = header + 8
        message[4] = <unsigned char>magic
        message[5] = <unsigned char>(attributes & 0xFF)
        out = message + 6
        if magic == 1:
            kl_put_i64(out, timestamp)
            out += 8
        for field in (key_list[i], value_list[i]):
            if field is None:
                kl_put_i32(out, -1)
                out += 4
            else:
                length = PyBytes_GET_SIZE(field)
                kl_put_i32(out, <int32_t>length)
                memcpy(out + 4, PyBytes_AS_STRING(field), length)
                out += 4 + length
                size += length
        kl_put_i64(message - 12, offset)
        kl_put_i32(message - 4, <int32_t>size)
        kl_put_i32(message, <int32_t>kl_crc32(0, message + 4, size - 4))
    return result


def filter_v2_batches(const unsigned char[::1] data, const RecordRow[::1] records, const int64_t[::1] starts,
                      const int64_t[::1] positions, const uint8_t[::1] keep, const uint8_t[::1] fates,
                      int64_t delete_horizon_ms, bytearray out):
    """The log cleaner's rewrite of a run of uncompressed v2 batches without the records it drops (Kafka:
    ``MemoryRecords.filterTo``'s ``filterBatch``, ``buildRetainedRecordsInto`` and
    ``DefaultRecordBatch.writeEmptyHeader``), for batches whose attributes hold no bit but the transactional,
    control and delete-horizon ones (uncompressed, CreateTime).  Batch ``b`` is the batch at ``positions[b]``
    of ``data``, its records ``records[starts[b]:starts[b + 1]]``, ``keep`` a byte per record, ``fates[b]``
    the filter's word on the batch: ``FILTER_RETAIN_EMPTY`` (keep it as a bare header if no record is kept),
    ``FILTER_EMPTY_TXN_MARKER`` (the marker of a transaction none of whose batches is left).

    A batch keeping every record and needing no new delete horizon is appended to ``out`` as it is.  One
    keeping none is dropped, or written as an empty header (base timestamp -1, 0 records, no delete horizon,
    the rest of the header kept) when ``FILTER_RETAIN_EMPTY``.  The kept records of any other are written as
    a batch of the same header fields (base offset, last offset delta, producer fields, leader epoch), its
    records' deltas from the same base offset, its max timestamp the largest kept one, its CRC-32C computed.
    A batch without a delete horizon that keeps a tombstone, or is ``FILTER_EMPTY_TXN_MARKER``, gets one:
    attribute bit 6 and ``delete_horizon_ms`` as its base timestamp; a batch with one keeps it; any other
    takes the first kept record's timestamp as its base.  It stops before the first batch the record layer
    must rewrite itself: one with other attribute bits (compressed, LogAppendTime), a rebuilt one whose kept
    records have headers or offsets not increasing, or one needing a new horizon when ``delete_horizon_ms`` is
    negative (the caller's clock gave none a batch can hold).

    Returns ``(done, kept, max_timestamps)``: the batches handled, and for each its kept records (-1 when
    dropped, 0 for an empty header) and the max timestamp of what was written (-1 when dropped).
    """
    cdef Py_ssize_t nb = positions.shape[0]
    if starts.shape[0] != nb + 1 or fates.shape[0] != nb or keep.shape[0] != records.shape[0]:
        raise ValueError("filter_v2_batches: the columns differ in length")
    kept_array = np.full(nb, -1, dtype=np.int32)
    max_ts_array = np.full(nb, -1, dtype=np.int64)
    cdef int32_t[::1] kept_out = kept_array
    cdef int64_t[::1] max_ts_out = max_ts_array
    cdef Py_ssize_t total = data.shape[0], n = records.shape[0]
    cdef Py_ssize_t b, r, lo, hi, kept, size, at, start, crc_length, need = 0
    cdef int64_t position, base_offset, base_ts = 0, max_ts = 0, last = 0
    cdef int16_t attributes
    cdef const RecordRow *row
    cdef bint first, tombstone, odd, horizon
    # Check every batch and record the loop reads lies inside the data, and size the worst case of the
    # output: each batch whole, plus a rebuilt record's largest growth (its two varint deltas: 9 + 4 bytes).
    for b in range(nb):
        lo, hi, position = starts[b], starts[b + 1], positions[b]
        if lo < 0 or hi < lo or hi > n or position < 0 or position + RECORD_BATCH_OVERHEAD > total:
            raise ValueError(f"filter_v2_batches: batch {b} is outside the data")
        size = kl_get_i32(&data[position + LENGTH_OFFSET]) + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD or position + size > total or data[position + MAGIC_OFFSET] != 2:
            raise ValueError(f"filter_v2_batches: batch {b} is not a v2 batch inside the data")
        need += size + 16 * (hi - lo)
        for r in range(lo, hi):
            row = &records[r]
            if (row.key_len >= 0 and (row.key_pos < 0 or row.key_pos + row.key_len > total)) or (
                    row.value_len >= 0 and (row.value_pos < 0 or row.value_pos + row.value_len > total)):
                raise ValueError(f"filter_v2_batches: record {r}'s key or value is outside the data")
    at = PyByteArray_GET_SIZE(out)
    PyByteArray_Resize(out, at + need)
    cdef unsigned char *o = <unsigned char *>PyByteArray_AS_STRING(out)
    cdef const unsigned char *d = &data[0] if total else NULL
    b = 0
    with nogil:
        while b < nb:
            lo, hi, position = starts[b], starts[b + 1], positions[b]
            size = kl_get_i32(d + position + LENGTH_OFFSET) + LOG_OVERHEAD
            attributes = kl_get_i16(d + position + ATTRIBUTES_OFFSET)
            if attributes & ~(TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK | DELETE_HORIZON_FLAG_MASK):
                break  # compressed or LogAppendTime: the record layer rebuilds it in its codec
            kept = 0
            tombstone = odd = False
            first = True
            for r in range(lo, hi):
                if keep[r]:
                    row = &records[r]
                    kept += 1
                    if row.value_len < 0:
                        tombstone = True
                    if first:
                        base_ts = max_ts = row.timestamp
                        first = False
                    else:
                        if row.offset <= last:
                            odd = True  # offsets not increasing: the builder's error
                        if row.timestamp > max_ts:
                            max_ts = row.timestamp
                    last = row.offset
                    if row.header_count != 0:
                        odd = True
            # A new delete horizon: a kept tombstone or an empty transaction's marker in a batch without one.
            horizon = ((tombstone or fates[b] & FILTER_EMPTY_TXN_MARKER)
                       and not attributes & DELETE_HORIZON_FLAG_MASK)
            if kept == 0:
                if fates[b] & FILTER_RETAIN_EMPTY:
                    memcpy(o + at, d + position, RECORD_BATCH_OVERHEAD)
                    kl_put_i32(o + at + LENGTH_OFFSET, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)
                    kl_put_i16(o + at + ATTRIBUTES_OFFSET, attributes & ~DELETE_HORIZON_FLAG_MASK)
                    kl_put_i64(o + at + BASE_TIMESTAMP_OFFSET, -1)
                    kl_put_i32(o + at + RECORDS_COUNT_OFFSET, 0)
                    kl_put_i32(o + at + CRC_OFFSET, <int32_t>kl_crc32c(
                        0, o + at + ATTRIBUTES_OFFSET, RECORD_BATCH_OVERHEAD - ATTRIBUTES_OFFSET))
                    at += RECORD_BATCH_OVERHEAD
                    max_ts_out[b] = kl_get_i64(d + position + MAX_TIMESTAMP_OFFSET)
                    kept_out[b] = 0
            elif kept == hi - lo and not horizon:
                memcpy(o + at, d + position, size)
                at += size
                max_ts_out[b] = kl_get_i64(d + position + MAX_TIMESTAMP_OFFSET)
                kept_out[b] = <int32_t>kept
            elif odd or (horizon and delete_horizon_ms < 0):
                break
            else:
                if horizon:
                    base_ts = delete_horizon_ms
                    attributes |= DELETE_HORIZON_FLAG_MASK
                elif attributes & DELETE_HORIZON_FLAG_MASK:
                    base_ts = kl_get_i64(d + position + BASE_TIMESTAMP_OFFSET)  # the horizon it has
                start = at
                memcpy(o + at, d + position, RECORD_BATCH_OVERHEAD)
                at += RECORD_BATCH_OVERHEAD
                base_offset = kl_get_i64(d + position)
                for r in range(lo, hi):
                    if keep[r]:
                        at = _put_kept_record(o, at, d, &records[r], base_offset, base_ts)
                kl_put_i32(o + start + LENGTH_OFFSET, <int32_t>(at - start - LOG_OVERHEAD))
                kl_put_i16(o + start + ATTRIBUTES_OFFSET, attributes)
                kl_put_i64(o + start + BASE_TIMESTAMP_OFFSET, base_ts)
                kl_put_i64(o + start + MAX_TIMESTAMP_OFFSET, max_ts)
                kl_put_i32(o + start + RECORDS_COUNT_OFFSET, <int32_t>kept)
                # The CRC-32C runs from the attributes to the end of the batch.
                crc_length = at - start - ATTRIBUTES_OFFSET
                kl_put_i32(o + start + CRC_OFFSET, <int32_t>kl_crc32c(0, o + start + ATTRIBUTES_OFFSET, crc_length))
                max_ts_out[b] = max_ts
                kept_out[b] = <int32_t>kept
            b += 1
    PyByteArray_Resize(out, at)
    return b, kept_array, max_ts_array


cdef inline Py_ssize_t _put_kept_record(unsigned char *o, Py_ssize_t at, const unsigned char *d,
                                        const RecordRow *row, int64_t base_offset, int64_t base_ts) noexcept nogil:
    """One kept record at ``o + at`` (Kafka: ``DefaultRecord.writeTo``): attributes 0, its deltas from the
    batch's base offset and the new base timestamp, key, value, no headers.  Returns the new end."""
    cdef uint64_t ts_delta = _zigzag64(<int64_t>(<uint64_t>row.timestamp - <uint64_t>base_ts))
    cdef uint32_t offset_delta = _zigzag32(<int32_t>(row.offset - base_offset))
    cdef Py_ssize_t body = (1 + _varlong_size(ts_delta) + _varint_size(offset_delta)
                            + _varint_size(_zigzag32(row.key_len)) + (row.key_len if row.key_len > 0 else 0)
                            + _varint_size(_zigzag32(row.value_len)) + (row.value_len if row.value_len > 0 else 0)
                            + 1)
    cdef unsigned char *p = _put_varint(o + at, _zigzag32(<int32_t>body))
    p[0] = 0
    p = _put_varlong(p + 1, ts_delta)
    p = _put_varint(p, offset_delta)
    p = _put_varint(p, _zigzag32(row.key_len))
    if row.key_len > 0:
        memcpy(p, d + row.key_pos, row.key_len)
        p += row.key_len
    p = _put_varint(p, _zigzag32(row.value_len))
    if row.value_len > 0:
        memcpy(p, d + row.value_pos, row.value_len)
        p += row.value_len
    p[0] = 0
    return (p + 1) - o
