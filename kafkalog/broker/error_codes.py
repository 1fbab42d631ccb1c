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
    InvalidRequestError,
    InvalidTxnStateError,
    KafkaStorageError,
    LogDirNotFoundError,
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

__all__ = ["ERROR_MESSAGES", "error_code_for", "error_message"]

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
    InvalidRequestError: ErrorCode.invalid_request,
    LogDirNotFoundError: ErrorCode.log_dir_not_found,
}


def error_code_for(error: BaseException) -> ErrorCode:
    """The protocol error code of ``error`` (Kafka: ``Errors.forException``)."""
    for cls in type(error).__mro__:
        code = _CODES.get(cls)
        if code is not None:
            return code
    return ErrorCode.unknown_server_error


#: Kafka's default message of each code :func:`error_code_for` gives (``Errors.message()``), which some error
#: responses carry in place of the exception's own.
ERROR_MESSAGES: Final[dict[ErrorCode, str]] = {
    ErrorCode.unknown_server_error: "The server experienced an unexpected error when processing the request.",
    ErrorCode.offset_out_of_range: "The requested offset is not within the range of offsets maintained by the server.",
    ErrorCode.corrupt_message: ("This message has failed its CRC checksum, exceeds the valid size, has a null key for "
                                "a compacted topic, or is otherwise corrupt."),
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.message_too_large: "The request included a message larger than the max message size the server will "
                                 "accept.",
    ErrorCode.invalid_topic_exception: "The request attempted to perform an operation on an invalid topic.",
    ErrorCode.record_list_too_large: ("The request included message batch larger than the configured segment size on "
                                      "the server."),
    ErrorCode.invalid_timestamp: "The timestamp of the message is out of acceptable range.",
    ErrorCode.topic_already_exists: "Topic with this name already exists.",
    ErrorCode.invalid_config: "Configuration is invalid.",
    ErrorCode.unsupported_for_message_format: "The message format version on the broker does not support the "
                                              "request.",
    ErrorCode.out_of_order_sequence_number: "The broker received an out of order sequence number.",
    ErrorCode.invalid_producer_epoch: "Producer attempted to produce with an old epoch.",
    ErrorCode.invalid_txn_state: "The producer attempted a transactional operation in an invalid state.",
    ErrorCode.transaction_coordinator_fenced: ("Indicates that the transaction coordinator sending a WriteTxnMarker is "
                                               "no longer the current coordinator for a given producer."),
    ErrorCode.kafka_storage_error: "Disk error when trying to access log file on the disk.",
    ErrorCode.unsupported_compression_type: ("The requesting client does not support the compression type of given "
                                             "partition."),
    ErrorCode.invalid_record: "This record has failed the validation on broker and hence will be rejected.",
    ErrorCode.log_dir_not_found: "The user-specified log directory is not found in the broker config.",
    ErrorCode.invalid_request: ("This most likely occurs because of a request being malformed by the client library "
                                "or the message was sent to an incompatible broker. See the broker logs for more "
                                "details."),
}


def error_message(code: ErrorCode) -> str | None:
    """Kafka's default message of ``code`` (``Errors.message()``), where :data:`ERROR_MESSAGES` has it."""
    return ERROR_MESSAGES.get(code)
