"""The compiled kernels' interface (``kafkalog/_core.pyx``); checked against the build by stubtest.

Buffers are any C-contiguous bytes-like object: ``bytes``, ``bytearray``, ``memoryview``, ``mmap``.
The plain twin ``kafkalog/_core_py/`` has the same names and signatures.
"""

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer, disjoint_base

from ._common import TimestampType
from .record.types import ControlRecordType

_Pair = TypeVar("_Pair", bound=tuple[int, int])
_Missing = TypeVar("_Missing")

__all__ = [
    "IMPLEMENTATION",
    "Record",
    "assign_offsets_v2_batch",
    "crc32",
    "crc32c",
    "crc32c_hardware",
    "decode_legacy_records",
    "decode_v2_batch_objects",
    "decode_v2_batches",
    "decode_v2_record_objects",
    "decode_v2_record_objects_chunk",
    "decode_v2_records",
    "decode_v2_records_chunk",
    "encode_legacy_messages",
    "encode_v2_record_inputs",
    "encode_v2_records",
    "filter_v2_batches",
    "gather_slices",
    "index_lookup",
    "index_points",
    "lz4_decode_block",
    "md5",
    "offset_map_get",
    "offset_map_latest_codes",
    "offset_map_position_of",
    "offset_map_put",
    "offset_map_put_records",
    "index_search",
    "leader_append_v2_batch",
    "records_in_range",
    "scan_batches",
    "producer_fields",
    "search_for_offset",
    "set_crc32c_software",
    "single_entry_magic",
    "split_records",
    "validate_v2_records",
]

IMPLEMENTATION: str

@disjoint_base
class Record:
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...
    @property
    def timestamp_type(self) -> TimestampType: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def control_type(self) -> ControlRecordType | None: ...
    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp_type: int = ...,
        is_control: bool = False,
    ) -> None: ...
    def as_tuple(self) -> tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def crc32c(data: Buffer, crc: int = 0) -> int: ...  # const unsigned char[::1]
def crc32(data: Buffer, crc: int = 0) -> int: ...  # const unsigned char[::1]
def crc32c_hardware() -> bool: ...
def set_crc32c_software(on: bool) -> None: ...
def scan_batches(
    buf: Buffer,  # const unsigned char[::1]
    start: int = 0,
    end: int = -1,
    check_crc: bool = True,
    stop_on_invalid: bool = True,
    max_entry_size: int = 0x7FFFFFFF,
    max_batches: int = 0x7FFFFFFFFFFFFFFF,
) -> tuple[npt.NDArray[np.void], int, int]: ...
def single_entry_magic(buf: Buffer, max_entry_size: int = 0x7FFFFFFF) -> int: ...  # const unsigned char[::1]
def producer_fields(
    buf: Buffer,  # const unsigned char[::1]
    positions: npt.NDArray[np.int64],  # const int64_t[::1]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int16]]: ...
def search_for_offset(
    buf: Buffer,  # const unsigned char[::1]
    start: int,
    end: int,
    target_offset: int,
    max_entry_size: int = 0x7FFFFFFF,
) -> tuple[int, int, int, int, int]: ...
def index_search(
    buf: Buffer,  # any buffer, read through Py_buffer
    entries: int,
    kind: int,
    target: int,
    base_offset: int,
    smallest_upper_bound: bool = False,
) -> int: ...
@overload
def index_lookup(
    buf: Buffer | None,  # any buffer, read through Py_buffer; not read when entries is 0
    entries: int,
    kind: int,
    target: int,
    base_offset: int,
) -> tuple[int, int] | None: ...
@overload
def index_lookup(
    buf: Buffer | None,
    entries: int,
    kind: int,
    target: int,
    base_offset: int,
    entry_type: type[_Pair],
    missing: _Missing,
) -> _Pair | _Missing: ...
def index_points(
    positions: npt.NDArray[np.int64],  # const int64_t[::1]
    interval: int,
) -> npt.NDArray[np.int64]: ...
def decode_v2_records(
    buf: Buffer,  # const unsigned char[::1]
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
) -> tuple[npt.NDArray[np.void], npt.NDArray[np.void]]: ...
def decode_v2_record_objects(
    buf: Buffer,  # const unsigned char[::1]
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
    is_control: bool = False,
) -> list[Record]: ...
def decode_v2_records_chunk(
    buf: Buffer,  # const unsigned char[::1]
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
    max_records: int = -1,
) -> tuple[npt.NDArray[np.void], npt.NDArray[np.void], int]: ...
def decode_v2_record_objects_chunk(
    buf: Buffer,  # const unsigned char[::1]
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
    is_control: bool = False,
    max_records: int = -1,
) -> tuple[list[Record], int]: ...
def decode_v2_batches(
    buf: Buffer,  # const unsigned char[::1]
    batches: npt.NDArray[np.void],  # const BatchRow[::1]
) -> tuple[npt.NDArray[np.void], npt.NDArray[np.void], npt.NDArray[np.int64]]: ...
def decode_v2_batch_objects(
    buf: Buffer,  # const unsigned char[::1]
    batches: npt.NDArray[np.void],  # const BatchRow[::1]
) -> list[Record]: ...
def records_in_range(records: list[Any], start_offset: int, end_offset: int) -> tuple[list[Any], bool]: ...
def lz4_decode_block(block: Buffer, out: Buffer) -> int: ...  # const unsigned char[::1], unsigned char[::1]
def decode_legacy_records(buf: Buffer, start: int, end: int) -> npt.NDArray[np.void]: ...
def encode_v2_records(
    timestamps: Sequence[int],
    keys: Sequence[Buffer | None],
    values: Sequence[Buffer | None],
    headers: Sequence[Sequence[tuple[str, Buffer | None]] | None] | None,
    base_timestamp: int,
    offset_deltas: Sequence[int] | None = None,
) -> bytes: ...
def encode_legacy_messages(
    keys: Sequence[Buffer | None],
    values: Sequence[Buffer | None],
    timestamps: Sequence[int],
    offsets: Sequence[int],
    magic: int,
    attributes: int,
) -> bytes: ...
def encode_v2_record_inputs(
    records: Iterable[Any],
    base_timestamp: int | None = None,
) -> tuple[bytes, int, int, int]: ...
def filter_v2_batches(
    data: Buffer,
    records: npt.NDArray[np.void],
    starts: npt.NDArray[np.int64],
    positions: npt.NDArray[np.int64],
    keep: npt.NDArray[np.uint8],
    fates: npt.NDArray[np.uint8],
    delete_horizon_ms: int,
    out: bytearray,
) -> tuple[int, npt.NDArray[np.int32], npt.NDArray[np.int64]]: ...
def split_records(records: Iterable[Any]) -> tuple[list[Any], list[Any], list[int], list[Any]]: ...
def gather_slices(
    data: Buffer,  # const unsigned char[::1]
    positions: npt.NDArray[np.int64],  # const int64_t[::1]
    lengths: npt.NDArray[np.int32],  # const int32_t[::1]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]: ...
def md5(data: Buffer) -> bytes: ...  # const unsigned char[::1]
def offset_map_position_of(hash: Buffer, attempt: int, slots: int) -> int: ...
def offset_map_put(
    table: npt.NDArray[np.uint8],  # unsigned char[::1]
    slots: int,
    key: Buffer,  # const unsigned char[::1]
    offset: int,
) -> tuple[bool, int]: ...
def offset_map_get(table: npt.NDArray[np.uint8], slots: int, key: Buffer) -> tuple[int, int]: ...
def offset_map_put_records(
    table: npt.NDArray[np.uint8],
    slots: int,
    data: Buffer,
    records: npt.NDArray[np.void],  # const RecordRow[::1]
    start_offset: int,
    entries: int,
    max_entries: int,
) -> tuple[int, int, int, int, int, bool]: ...
def offset_map_latest_codes(
    table: npt.NDArray[np.uint8],
    slots: int,
    data: Buffer,
    records: npt.NDArray[np.void],
    latest_offset: int,
) -> tuple[npt.NDArray[np.int8], int, int]: ...
def validate_v2_records(
    buf: Buffer, start: int, end: int, count: int, base_offset: int, base_timestamp: int,  # const unsigned char[::1]
    append_time: int | None = None, *, now: int, timestamp_before_max_ms: int, timestamp_after_max_ms: int,
    compacted: bool, check_timestamps: bool,
) -> tuple[int, int, int, bool, list[tuple[int, int, int, int]]]: ...
def assign_offsets_v2_batch(
    buf: Buffer, next_offset: int, partition_leader_epoch: int, *, now: int,  # unsigned char[::1]
    timestamp_before_max_ms: int, timestamp_after_max_ms: int, compacted: bool, client: bool,
) -> tuple[int, int] | None: ...
def leader_append_v2_batch(
    buf: Buffer, next_offset: int, partition_leader_epoch: int, clock: Callable[[], int], *,  # unsigned char[::1]
    timestamp_before_max_ms: int, timestamp_after_max_ms: int, compacted: bool, max_size: int,
) -> tuple[int, int, int] | int | None: ...
