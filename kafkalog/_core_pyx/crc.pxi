# The CRC kernels of kafkalog._core (included by _core.pyx); plain twin: kafkalog/_core_py/crc.py.
#
# CRC-32C (Kafka: clients/.../utils/Crc32C.java), the checksum of v2 batches, from the attributes to the
# end of the batch; CRC-32 (java.util.zip.CRC32), the checksum of v0/v1 messages, from the magic byte to
# the end of the message.  Both loops are C, in _kernels.h: CRC-32C runs three crc32q chains on SSE4.2
# CPUs and a slicing-by-8 table elsewhere.

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
