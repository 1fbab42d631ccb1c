"""Produce: a client's record batches appended to the partitions' logs.

Port of ``KafkaApis.handleProduceRequest`` (``core/.../server/KafkaApis.scala``), ``ProduceRequest.validateRecords``
(``clients/.../requests/ProduceRequest.java``) and the leader's side of ``ReplicaManager.appendRecords``
(``appendToLocalLog``), 3.8.0, in Kafka's order:

1. Per partition (``KafkaApis``): an unknown topic or partition is ``UNKNOWN_TOPIC_OR_PARTITION``; records that are
   not exactly one v2 batch (produce v3+) ``INVALID_RECORD``, zstd before v7 ``UNSUPPORTED_COMPRESSION_TYPE``, a
   batch header that does not read ``CORRUPT_MESSAGE``.
2. ``acks`` other than -1, 0 and 1: every partition left ``INVALID_REQUIRED_ACKS`` (``ReplicaManager.appendRecords``).
3. An internal topic is ``INVALID_TOPIC_EXCEPTION`` (clients may not write ``__consumer_offsets``).
4. The append (:meth:`~kafkalog.log.unified_log.Log.append` as leader, epoch 0): its errors become the partition's code
   through :func:`~kafkalog.broker.error_codes.error_code_for`, with the rejected records of a batch in
   ``record_errors`` (KIP-467).  A batch that repeats one of its producer's last five returns the offsets it got the
   first time.
5. The answer of a partition that failed has base offset -1, and log start offset -1 unless the append failed for
   something other than the errors ``ReplicaManager.appendToLocalLog`` names (then the partition's log start
   offset); its ``error_message`` is set only for records the validator refused (Kafka's
   ``RecordValidationException``, the one error it calls custom), so a client shows the code's own text otherwise.
6. ``acks=0``: no response at all (the client does not read one), and if any partition failed the connection is
   closed, so that the client notices and refreshes its metadata (``KafkaApis``); else the response once every
   append returned.
   With one in-sync replica ``acks=all`` waits for nothing more than ``acks=1``.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any, Final

from kio.schema.errors import ErrorCode

from .._common import MAGIC_V2
from ..errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaLogError,
    KafkaStorageError,
    RecordTooLargeError,
    UnknownTopicOrPartitionError,
)
from ..log.validator import RecordValidationError
from ..record import CompressionType, MemoryRecords
from .context import RequestContext
from .error_codes import error_code_for
from .kio_values import build
from .partitions import INTERNAL_TOPICS, UnknownTopicError
from .protocol import CloseConnection

__all__ = ["handle_produce"]

logger = logging.getLogger(__name__)

_NO_THROTTLE: Final = datetime.timedelta(0)
_VALID_ACKS: Final = frozenset({-1, 0, 1})
_UTC: Final = datetime.UTC


def _check_records(version: int, records: MemoryRecords) -> tuple[ErrorCode, str | None]:
    """Kafka: ``ProduceRequest.validateRecords`` (v3+: one batch, magic 2; zstd from v7)."""
    batches = records.batches()
    first = next(batches, None)
    if first is None:
        return ErrorCode.invalid_record, (f"Produce requests with version {version} must have at least one record "
                                          f"batch per partition")
    if first.magic != MAGIC_V2:
        return ErrorCode.invalid_record, (f"Produce requests with version {version} are only allowed to contain "
                                          f"record batches with magic version 2")
    if version < 7 and first.compression == CompressionType.ZSTD:
        return ErrorCode.unsupported_compression_type, (f"Produce requests with version {version} are not allowed "
                                                        f"to use ZStandard compression")
    if next(batches, None) is not None:
        return ErrorCode.invalid_record, (f"Produce requests with version {version} are only allowed to contain "
                                          f"exactly one record batch per partition")
    return ErrorCode.none, None


def _unknown_log_start(error: KafkaLogError) -> bool:
    """Whether Kafka answers ``error`` of an append without the partition's log start offset: the errors
    ``ReplicaManager.appendToLocalLog`` catches by name (unknown partition, record or batch too large, a corrupt
    record, a storage error); every other one (invalid records and timestamps, producer sequence and epoch
    errors) carries it.  Kafka's ``InvalidRecordException`` is no ``CorruptRecordException``, where kafkalog's
    :class:`~kafkalog.errors.InvalidRecordError` derives from :class:`~kafkalog.errors.CorruptRecordError`."""
    return isinstance(error, UnknownTopicOrPartitionError | RecordTooLargeError | KafkaStorageError) or (
        isinstance(error, CorruptRecordError) and not isinstance(error, InvalidRecordError))


async def handle_produce(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    acks = request.acks
    partition_type = ctx.response_type("PartitionProduceResponse")
    error_type = ctx.response_type("BatchIndexAndErrorMessage")
    topics = []
    for topic_data in request.topic_data:
        name = topic_data.name
        answers = []
        for data in topic_data.partition_data:
            code, message, info, log_start = ErrorCode.none, None, None, -1
            record_errors: tuple[Any, ...] = ()
            log = None
            records = MemoryRecords(data.records or b"")
            try:
                log = registry.log(name, data.index)
            except UnknownTopicError:
                code = ErrorCode.unknown_topic_or_partition
            else:
                try:
                    code = _check_records(ctx.api_version, records)[0]
                except KafkaLogError as e:  # a batch header that does not even read
                    code = error_code_for(e)
            if code is ErrorCode.none and acks not in _VALID_ACKS:
                code = ErrorCode.invalid_required_acks
            elif code is ErrorCode.none and name in INTERNAL_TOPICS:
                code = ErrorCode.invalid_topic_exception
            elif code is ErrorCode.none and log is not None:
                try:
                    info = registry.append(log, records, required_acks=acks)
                except KafkaLogError as e:
                    code = error_code_for(e)
                    if isinstance(e, RecordValidationError):
                        message = str(e)
                    if not _unknown_log_start(e):
                        log_start = log.log_start_offset
                    if error_type is not None:
                        record_errors = tuple(
                            build(error_type, batch_index=r.batch_index, batch_index_error_message=r.message)
                            for r in getattr(e, "record_errors", ()))
                    if code is ErrorCode.unknown_server_error:
                        logger.error("Error appending to %s-%d", name, data.index, exc_info=e)
                    else:
                        logger.debug("Append to %s-%d refused: %s", name, data.index, e)
            if info is not None:
                answers.append(build(
                    partition_type, index=data.index, error_code=ErrorCode.none, base_offset=info.first_offset,
                    log_append_time=(None if info.log_append_time < 0 else
                                     datetime.datetime.fromtimestamp(info.log_append_time / 1000, tz=_UTC)),
                    log_start_offset=info.log_start_offset, record_errors=(), error_message=None))
            else:
                answers.append(build(partition_type, index=data.index, error_code=code, base_offset=-1,
                                     log_append_time=None, log_start_offset=log_start, record_errors=record_errors,
                                     error_message=message))
        topics.append(build(ctx.response_type("TopicProduceResponse"), name=name, partition_responses=tuple(answers)))
    if acks == 0:
        failed = [(t.name, p.index, p.error_code.name) for t in topics for p in t.partition_responses
                  if p.error_code is not ErrorCode.none]
        if failed:
            # Nothing answers an acks=0 produce: a closed connection is how the client learns that it failed.
            logger.info("Closing connection due to error during produce request with correlation id %d from client "
                        "id %s with ack=0; topic and partition to errors: %s", ctx.header.correlation_id,
                        ctx.header.client_id, ", ".join(f"{t}-{p}: {e}" for t, p, e in failed))
            raise CloseConnection(f"acks=0 produce failed: {failed}")
        return None
    return ctx.response(responses=tuple(topics), throttle_time=_NO_THROTTLE)
