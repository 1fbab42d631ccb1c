# The index kernels of kafkalog._core (included by _core.pyx); plain twin: kafkalog/_core_py/index.py.
#
# Kafka: storage/.../log/AbstractIndex.java (indexSlotRangeFor, the warm-section search, 2.1+),
# OffsetIndex.java and TimeIndex.java (the entries).  An offset index entry is 8 bytes, relative offset
# (int32) and file position (int32); a time index entry 12 bytes, timestamp (int64) and relative offset
# (int32); all big-endian, relative offsets counted from the segment's base offset.

# IndexKind values (kafkalog._common.IndexKind): which index, and which half of its entries, a search compares.
cdef enum:
    INDEX_OFFSET_KEY = 0    # offset index by offset: base + int32 at 0 of an 8-byte entry
    INDEX_OFFSET_VALUE = 1  # offset index by file position: int32 at 4
    INDEX_TIME_KEY = 2      # time index by timestamp: int64 at 0 of a 12-byte entry
    INDEX_TIME_VALUE = 3    # time index by offset: base + int32 at 8
    OFFSET_INDEX_ENTRY_SIZE = 8
    TIME_INDEX_ENTRY_SIZE = 12


cdef inline Py_ssize_t _entry_size(int kind) noexcept nogil:
    return OFFSET_INDEX_ENTRY_SIZE if kind <= INDEX_OFFSET_VALUE else TIME_INDEX_ENTRY_SIZE


cdef inline int _check_kind(int kind) except -1:
    if kind < INDEX_OFFSET_KEY or kind > INDEX_TIME_VALUE:
        raise ValueError(f"{kind} is not a valid IndexKind")
    return 0


cdef inline int64_t _index_key(const unsigned char *p, Py_ssize_t slot, int kind,
                               int64_t base) noexcept nogil:
    if kind == INDEX_OFFSET_KEY:
        return base + kl_get_i32(p + slot * OFFSET_INDEX_ENTRY_SIZE)
    if kind == INDEX_OFFSET_VALUE:
        return kl_get_i32(p + slot * OFFSET_INDEX_ENTRY_SIZE + 4)
    if kind == INDEX_TIME_KEY:
        return kl_get_i64(p + slot * TIME_INDEX_ENTRY_SIZE)
    return base + kl_get_i32(p + slot * TIME_INDEX_ENTRY_SIZE + 8)


def index_search(const unsigned char[::1] buf, Py_ssize_t entries, int kind, int64_t target,
                 int64_t base_offset, bint smallest_upper_bound=False):
    """The slot of the largest entry <= ``target`` (or the smallest >= it); -1 when none (see ``_core_py``).

    Kafka 2.1+ ``AbstractIndex.indexSlotRangeFor``, warm section first.
    """
    _check_kind(kind)
    cdef Py_ssize_t entry_size = _entry_size(kind)
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
    cdef Py_ssize_t entry_size = _entry_size(kind)
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
    _check_kind(kind)
    entry_size = _entry_size(kind)
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if entries < 0 or entries * entry_size > view.len:
            raise ValueError(f"{entries} entries of {entry_size} bytes do not fit the {view.len}-byte index")
        slot = _slot_for(<const unsigned char *>view.buf, entries, kind, target, base_offset, False)
        if slot < 0:
            return None
        e = <const unsigned char *>view.buf + slot * entry_size
        if kind <= INDEX_OFFSET_VALUE:
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
