"""The ``kafkalog`` data source: Spark's side of reading and writing Kafka log directories.

Registered under the name ``kafkalog`` (Spark's own ``kafka`` source keeps that name) by
:func:`kafkalog.spark.register`.  The classes here only translate between Spark's Python data-source
API (``pyspark.sql.datasource``, Spark 4.2+) and kafkalog: planning and reading live in
:mod:`kafkalog.spark.plan`, the Arrow conversion in :mod:`kafkalog.spark.arrow`, stream offsets in
:mod:`kafkalog.spark.stream` and appends in :mod:`kafkalog.spark.write`.

Errors are kafkalog's (:class:`~kafkalog.spark.options.SparkOptionError` for options), raised where Spark
shows them best: the options of a read are checked by :meth:`KafkaLogDataSource.schema`, which Spark calls
at ``load()``, so a bad option fails there, for a stream too, before a query starts.  An error a stream
can only find once it runs (a partition missing) is raised by the first offset call, which Spark reports as
the query's cause (raised while the reader is made, PySpark 4.3 would hide it behind an error of its own).
The ending options are such an error too, although Spark's Kafka source refuses them for a stream at
``load()`` (``KafkaSourceProvider.validateStreamOptions``): PySpark runs a Python source's constructor and
``schema()`` at ``load()`` with the same options for ``spark.read`` and ``spark.readStream``, and nothing
else, so the source cannot tell a stream from a batch read there, and a batch read takes them.

Spark puts a Python traceback in the message unless ``spark.sql.execution.pyspark.udf.hideTraceback.enabled``
is set, as :func:`kafkalog.spark.session` does.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from .arrow import SPARK_SCHEMA, SPARK_SCHEMA_WITH_HEADERS
from .options import ReadOptions, SparkOptionError
from .plan import ReadTask, plan_read
from .stream import (
    AdmissionControl,
    Available,
    available_offsets,
    from_json,
    initial_position,
    latest_position,
    plan_micro_batch,
    to_json,
)
from .write import StagedFile, WriteOptions, WritePlan, commit, discard, stage

__all__ = ["KafkaLogDataSource"]


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafkalog")``, ``df.write.format("kafkalog")`` and
    ``spark.readStream.format("kafkalog")`` over log dirs and partition dirs."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> str:
        # Called at load() for reads and streams alike (not for writes, whose options differ): the options
        # both take are checked here, so a mistake fails load() rather than a running query.
        ReadOptions.parse(self.options, streaming=None)
        include_headers = str(self.options.get("includeHeaders", "false")).strip().lower() in ("true", "1", "yes")
        return SPARK_SCHEMA_WITH_HEADERS if include_headers else SPARK_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return _BatchReader(ReadOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        try:
            return _StreamReader(ReadOptions.parse(self.options, streaming=True))
        except SparkOptionError as e:
            return _StreamReader(None, e)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        # Spark itself refuses its default mode (errorifexists) and ignore for a Python data source, with a message
        # that offers overwrite: this one is what a user who followed it reads, so it says what works.
        if overwrite:
            raise SparkOptionError("kafkalog appends to Kafka logs and never overwrites them, so mode('overwrite') "
                                   "is refused (as are Spark's default mode, errorifexists, and ignore): write with "
                                   "df.write.format('kafkalog').mode('append')")
        return _Writer(WritePlan.create(WriteOptions.parse(self.options, schema.fieldNames())))


def _read(partition: InputPartition) -> Iterator[Any]:
    task: ReadTask | None = partition.value
    if task is None:
        return  # a plan with no task: PySpark still runs one, with an empty InputPartition
    yield from task.read()


class _BatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        # Planned now, on the driver, so a bad path or offset fails the query before any task starts.
        if options.ignored:
            # Spark's source logs this; a warning reaches the console from the Python worker planning the read.
            warnings.warn(f"{', '.join(options.ignored)}: for streams only, ignored by a batch read", stacklevel=2)
        self.tasks = plan_read(options)

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(task) for task in self.tasks]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)


class _StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A stream's offsets (:mod:`kafkalog.spark.stream`).  ``Trigger.AvailableNow`` is taken as Spark's Kafka
    source takes it (``KafkaMicroBatchStream``): PySpark calls :meth:`prepareForTriggerAvailableNow` when the
    query starts, which fixes the end, then asks :meth:`latestOffset` with the default read limit, so
    ``maxOffsetsPerTrigger`` cuts the records up to that end into micro-batches."""

    def __init__(self, options: ReadOptions | None, error: SparkOptionError | None = None) -> None:
        self._options = options
        self._error = error
        self._admission = None
        if options is not None and options.min_offsets_per_trigger is not None:
            self._admission = AdmissionControl(options.min_offsets_per_trigger, options.max_trigger_delay_ms)
        #: What Trigger.AvailableNow reads, fixed when the query starts (None: not that trigger).
        self._available_now: Available | None = None

    @property
    def options(self) -> ReadOptions:
        if self._options is None:
            assert self._error is not None
            raise self._error
        return self._options

    def initialOffset(self) -> dict[str, Any]:
        return to_json(initial_position(self.options))

    def prepareForTriggerAvailableNow(self) -> None:
        # Spark's source fetches its end at the first latestOffset call after this; fixing it here, a moment
        # earlier, keeps the same promise (nothing appended after the query started is read) in one place.
        self._available_now = available_offsets(self.options)

    def getDefaultReadLimit(self) -> ReadLimit:
        # Spark's source: both limits make a composite one, which PySpark's stream readers cannot return; the
        # minimum is applied by latestOffset from the options, the maximum travels as the limit.
        if self._options is None:
            return ReadAllAvailable()
        if self._options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self._options.max_offsets_per_trigger)
        if self._options.min_offsets_per_trigger is not None:
            return ReadMinRows(self._options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        options = self.options
        position = from_json(start)
        if isinstance(limit, ReadAllAvailable):
            # Everything, at once (Trigger.Once): Spark's source lets this limit override the others.
            return to_json(latest_position(options, position, None, available=self._available_now))
        max_offsets = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if self._available_now is not None:
            # Trigger.AvailableNow: capped up to the fixed end, never held back (see kafkalog.spark.stream).
            return to_json(latest_position(options, position, max_offsets, available=self._available_now))
        return to_json(latest_position(options, position, max_offsets, self._admission))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return [InputPartition(t) for t in plan_micro_batch(self.options, from_json(start), from_json(end))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the logs are only read, and Spark's checkpoint holds the position."""


@dataclass
class _Staged(WriterCommitMessage):
    files: list[StagedFile]


class _Writer(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        order = context.partitionId() if context is not None else 0
        return _Staged(stage(self.plan, iterator, order))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        staged = [f for m in messages if isinstance(m, _Staged) for f in m.files]
        commit(self.plan, staged)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        discard(self.plan)
