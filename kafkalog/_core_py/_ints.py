"""The big-endian integer layouts and Java's wrapping arithmetic that the plain kernel families share: the
plain twin's counterpart of the ``kl_get_*`` helpers of ``_kernels.h``.

Every integer on disk is big-endian (Kafka's ``ByteBuffer`` default); a sum of hostile deltas wraps as a Java
``long`` does instead of growing.
"""

from __future__ import annotations

import struct

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_FRAME = struct.Struct(">qi")  # offset, size: the 12-byte frame of every log entry

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def wrap64(x: int) -> int:
    """``x`` as a Java ``long`` would hold it: the sums of hostile deltas wrap, as they do in Kafka."""
    return ((x + (1 << 63)) & _MASK64) - (1 << 63)
