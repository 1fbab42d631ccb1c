"""LogDirFailureChannel: the log dirs an I/O error took offline, and the handling of that error where it happens.

Port of ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogDirFailureChannel.java`` and of
``LocalLog.maybeHandleIOException`` (``core/src/main/scala/kafka/log/LocalLog.scala``), Apache Kafka 3.8.0.
Kafka 0.10.1.1 had neither: a disk error there stopped the broker.

Kafka's failure model, which kafkalog keeps:

* every operation of a log that touches its files (an append, a flush, a roll, a truncation, a read, a
  deletion, a rename, a close) runs inside :meth:`LogDirFailureChannel.maybe_handle_io_exception`, with the
  log's log dir (the parent of its partition directory);
* an I/O error there is reported once to the channel, which marks that log dir offline and queues it, and
  the caller gets a :class:`~kafkalog.errors.KafkaStorageError` saying what was being done;
* from then on every such operation of *any* log of that dir that shares the channel fails at once, before
  touching a file, with a :class:`~kafkalog.errors.KafkaStorageError` naming the dir ("already offline due to
  a previous IO exception"); logs of other dirs go on;
* something then takes the dir out of service: in a broker, the replica manager's ``LogDirFailureHandler``
  thread takes each dir from the queue and calls ``LogManager.handleLogDirFailure``; kafkalog has no replica
  manager, and its :class:`~kafkalog.manager.log_manager.LogManager` takes the queue itself (see its docstring).  A dir
  stays offline until a new channel is made (a broker's restart: a new
  :class:`~kafkalog.manager.log_manager.LogManager`, or a :class:`~kafkalog.log.unified_log.Log` opened again).

What counts as an I/O error.  Kafka's handler catches ``IOException`` and lets every other exception,
``KafkaStorageException`` included, through.  kafkalog turns an ``OSError`` into a
:class:`~kafkalog.errors.KafkaStorageError` where it happens, naming the file, so an I/O error is
(:func:`io_failure`) an ``OSError`` of the system's own, or a :class:`~kafkalog.errors.KafkaStorageError`
made from one (it carries an ``errno``, or its chain of causes holds one).  A
:class:`~kafkalog.errors.KafkaStorageError` kafkalog raises of its own accord (the log is closed, another
writer holds the dir, the dir is offline already, a file that opened is found to be of the wrong kind) and a
:class:`~kafkalog.errors.ReadOnlyError` are not I/O errors and take nothing offline.  A log opened read-only
(kafkalog's) uses no handler: each failing read just raises.  An error the handler
raised itself carries the dir in :attr:`~kafkalog.errors.KafkaStorageError.log_dir`, so a handler around it
(a flush inside an append) lets it through, as Kafka's lets its ``KafkaStorageException`` through.

Log dirs are named by their paths as strings, as Kafka names them (``String logDir``); a log reports the
absolute path of its partition directory's parent, a :class:`~kafkalog.manager.log_manager.LogManager` its live dirs'
canonical paths, which are the same strings for the logs it opens.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable
from types import TracebackType

from .errors import IllegalStateError, KafkaLogError, KafkaStorageError, LogDirInUseError, ReadOnlyError

__all__ = ["IOExceptionHandler", "LogDirFailureChannel", "io_failure", "is_io_failure"]

logger = logging.getLogger(__name__)

#: What a handler is told to say: the message, or a function making it (Kafka's by-name ``errorMsg``), so an
#: append does not format a message it will not need.
Message = str | Callable[[], str]


def io_failure(error: BaseException) -> OSError | None:
    """The I/O error in Kafka's sense (an ``IOException``) that ``error`` is or was made from, which takes a log
    dir offline, else ``None``: an ``OSError`` of the system's own, or a
    :class:`~kafkalog.errors.KafkaStorageError` kafkalog made from one (it carries the ``errno``, or the system's
    error is in its chain of causes); not a :class:`~kafkalog.errors.ReadOnlyError`, a
    :class:`~kafkalog.errors.LogDirInUseError`, one a handler raised already (its ``log_dir`` is set) or one
    kafkalog raised of its own accord."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if not isinstance(current, OSError) or isinstance(current, ReadOnlyError | LogDirInUseError):
            return None
        if not isinstance(current, KafkaStorageError):
            return None if isinstance(current, KafkaLogError) else current
        if current.log_dir is not None:
            return None
        if current.errno is not None:
            return current
        # A KafkaStorageError passed on with ``raise storage_error(e, ...) from e`` is its own cause; what it was
        # made from is then still its context.
        cause = current.__cause__
        current = current.__context__ if cause is current else cause
    return None


def is_io_failure(error: BaseException) -> bool:
    """Whether ``error`` takes a log dir offline (:func:`io_failure`)."""
    return io_failure(error) is not None


class LogDirFailureChannel:
    """The log dirs taken offline by an I/O error, and a queue of them for whoever takes them out of service
    (Kafka: ``LogDirFailureChannel``).

    One channel is shared by every log of a :class:`~kafkalog.manager.log_manager.LogManager`; a
    :class:`~kafkalog.log.unified_log.Log`
    opened on its own makes its own, so it behaves the same way alone.  Thread-safe.  ``log_dir_num`` is
    Kafka's bound on the queue (the number of log dirs); ``None`` leaves it unbounded, for a channel whose dirs
    are not known in advance (each dir is queued once, so the queue never holds more than the dirs seen).
    """

    def __init__(self, log_dir_num: int | None = None) -> None:
        self._lock = threading.Lock()
        self._offline_log_dirs: dict[str, str] = {}
        self._offline_log_dir_queue: queue.Queue[str] = queue.Queue(log_dir_num if log_dir_num is not None else 0)

    def __repr__(self) -> str:
        return f"LogDirFailureChannel(offline={self.offline_log_dirs()})"

    def has_offline_log_dir(self, log_dir: str | os.PathLike[str]) -> bool:
        """Whether ``log_dir`` was taken offline (Kafka: ``hasOfflineLogDir``)."""
        return os.fspath(log_dir) in self._offline_log_dirs

    def offline_log_dirs(self) -> list[str]:
        """Every log dir taken offline, in the order they failed (kafkalog's: Kafka asks one dir at a time)."""
        with self._lock:
            return list(self._offline_log_dirs)

    def maybe_add_offline_log_dir(self, log_dir: str | os.PathLike[str], msg: str, error: BaseException) -> None:
        """Log ``msg`` with ``error`` as an error and, the first time ``log_dir`` is reported, mark it offline
        and queue it (Kafka: ``maybeAddOfflineLogDir``).  Kafka's takes an ``IOException``; any error is taken
        here, as the loader and the checkpoints report their own kinds.

        Raises:
            IllegalStateError: the queue is full (more dirs than ``log_dir_num`` failed), as Kafka's
                ``ArrayBlockingQueue.add`` throws ``IllegalStateException``; the dir is offline all the same.
        """
        logger.error("%s", msg, exc_info=error)
        key = os.fspath(log_dir)
        with self._lock:
            if key in self._offline_log_dirs:
                return
            self._offline_log_dirs[key] = key
        try:
            self._offline_log_dir_queue.put_nowait(key)
        except queue.Full:
            raise IllegalStateError(f"Queue full: cannot queue offline log dir {key} (the channel was made for "
                                    f"{self._offline_log_dir_queue.maxsize} log dirs)") from None

    def take_next_offline_log_dir(self, timeout: float | None = None) -> str | None:
        """The next log dir taken offline, waiting for one if need be (Kafka: ``takeNextOfflineLogDir``, which
        waits for ever); with ``timeout`` (seconds; 0 does not wait) ``None`` when none came in time."""
        try:
            if timeout is not None and timeout <= 0:
                return self._offline_log_dir_queue.get_nowait()
            return self._offline_log_dir_queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def maybe_handle_io_exception(self, log_dir: str | os.PathLike[str], message: Message) -> IOExceptionHandler:
        """A context manager for work on the files of ``log_dir`` (Kafka: ``LocalLog.maybeHandleIOException``):

        * entering it raises :class:`~kafkalog.errors.KafkaStorageError` when ``log_dir`` is offline already;
        * an I/O error (:func:`is_io_failure`) leaving it takes ``log_dir`` offline
          (:meth:`maybe_add_offline_log_dir` with ``message``) and becomes a
          :class:`~kafkalog.errors.KafkaStorageError` saying ``message`` and the error, with its ``errno``, its
          ``log_dir`` set and the error as its cause; any other error leaves unchanged.
        """
        return IOExceptionHandler(self, os.fspath(log_dir), message)


class IOExceptionHandler:
    """The context manager of :meth:`LogDirFailureChannel.maybe_handle_io_exception`: one per use."""

    __slots__ = ("_channel", "_log_dir", "_message")

    def __init__(self, channel: LogDirFailureChannel, log_dir: str, message: Message) -> None:
        self._channel = channel
        self._log_dir = log_dir
        self._message = message

    def __enter__(self) -> None:
        if self._channel.has_offline_log_dir(self._log_dir):
            error = KafkaStorageError(
                f"The log dir {self._log_dir} is already offline due to a previous IO exception.")
            error.log_dir = self._log_dir
            raise error

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc is None:
            return
        failure = io_failure(exc)
        if failure is None:
            return
        message = self._message() if callable(self._message) else self._message
        self._channel.maybe_add_offline_log_dir(self._log_dir, message, exc)
        error = KafkaStorageError(f"{message}: {exc}")
        error.errno = failure.errno
        error.log_dir = self._log_dir
        raise error from exc
