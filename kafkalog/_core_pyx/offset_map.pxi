# The SkimpyOffsetMap kernels of kafkalog._core (included by _core.pyx); plain twin:
# kafkalog/_core_py/offset_map.py.
#
# Kafka: core/src/main/scala/kafka/log/OffsetMap.scala (0.10.1.1), storage/.../log/SkimpyOffsetMap.java
# (3.8.0), and the key test of LogCleaner.scala's shouldRetainRecord (offset_map_latest_codes).
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

# RecordFate values (kafkalog._common.RecordFate): what offset_map_latest_codes says of each record.
cdef enum:
    FATE_NO_KEY = -1
    FATE_SUPERSEDED = 0
    FATE_LATEST = 1
    FATE_PAST_MAP = 2


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
    a :class:`~kafkalog._common.RecordFate` (past the mapped range, the latest for its key, superseded, or no key).

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
                    codes[i] = FATE_PAST_MAP
                elif row.key_len < 0:
                    codes[i] = FATE_NO_KEY
                else:
                    lookups += 1
                    found = _map_get(t, slots, hashes[k], &probes)
                    codes[i] = FATE_LATEST if row.offset >= found else FATE_SUPERSEDED
            group_start += g
    return codes_array, lookups, probes
