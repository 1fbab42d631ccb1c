"""kafkalog's errors as Kafka's protocol error codes (Kafka: ``Errors.forException``, 3.8.0).

Each storage error kafkalog raises is a port of a Kafka exception; a response carries the code Kafka's ``Errors``
maps that exception to.  The search walks the exception's classes from the most derived, so a subclass gets its own
code before its parent's (``RecordBatchTooLargeError`` is ``RECORD_LIST_TOO_LARGE``, not its parent
``RecordTooLargeError``'s ``MESSAGE_TOO_LARGE``).  Anything unmapped is ``UNKNOWN_SERVER_ERROR``, and is logged
with its traceback by the caller, since it is a bug or a failure the broker did not expect.
"""

from __future__ import annotations

from typing import Final

from kio.schema.errors import ErrorCode

from ..config.config_def import ConfigError
from ..errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    TransactionCoordinatorFencedError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionError,
)
from ..log.validator import InvalidTimestampError, UnsupportedForMessageFormatError
from ..topic import InvalidTopicError
from .partitions import TopicExistsError, UnknownTopicError

__all__ = ["error_code_for"]

_CODES: Final[dict[type[BaseException], ErrorCode]] = {
    OffsetOutOfRangeError: ErrorCode.offset_out_of_range,
    CorruptRecordError: ErrorCode.corrupt_message,
    UnsupportedCompressionError: ErrorCode.unsupported_compression_type,
    UnknownTopicOrPartitionError: ErrorCode.unknown_topic_or_partition,
    UnknownTopicError: ErrorCode.unknown_topic_or_partition,
    RecordTooLargeError: ErrorCode.message_too_large,
    RecordBatchTooLargeError: ErrorCode.record_list_too_large,
    InvalidTopicError: ErrorCode.invalid_topic_exception,
    InvalidTimestampError: ErrorCode.invalid_timestamp,
    InvalidRecordError: ErrorCode.invalid_record,
    UnsupportedForMessageFormatError: ErrorCode.unsupported_for_message_format,
    OutOfOrderSequenceError: ErrorCode.out_of_order_sequence_number,
    InvalidProducerEpochError: ErrorCode.invalid_producer_epoch,
    InvalidTxnStateError: ErrorCode.invalid_txn_state,
    TransactionCoordinatorFencedError: ErrorCode.transaction_coordinator_fenced,
    KafkaStorageError: ErrorCode.kafka_storage_error,
    TopicExistsError: ErrorCode.topic_already_exists,
    ConfigError: ErrorCode.invalid_config,
}


def error_code_for(error: BaseException) -> ErrorCode:
    """The protocol error code of ``error`` (Kafka: ``Errors.forException``)."""
    for cls in type(error).__mro__:
        code = _CODES.get(cls)
        if code is not None:
            return code
    return ErrorCode.unknown_server_error
