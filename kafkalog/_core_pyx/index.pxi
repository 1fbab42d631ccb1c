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


cdef inline Py_ssize_t _key_offset(int kind) noexcept nogil:
    """Where in an entry the half a search of ``kind`` compares starts."""
    if kind == INDEX_OFFSET_VALUE:
        return 4
    if kind == INDEX_TIME_VALUE:
        return 8
    return 0


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


cdef extern from *:
    """
    /* A 2-tuple of ``type`` (tuple itself, or a subclass such as a NamedTuple) holding ``a`` and ``b``: what
       tuple.__new__(type, (a, b)) makes, without the argument tuple and the call.  A subclass is allocated by
       its own tp_alloc, as tuple.__new__ allocates one. */
    static PyObject *kl_new_int_pair(PyTypeObject *type, long long a, long long b) {
        PyObject *first, *second, *pair;
        first = PyLong_FromLongLong(a);
        if (first == NULL) return NULL;
        second = PyLong_FromLongLong(b);
        if (second == NULL) { Py_DECREF(first); return NULL; }
        pair = type == &PyTuple_Type ? PyTuple_New(2) : type->tp_alloc(type, 2);
        if (pair == NULL) { Py_DECREF(first); Py_DECREF(second); return NULL; }
        PyTuple_SET_ITEM(pair, 0, first);
        PyTuple_SET_ITEM(pair, 1, second);
        return pair;
    }
    """
    object kl_new_int_pair(PyTypeObject *type, long long a, long long b)


cdef inline int _check_pair_type(type entry_type) except -1:
    if entry_type is not tuple and not issubclass(entry_type, tuple):
        raise TypeError(f"entry_type must be tuple or a subclass of it, not {entry_type.__name__}")
    return 0


cdef inline const unsigned char *_index_buffer(object buf, Py_buffer *view, Py_ssize_t entries,
                                               Py_ssize_t entry_size) except NULL:
    """Take ``buf`` through the raw buffer protocol, checking that ``entries`` entries fit it; the caller
    releases ``view``.  A typed memoryview's set-up costs more than a warm index's whole search, and every
    index read (each fetch) makes one."""
    cdef Py_ssize_t length
    if entries < 0:
        raise ValueError(f"negative entry count {entries}")
    PyObject_GetBuffer(buf, view, PyBUF_SIMPLE)
    if entries > view.len // entry_size:
        length = view.len
        PyBuffer_Release(view)
        raise ValueError(f"{entries} entries of {entry_size} bytes do not fit the {length}-byte index")
    # A zero-length buffer may have a NULL pointer: give the search a valid one (it reads nothing then).
    return <const unsigned char *>view.buf if view.buf != NULL else <const unsigned char *>b""


def index_search(object buf, Py_ssize_t entries, int kind, int64_t target, int64_t base_offset,
                 bint smallest_upper_bound=False):
    """The slot of the largest entry <= ``target`` (or the smallest >= it); -1 when none (see ``_core_py``).

    Kafka 2.1+ ``AbstractIndex.indexSlotRangeFor``, warm section first.
    """
    cdef Py_buffer view
    cdef const unsigned char *p
    cdef Py_ssize_t slot
    _check_kind(kind)
    p = _index_buffer(buf, &view, entries, _entry_size(kind))
    slot = _slot_for(p, entries, kind, target, base_offset, smallest_upper_bound)
    PyBuffer_Release(&view)
    return slot


cdef Py_ssize_t _slot_for(const unsigned char *p, Py_ssize_t entries, int kind, int64_t target,
                          int64_t base_offset, bint smallest_upper_bound) noexcept nogil:
    """Kafka 2.1+ ``indexSlotRangeFor`` over ``entries`` checked entries: warm section first.

    The probes are Kafka's, in Kafka's order.  Over a large index each probe of the cold part is a cache miss,
    and the next probe's address waits on this one's entry; but it is one of two (the middle of the lower or of
    the upper half left), so both are asked for before this entry is read, and their misses overlap it.
    """
    cdef Py_ssize_t entry_size = _entry_size(kind)
    cdef Py_ssize_t key_at = _key_offset(kind)
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
        kl_prefetch_read(p + ((lo + mid) >> 1) * entry_size + key_at)
        kl_prefetch_read(p + ((mid + hi + 1) >> 1) * entry_size + key_at)
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


def index_lookup(object buf, Py_ssize_t entries, int kind, int64_t target, int64_t base_offset,
                 type entry_type=tuple, object missing=None):
    """The largest-lower-bound entry for ``target`` as an ``entry_type`` pair ``(key, value)``, or ``missing``
    (see ``_core_py``).

    Made for the hot path of every fetch: the buffer is taken through the raw buffer protocol and released
    before the return, and the result is built here, so an index's ``lookup`` is this one call.
    """
    cdef Py_buffer view
    cdef const unsigned char *p
    cdef const unsigned char *e
    cdef Py_ssize_t slot, entry_size
    cdef int64_t key, value
    _check_kind(kind)
    _check_pair_type(entry_type)
    if entries == 0:
        return missing
    entry_size = _entry_size(kind)
    p = _index_buffer(buf, &view, entries, entry_size)
    slot = _slot_for(p, entries, kind, target, base_offset, False)
    if slot >= 0:
        e = p + slot * entry_size
        if kind <= INDEX_OFFSET_VALUE:
            key, value = base_offset + kl_get_i32(e), kl_get_i32(e + 4)
        else:
            key, value = kl_get_i64(e), base_offset + kl_get_i32(e + 8)
    PyBuffer_Release(&view)
    if slot < 0:
        return missing
    return kl_new_int_pair(<PyTypeObject *>entry_type, key, value)


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
