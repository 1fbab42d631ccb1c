# The record decode kernels of kafkalog._core (included by _core.pyx); plain twin:
# kafkalog/_core_py/decode.py.
#
# Kafka: clients/.../utils/ByteUtils.java (readVarint, readVarlong), DefaultRecord.java (readFrom and
# readPartiallyFrom: a v2 record is a varint length, an attributes byte, varlong timestamp delta, varint
# offset delta, varint-sized key and value, and a varint count of varint-sized headers),
# DefaultRecordBatch.java (the records after the 61-byte header), LegacyRecord.java (v0/v1 messages:
# crc, magic, attributes, v1 timestamp, int32-sized key and value).  Records come out as columns
# (RECORD_DTYPE, HEADER_DTYPE of _common.py) or as Record objects; gather_slices packs spans of them in
# Arrow's variable-width layout.

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


# A record's timestamp type, by its stored number + 1 (-1 NoTimestampType, 0 CreateTime, 1 LogAppendTime).
cdef tuple _TIMESTAMP_TYPES = (TimestampType.NO_TIMESTAMP_TYPE, TimestampType.CREATE_TIME,
                               TimestampType.LOG_APPEND_TIME)


# Records are leaves: bytes, ints and a list of (str, bytes) pairs, so the cycle collector has
# nothing to find in them.  Taking them out of its bookkeeping matters: decoding tens of thousands
# at once otherwise triggers a collection every few hundred records, each walking the list built so
# far.  Their headers lists and pairs are taken out too (untracked once made): a reader that asks every
# record for its headers otherwise makes a tracked list a record, and the collections those set off were
# a fifth of a whole-partition read (issue 32's profile).  (A caller who builds a cycle through a
# record's headers list leaks it; nothing worse.)
# A reader drops a run's records together (up to a batch, 1,000 in Kafka's default batches): the freelist
# keeps that many to make the next run's from, sparing an allocation a record (issue 18's profile: 5-8%
# of a whole-log read).
@cython.no_gc
@cython.freelist(2048)
cdef class Record:
    """One record as a reader sees it: absolute ``offset``, ``timestamp`` (ms, -1 for none), ``key`` and
    ``value`` (``bytes`` or ``None``) and ``headers`` (a list of ``(str, bytes | None)``); and what the
    batch it came from says of it: ``timestamp_type`` and ``is_control`` (``control_type`` names which).

    Kafka: ``org.apache.kafka.common.record.Record``, with the batch facts a ``ConsumerRecord`` carries.
    Equal to any record, of either twin, with the same offset, timestamp, key, value and headers.
    """

    # Python objects (the ints made once, by the decode), read through the member descriptors that
    # _use_member_descriptors puts in place of Cython's properties.
    cdef readonly object offset
    cdef readonly object timestamp
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
        # No headers is left for the property to make (a list the collector does not track, as the decode's).
        given = list(headers) if headers is not None else None
        self._headers = given if given else None
        if timestamp_type not in (-1, 0, 1):
            raise ValueError(f"Unknown timestamp type id {timestamp_type!r}")
        self._timestamp_type = timestamp_type
        self.is_control = is_control

    @property
    def headers(self):
        cdef list headers = self._headers
        if headers is None:
            headers = _leaf_list()
            self._headers = headers
        return headers

    @property
    def timestamp_type(self):
        return _TIMESTAMP_TYPES[self._timestamp_type + 1]

    @property
    def control_type(self):
        if not self.is_control:
            return None
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


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char *name
        int type
        Py_ssize_t offset
        int flags
        const char *doc
    int T_OBJECT_EX
    int READONLY
    object PyDescr_NewMember(PyTypeObject *type, PyMemberDef *member)

cdef extern from *:
    """
    /* Where Record's fields sit in the C struct Cython makes of it (the struct's name is Cython's: a
       change of it fails the build here, not at run time). */
    #define KL_RECORD_FIELD(name) ((Py_ssize_t)offsetof(struct __pyx_obj_8kafkalog_5_core_Record, name))
    """
    Py_ssize_t KL_RECORD_OFFSET "KL_RECORD_FIELD(offset)"
    Py_ssize_t KL_RECORD_TIMESTAMP "KL_RECORD_FIELD(timestamp)"
    Py_ssize_t KL_RECORD_KEY "KL_RECORD_FIELD(key)"
    Py_ssize_t KL_RECORD_VALUE "KL_RECORD_FIELD(value)"


# Static: a member descriptor keeps a pointer to its PyMemberDef for the life of the type.
cdef PyMemberDef _RECORD_MEMBERS[4]


cdef int _use_member_descriptors(type cls) except -1:
    """Put plain member descriptors (``T_OBJECT_EX``, read-only) in ``Record``'s dict in place of the
    properties Cython generates for its ``readonly`` object fields.

    Reading every record's offset, key, value and timestamp is a reader's whole loop, and CPython 3.11
    specializes ``record.key`` only for such a descriptor (``LOAD_ATTR_SLOT``: a type-version check and one
    load) — the slots of a Python class; a property of a C type is a generic lookup and a call each time,
    and made the loop 2.5x slower (issue 18's profile).  The fields are never NULL: Cython's ``tp_new``
    sets them to None, and ``__init__`` and the decode to the record's values."""
    cdef const char *names[4]
    cdef Py_ssize_t offsets[4]
    cdef int i
    cdef PyTypeObject *t = <PyTypeObject *>cls
    names[:] = [b"offset", b"timestamp", b"key", b"value"]
    offsets[:] = [KL_RECORD_OFFSET, KL_RECORD_TIMESTAMP, KL_RECORD_KEY, KL_RECORD_VALUE]
    for i in range(4):
        _RECORD_MEMBERS[i].name = names[i]
        _RECORD_MEMBERS[i].type = T_OBJECT_EX
        _RECORD_MEMBERS[i].offset = offsets[i]
        _RECORD_MEMBERS[i].flags = READONLY
        _RECORD_MEMBERS[i].doc = NULL
        # The type is static, so its dict is set directly (type.__setattr__ refuses), then its
        # attribute caches are told.
        (<dict><object>t.tp_dict)[names[i].decode("ascii")] = PyDescr_NewMember(t, &_RECORD_MEMBERS[i])
    PyType_Modified(cls)
    return 0


_use_member_descriptors(Record)


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)


cdef inline list _leaf_list():
    """A new empty list the cycle collector does not track: a record's headers (see ``Record``)."""
    cdef list made = []
    PyObject_GC_UnTrack(<void *>made)
    return made


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
    cdef tuple pair
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
            headers = _leaf_list()
            for _h in range(r.n_headers):
                if _read_header(p, &pos, &r, &hrow, &err):
                    _raise(&err)
                pair = (
                    PyUnicode_DecodeUTF8(<const char *>(p + hrow.key_pos), hrow.key_len, _JAVA_UTF8_ERRORS),
                    _bytes_or_none(p, hrow.value_pos, hrow.value_len),
                )
                PyObject_GC_UnTrack(<void *>pair)
                headers.append(pair)
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


cdef inline int64_t _offset_of(object record) except? -1:
    # Records of this module's decode are read in C; a legacy batch's records are Python objects.
    if type(record) is Record:
        return (<Record>record).offset
    return record.offset


def records_in_range(list records, int64_t start_offset, int64_t end_offset):
    """The records a consumer reading offsets ``[start_offset, end_offset)`` is given, and whether one at or
    past ``end_offset`` ended them (see ``_core_py``).  A first pass finds the first record outside the
    range; a list all inside is returned as it is, with no copy."""
    cdef Py_ssize_t n = len(records)
    cdef Py_ssize_t i = 0, j
    cdef int64_t offset
    cdef list kept
    while i < n:
        offset = _offset_of(records[i])
        if offset < start_offset or offset >= end_offset:
            break
        i += 1
    if i == n:
        return records, False
    kept = records[:i]
    for j in range(i, n):
        record = records[j]
        offset = _offset_of(record)
        if offset >= end_offset:
            return kept, True
        if offset >= start_offset:
            kept.append(record)
    return kept, False


def lz4_decode_block(const unsigned char[::1] block, unsigned char[::1] out):
    """Decode the raw LZ4 block into ``out`` when it keeps the block format's rules within ``len(out)``
    bytes; the length it decodes to, else -1 (see ``_core_py``)."""
    cdef Py_ssize_t n = block.shape[0]
    if n == 0:
        return -1
    return _lz4_decode(&block[0], n, &out[0] if out.shape[0] else NULL, out.shape[0])


cdef inline bint _lz4_length_bytes(const unsigned char *p, Py_ssize_t n, Py_ssize_t *ip,
                                   Py_ssize_t *length) noexcept nogil:
    """Add the length bytes from ``ip`` (up to the first that is not 255) to ``length``; false when they
    run off the block.  Lengths stay below 256 * n + 19, far from overflowing."""
    cdef unsigned char more
    while True:
        if ip[0] >= n:
            return False
        more = p[ip[0]]
        ip[0] += 1
        length[0] += more
        if more != 255:
            return True


cdef Py_ssize_t _lz4_decode(const unsigned char *p, Py_ssize_t n, unsigned char *o,
                            Py_ssize_t capacity) noexcept nogil:
    cdef Py_ssize_t ip = 0, op = 0, literals, match, offset, done, step
    cdef Py_ssize_t last_match_start = -1, last_match_end = -1
    cdef unsigned char token
    while True:
        if ip >= n:
            return -1
        token = p[ip]
        ip += 1
        literals = token >> 4
        if literals == 15 and not _lz4_length_bytes(p, n, &ip, &literals):
            return -1
        if literals > n - ip or literals > capacity - op:
            return -1
        if literals <= 16 and n - ip >= 16 and capacity - op >= 16:
            # Short runs are most of them: one fixed 16-byte copy (the bytes past the run, inside the
            # block and the output, are overwritten by what follows or cut off by the caller).
            memcpy(o + op, p + ip, 16)
        elif literals:
            memcpy(o + op, p + ip, literals)
        ip += literals
        op += literals
        if ip == n:
            if token & 15:
                return -1
            break
        if n - ip < 2:
            return -1
        offset = p[ip] | (<Py_ssize_t>p[ip + 1] << 8)
        ip += 2
        if offset == 0 or offset > op:
            return -1
        match = token & 15
        if match == 15 and not _lz4_length_bytes(p, n, &ip, &match):
            return -1
        match += 4
        if match > capacity - op:
            return -1
        if offset >= 16 and match <= 16 and capacity - op >= 16:
            memcpy(o + op, o + op - offset, 16)  # as for short literals
        elif offset >= match:
            memcpy(o + op, o + op - offset, match)
        else:
            # The match repeats the last ``offset`` bytes: copied a period at a time, each copy reading
            # only bytes already written (and the period doubling as the written run grows).
            done = 0
            step = offset
            while done < match:
                if step > match - done:
                    step = match - done
                memcpy(o + op + done, o + op - offset, step)
                done += step
                step = done + offset
        last_match_start = op
        op += match
        last_match_end = op
    if last_match_end >= 0 and (last_match_start > op - 12 or last_match_end > op - 5):
        return -1
    return op


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
