"""The broker: Kafka's wire protocol on a TCP listener, over kafkalog's logs, on one asyncio event loop.

Kafka's ``SocketServer`` (``core/.../network/SocketServer.scala``), ``RequestChannel`` and ``KafkaApis.handle``
(3.8.0), as far as one process serving one node needs them:

- **Framing.**  A request is an int32 size and that many bytes.  A size below 0 or above
  ``socket.request.max.bytes`` closes the connection before anything is read (Kafka's ``InvalidReceiveException``),
  so a client cannot make the broker hold more than that per connection; and the requests being read and handled
  at once hold at most ``queued.max.request.bytes`` together (:class:`RequestMemoryPool`), so a thousand clients
  cannot either.
- **Order.**  Each connection's requests are read, handled and answered one at a time, in order (Kafka mutes a
  channel while its request is in flight, which gives the same order); a connection waiting (a long-poll fetch, a
  join) holds up only itself.  A slow reader holds up only its own connection: its writes wait for the socket.
- **Versions.**  ApiVersions answers any version: one the broker does not know gets a v0 answer with
  ``UNSUPPORTED_VERSION`` and the supported ranges, so that an old or new client learns what to use (KIP-511), and
  its response header is always v0.  Any other API at a version outside its range, an unknown API key, or a request
  whose body does not read as its API's message closes the connection (Kafka: ``InvalidRequestException`` in
  ``RequestContext.parseRequest``, then ``closeConnection``).
- **Failures.**  A handler that raises something unexpected is logged at ERROR with its traceback and its request
  answered with the API's own response carrying the error (UNKNOWN_SERVER_ERROR, or the code Kafka maps the error
  to) in each item the request named (:mod:`~kafkalog.broker.error_responses`, Kafka's ``getErrorResponse``); the
  connection stays open.  A produce with ``acks=0``, which gets no answer, has its connection closed instead, as
  Kafka's ``RequestHandlerHelper.sendErrorOrCloseConnection`` does, so that its client notices.
- **Idle connections** are closed after ``connections.max.idle.ms``.

The storage is a :class:`~kafkalog.manager.LogManager` over ``log.dirs`` with the broker's topic defaults and cleaner
configuration (its retention, flush, checkpoint and cleaner tasks run on its own threads, as Kafka's do); the
topics are a :class:`~kafkalog.broker.partitions.PartitionRegistry`.  ``stop()`` shuts the log manager down as
Kafka's controlled shutdown does: every log flushed and closed, the checkpoints written, and
``.kafka_cleanshutdown`` left in each directory so the next start skips recovery; and, as Kafka's ``ReplicaManager``
does, each directory's ``replication-offset-checkpoint`` written at shutdown and every
``replica.high.watermark.checkpoint.interval.ms``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import struct
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from kio.schema.errors import ErrorCode

from ..checkpoint import REPLICATION_OFFSET_CHECKPOINT_FILE, OffsetCheckpoint
from ..manager import LogManager
from ..topic import TopicPartition
from .admin import (
    handle_alter_configs,
    handle_create_partitions,
    handle_create_topics,
    handle_delete_records,
    handle_delete_topics,
    handle_describe_configs,
    handle_incremental_alter_configs,
    handle_offset_for_leader_epoch,
)
from .config import BrokerConfig
from .context import RequestContext
from .data_dirs import prepare_data_dirs
from .error_responses import error_response
from .fetch import handle_fetch, handle_list_offsets
from .group_apis import group_handlers
from .group_coordinator import GroupCoordinator
from .kio_values import build
from .log_dir_moves import LogDirMoves
from .metadata import handle_describe_cluster, handle_describe_topic_partitions, handle_metadata
from .metadata_log import MetadataLog
from .partitions import PartitionRegistry
from .produce import handle_produce
from .producer_ids import ProducerIdManager
from .protocol import (
    API_VERSIONS_KEY,
    ApiKey,
    CloseConnection,
    MalformedRequestError,
    RequestHeader,
    encode_response,
    kio_versions,
    parse_request_header,
    request_reader,
    response_class,
)
from .replicas import (
    handle_alter_partition_reassignments,
    handle_describe_log_dirs,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)
from .txn_apis import GroupCompletion, find_coordinator_handler, transaction_handlers
from .txn_coordinator import TransactionCoordinator

__all__ = ["Broker", "Handler", "RequestMemoryPool"]

logger = logging.getLogger(__name__)

Handler = Callable[[RequestContext, Any], Awaitable[Any]]

_SIZE: Final = struct.Struct(">i")
_NO_THROTTLE: Final = datetime.timedelta(0)

#: API key -> (lowest version, highest version, handler).  The ranges are within kio's (Kafka 4's), capped where a
#: newer version needs what kafkalog does not do yet (Produce v13 names topics by id).
_HANDLERS: Final[dict[int, tuple[int, int, Handler]]] = {
    ApiKey.PRODUCE: (3, 12, handle_produce),
    ApiKey.FETCH: (4, 17, handle_fetch),
    ApiKey.LIST_OFFSETS: (1, 10, handle_list_offsets),
    ApiKey.METADATA: (0, 12, handle_metadata),
    ApiKey.DESCRIBE_CLUSTER: (0, 1, handle_describe_cluster),
    ApiKey.CREATE_TOPICS: (2, 7, handle_create_topics),
    ApiKey.DELETE_TOPICS: (1, 6, handle_delete_topics),
    ApiKey.CREATE_PARTITIONS: (0, 3, handle_create_partitions),
    ApiKey.DESCRIBE_CONFIGS: (1, 4, handle_describe_configs),
    ApiKey.ALTER_CONFIGS: (0, 2, handle_alter_configs),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1, handle_incremental_alter_configs),
    ApiKey.DELETE_RECORDS: (0, 2, handle_delete_records),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4, handle_offset_for_leader_epoch),
    ApiKey.ELECT_LEADERS: (0, 2, handle_elect_leaders),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0, handle_alter_partition_reassignments),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0, handle_list_partition_reassignments),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4, handle_describe_log_dirs),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0, handle_describe_topic_partitions),
}


class Broker:
    """A single-node Kafka broker over kafkalog's logs.

    ``await broker.start()`` opens the data directories (recovering them as a broker does) and listens;
    ``await broker.stop()`` closes every connection and shuts the logs down cleanly.  Everything runs on the event
    loop that started it (the log manager's background tasks on their own threads).  For a broker on a thread of its
    own, use :func:`kafkalog.broker.running.serve`.
    """

    def __init__(self, config: BrokerConfig | Mapping[str, object]) -> None:
        self.config = config if isinstance(config, BrokerConfig) else BrokerConfig(config)
        self.node_id: int = self.config["node.id"]
        self.cluster_id = ""
        self.log_manager: LogManager | None = None
        self.partitions: PartitionRegistry = None  # type: ignore[assignment]
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._data_waiters: list[asyncio.Future[None]] = []
        self._handlers: dict[int, tuple[int, int, Handler]] = dict(_HANDLERS)
        self._port = 0
        self._host = ""
        self._stopping = False
        self.producer_ids: ProducerIdManager = None  # type: ignore[assignment]
        self.groups: GroupCoordinator | None = None
        self.transactions: TransactionCoordinator | None = None
        self.metadata_log: MetadataLog | None = None
        self.log_dir_moves: LogDirMoves | None = None
        self._checkpoint_timer: asyncio.TimerHandle | None = None
        self._request_memory = RequestMemoryPool(self.config["queued.max.request.bytes"])

    # -- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the data directories and start listening; returns once the port accepts connections."""
        config = self.config
        self.cluster_id = prepare_data_dirs(config.log_dirs, self.node_id)
        metadata = MetadataLog(config.log_dirs[0], self.node_id)
        self.log_manager = LogManager(
            config.log_dirs, default_config=config.topic_defaults, cleaner_config=config.cleaner,
            topic_configs=metadata.topic_overrides(),
            recovery_threads_per_data_dir=config["num.recovery.threads.per.data.dir"],
            flush_check_ms=config["log.flush.scheduler.interval.ms"],
            flush_recovery_offset_checkpoint_ms=config["log.flush.offset.checkpoint.interval.ms"],
            flush_start_offset_checkpoint_ms=config["log.flush.start.offset.checkpoint.interval.ms"],
            retention_check_ms=config["log.retention.check.interval.ms"],
            initial_task_delay_ms=config["log.initial.task.delay.ms"],
            max_transaction_timeout_ms=config["transaction.max.timeout.ms"],
            producer_id_expiration_check_interval_ms=config["producer.id.expiration.check.interval.ms"])
        self.log_manager.startup()
        try:
            self.producer_ids = ProducerIdManager(config.log_dirs[0])
            metadata.open(self.log_manager.dir_lock(config.log_dirs[0]))
            self.metadata_log = metadata
            self.partitions = PartitionRegistry(self.log_manager, config.topic_defaults, on_append=self._appended,
                                                metadata=metadata)
            self.groups = GroupCoordinator(self.partitions, config.group_coordinator, broker_id=self.node_id)
            # The internal topics are created when a client first asks for a coordinator, as a Kafka broker creates
            # them: a broker that serves no group and no transaction starts without their hundred partitions.
            await self.groups.startup(create_topic=False)
            self._handlers.update(group_handlers(self.groups))
            # After the groups: a marker for a __consumer_offsets partition with no log would be dropped.
            self.transactions = TransactionCoordinator(
                self.partitions, self.producer_ids.generate, config.transaction_coordinator,
                broker_id=self.node_id, offsets_topic_num_partitions=self.groups.config.offsets_topic_num_partitions)
            self.transactions.add_completion_listener(GroupCompletion(self.groups))
            await self.transactions.startup(create_topic=False)
            self._handlers.update(transaction_handlers(self.transactions, self.groups))
            self._handlers[ApiKey.FIND_COORDINATOR] = find_coordinator_handler(self.groups, self.transactions)
            self.log_dir_moves = LogDirMoves(self.partitions)
            self._handlers[ApiKey.ALTER_REPLICA_LOG_DIRS] = (1, 2, self.log_dir_moves.handle)
            self.log_dir_moves.resume()
            listener = config.listeners[0]
            self._server = await asyncio.start_server(self._serve_connection, listener.host or None, listener.port,
                                                      reuse_address=True,
                                                      backlog=config["socket.listen.backlog.size"])
        except BaseException:
            if self.log_dir_moves is not None:
                await self.log_dir_moves.stop()
                self.log_dir_moves = None
            metadata.close()
            self.log_manager.shutdown()
            raise
        self._schedule_high_watermark_checkpoint()
        sock = self._server.sockets[0].getsockname()
        self._host, self._port = sock[0], sock[1]
        logger.info("kafkalog broker %d of cluster %s listening on %s:%d", self.node_id, self.cluster_id,
                    self._host, self._port)

    def checkpoint_high_watermarks(self) -> None:
        """Write each data directory's ``replication-offset-checkpoint``: every partition's high watermark (Kafka:
        ``ReplicaManager.checkpointHighWatermarks``, every ``replica.high.watermark.checkpoint.interval.ms`` and at
        shutdown).  A broker reads it back on start; with one replica the high watermark is then the log end offset
        anyway, but the file is there as a broker leaves it."""
        if self.log_manager is None:
            return
        for log_dir, logs in self.log_manager.logs_by_dir().items():
            try:
                OffsetCheckpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT_FILE).write(
                    {tp: log.high_watermark for tp, log in sorted(logs.items())})
            except OSError as e:
                logger.error("Error while writing the high watermark checkpoint of %s: %s", log_dir, e)

    def _schedule_high_watermark_checkpoint(self) -> None:
        def run() -> None:
            self.checkpoint_high_watermarks()
            self._schedule_high_watermark_checkpoint()
        interval_s = self.config["replica.high.watermark.checkpoint.interval.ms"] / 1000
        self._checkpoint_timer = asyncio.get_running_loop().call_later(interval_s, run)

    async def stop(self) -> None:
        """Stop listening, close every connection, and shut the logs down cleanly."""
        self._stopping = True
        if self._checkpoint_timer is not None:
            self._checkpoint_timer.cancel()
            self._checkpoint_timer = None
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        for waiter in self._data_waiters:
            if not waiter.done():
                waiter.cancel()
        if self.log_dir_moves is not None:
            await self.log_dir_moves.stop()
            self.log_dir_moves = None
        if self.transactions is not None:
            self.transactions.shutdown()
            self.transactions = None
        if self.groups is not None:
            self.groups.shutdown()
            self.groups = None
        self.checkpoint_high_watermarks()
        if self.metadata_log is not None:
            self.metadata_log.close()
            self.metadata_log = None
        if self.log_manager is not None:
            manager, self.log_manager = self.log_manager, None
            await asyncio.get_running_loop().run_in_executor(None, manager.shutdown)
        logger.info("kafkalog broker %d stopped", self.node_id)

    @property
    def port(self) -> int:
        """The port the broker listens on (the one picked, when the listener asked for 0)."""
        return self._port

    @property
    def advertised_host(self) -> str:
        advertised = self.config.advertised_listeners
        if advertised:
            return advertised[0].host
        return self.config.listeners[0].host or self._host

    @property
    def advertised_port(self) -> int:
        advertised = self.config.advertised_listeners
        if advertised and advertised[0].port:
            return advertised[0].port
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        return f"{self.advertised_host}:{self.advertised_port}"

    # -- data arriving ---------------------------------------------------------------------------------------

    def _appended(self, _topic_partition: TopicPartition) -> None:
        waiters, self._data_waiters = self._data_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_for_data(self, timeout_s: float) -> None:
        """Return when any partition is appended to, or after ``timeout_s`` seconds."""
        waiter = asyncio.get_running_loop().create_future()
        self._data_waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout_s)
        except TimeoutError:
            pass
        finally:
            if waiter in self._data_waiters:
                self._data_waiters.remove(waiter)

    # -- APIs ------------------------------------------------------------------------------------------------

    def register(self, api_key: int, lowest: int, highest: int, handler: Handler) -> None:
        """Answer ``api_key`` versions ``lowest``..``highest`` with ``handler`` (within kio's range)."""
        known = kio_versions(api_key)
        if known is None or lowest < known[0] or highest > known[1]:
            raise ValueError(f"API {api_key} versions {lowest}-{highest} are outside the known {known}")
        self._handlers[api_key] = (lowest, highest, handler)

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        ranges = {key: (lo, hi) for key, (lo, hi, _) in self._handlers.items()}
        ranges[API_VERSIONS_KEY] = kio_versions(API_VERSIONS_KEY)  # type: ignore[assignment]
        return dict(sorted(ranges.items()))

    def _api_versions_response(self, version: int, code: ErrorCode) -> Any:
        """Kafka: ``ApiVersionsResponse`` of the broker's ranges (``KafkaApis.handleApiVersionsRequest``)."""
        cls = response_class(API_VERSIONS_KEY, version)
        entry = __import__(cls.__module__, fromlist=["ApiVersion"]).ApiVersion
        keys = tuple(build(entry, api_key=k, min_version=lo, max_version=hi)
                     for k, (lo, hi) in self.supported_versions().items())
        return build(cls, error_code=code, api_keys=keys, throttle_time=_NO_THROTTLE)

    async def _dispatch(self, header: RequestHeader, body: memoryview, ctx: RequestContext) -> bytes | None:
        key, version = header.api_key, header.api_version
        if key == API_VERSIONS_KEY:
            lo, hi = kio_versions(key)  # type: ignore[misc]
            if not lo <= version <= hi:
                # KIP-511: answer at v0, which every client reads, with the ranges and the error
                return encode_response(key, 0, header.correlation_id,
                                       self._api_versions_response(0, ErrorCode.unsupported_version))
            request, _ = request_reader(key, version)(body, 0)
            code = ErrorCode.none
            if version >= 3 and not (_valid_software(request.client_software_name)
                                     and _valid_software(request.client_software_version)):
                code = ErrorCode.invalid_request
            return encode_response(key, version, header.correlation_id, self._api_versions_response(version, code))
        entry = self._handlers.get(key)
        if entry is None or not entry[0] <= version <= entry[1]:
            raise MalformedRequestError(f"Unsupported version {version} of API {key}")
        request, _ = request_reader(key, version)(body, 0)
        try:
            response = await entry[2](ctx, request)
            if response is None:
                return None
            return encode_response(key, version, header.correlation_id, response)
        except (MalformedRequestError, CloseConnection):
            raise
        except Exception as e:
            # Kafka: KafkaApis.handle logs it and RequestHandlerHelper.handleError answers getErrorResponse(e)
            logger.exception("Unexpected error handling request %s (API %d v%d, correlation id %d) from %s:%s",
                             header.client_id, key, version, header.correlation_id, ctx.client_host,
                             ctx.client_port)
            answer = error_response(key, version, request, e)
            if answer is None:
                # sendErrorOrCloseConnection: a request that gets no answer (acks=0) has its connection closed
                raise CloseConnection(f"API {key} v{version} failed and has no response to carry the error") from e
            return encode_response(key, version, header.correlation_id, answer)

    # -- connections -----------------------------------------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        max_size = self.config["socket.request.max.bytes"]
        idle_s = self.config["connections.max.idle.ms"] / 1000
        try:
            while True:
                try:
                    prefix = await asyncio.wait_for(reader.readexactly(4), idle_s)
                except TimeoutError:
                    logger.debug("Closing connection from %s:%s idle for %.0f s", peer[0], peer[1], idle_s)
                    return
                (size,) = _SIZE.unpack(prefix)
                if size < 0 or size > max_size:
                    logger.warning("Closing connection from %s:%s: a request of %d bytes is larger than "
                                   "socket.request.max.bytes (%d)" if size >= 0 else
                                   "Closing connection from %s:%s: a request size of %d is invalid (%d)",
                                   peer[0], peer[1], size, max_size)
                    return
                await self._request_memory.acquire(size)
                try:
                    frame = memoryview(await reader.readexactly(size))
                    try:
                        header, start = parse_request_header(frame)
                        ctx = RequestContext(header, peer[0], peer[1], self)
                        answer = await self._dispatch(header, frame[start:], ctx)
                    except MalformedRequestError as e:
                        logger.warning("Closing connection from %s:%s: %s", peer[0], peer[1], e)
                        return
                finally:
                    self._request_memory.release(size)
                if answer is not None:
                    writer.write(answer)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            # the broker is stopping: the connection ends here (asyncio's server would report a cancelled task)
        except Exception:
            logger.exception("Closing connection from %s:%s after an unexpected error", peer[0], peer[1])
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


class RequestMemoryPool:
    """The bytes of requests being read and handled, across all connections, bounded (Kafka: the ``MemoryPool`` of
    ``queued.max.request.bytes``, which mutes a channel whose request does not fit until memory is returned).

    A request waits until its size fits beside the others in flight; one alone always goes ahead, however large
    (``socket.request.max.bytes`` bounds it), so no request waits for ever.  ``capacity`` -1 bounds nothing.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_use = 0
        self.peak = 0
        self._released = asyncio.Event()

    async def acquire(self, size: int) -> None:
        while self.capacity >= 0 and self.in_use > 0 and self.in_use + size > self.capacity:
            self._released.clear()
            await self._released.wait()
        self.in_use += size
        self.peak = max(self.peak, self.in_use)

    def release(self, size: int) -> None:
        self.in_use -= size
        self._released.set()


def _valid_software(text: str) -> bool:
    """Kafka: ``ApiVersionsRequest.isValid``'s pattern ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``."""
    import re
    return re.fullmatch(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?", text) is not None
