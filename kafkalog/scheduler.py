"""Clocks and background-task schedulers: ``Time``, ``Scheduler``, ``KafkaScheduler`` and their test doubles.

Ports of (Apache Kafka, tag 0.10.1.1) ``core/src/main/scala/kafka/utils/Time.scala``,
``KafkaScheduler.scala`` (the ``Scheduler`` trait and ``KafkaScheduler``) and the test helpers
``core/src/test/scala/unit/kafka/utils/MockTime.scala`` and ``MockScheduler.scala``, brought up to their
Kafka 3.8.0 successors: ``clients/.../common/utils/Time.java``, ``SystemTime.java``, ``MockTime.java``
(clients test utils), ``server-common/.../server/util/Scheduler.java``, ``KafkaScheduler.java``,
``MockScheduler.java`` and ``MockTime.java`` (server-common test utils).  They ship in the package, not in
``tests/``, because kafkalog's users test their own code against a log driven by a mock clock.

The log layer never reads the clock or starts a thread itself: a ``Log`` is given a :class:`Time` and a
:class:`Scheduler`.  In production those are :data:`SYSTEM_TIME` and a :class:`KafkaScheduler` (a pool of
worker threads running delayed and periodic tasks, Kafka's ``ScheduledThreadPoolExecutor``); in tests they
are a :class:`MockTime` and its :class:`MockScheduler`, where nothing happens until the test advances the
clock, and then every task that has come due runs at once, in the calling thread, in time order.

What follows Kafka 3.8 rather than 0.10.1, and why:

* ``Time`` keeps wall-clock milliseconds and the monotonic nanosecond clock apart, and ``MockTime`` keeps two
  separate counters (0.10.1 derived nanoseconds from milliseconds), so code that wrongly mixes the two
  clocks fails under test as it would in production;
* ``schedule`` returns a handle (:class:`ScheduledTask`, Kafka's ``ScheduledFuture``) that can cancel the
  task, which the log needs to stop its periodic work on close;
* a period of 0 or less means "run once" (0.10.1 ran ``period == 0`` as periodic, which
  ``ScheduledThreadPoolExecutor`` refuses); ``schedule_once`` and ``resize_thread_pool`` exist.

Where it keeps 0.10.1: ``schedule`` on a :class:`KafkaScheduler` that is not started raises
:class:`SchedulerStateError` (Kafka 3.x logs the task and drops it; a dropped flush or retention task is a
silent failure, and a Python caller can handle the error).  Other deliberate differences are in the
docstrings of the classes concerned.
"""

from __future__ import annotations

import abc
import concurrent.futures
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import ClassVar, Final, TypeVar

from .errors import KafkaLogError

__all__ = [
    "Time",
    "SystemTime",
    "SYSTEM_TIME",
    "MockTime",
    "Scheduler",
    "ScheduledTask",
    "KafkaScheduler",
    "MockScheduler",
    "MockTask",
    "SchedulerStateError",
    "NS_PER_US",
    "US_PER_MS",
    "MS_PER_SEC",
    "NS_PER_MS",
    "NS_PER_SEC",
    "US_PER_SEC",
    "SECS_PER_MIN",
    "MINS_PER_HOUR",
    "HOURS_PER_DAY",
    "SECS_PER_HOUR",
    "SECS_PER_DAY",
    "MINS_PER_DAY",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

# Kafka 0.10.1: object kafka.utils.Time, "some common constants".
NS_PER_US: Final = 1000
US_PER_MS: Final = 1000
MS_PER_SEC: Final = 1000
NS_PER_MS: Final = NS_PER_US * US_PER_MS
NS_PER_SEC: Final = NS_PER_MS * MS_PER_SEC
US_PER_SEC: Final = US_PER_MS * MS_PER_SEC
SECS_PER_MIN: Final = 60
MINS_PER_HOUR: Final = 60
HOURS_PER_DAY: Final = 24
SECS_PER_HOUR: Final = SECS_PER_MIN * MINS_PER_HOUR
SECS_PER_DAY: Final = SECS_PER_HOUR * HOURS_PER_DAY
MINS_PER_DAY: Final = MINS_PER_HOUR * HOURS_PER_DAY


class SchedulerStateError(KafkaLogError, RuntimeError):
    """A scheduler used in the wrong state: started twice, or given a task while not running.

    Kafka: the ``IllegalStateException`` of ``KafkaScheduler.startup`` and (0.10.1) ``ensureRunning``.
    """


def _nanos_to_millis(ns: int) -> int:
    """``TimeUnit.NANOSECONDS.toMillis``: division truncating toward zero (Java's ``/``), negatives too."""
    millis = abs(ns) // NS_PER_MS
    return millis if ns >= 0 else -millis


# --- Time -----------------------------------------------------------------------------------------------


class Time(abc.ABC):
    """A clock that tests can replace (Kafka: ``org.apache.kafka.common.utils.Time``; 0.10.1:
    ``kafka.utils.Time``).  Implementations are thread-safe.

    ``milliseconds()`` is wall-clock time (for timestamps that are stored or compared with other
    machines'); ``nanoseconds()`` is a monotonic clock with an arbitrary origin (for measuring elapsed time).
    The two are not comparable.
    """

    #: The system clock (Kafka: ``Time.SYSTEM``); set once :class:`SystemTime` is defined.
    SYSTEM: ClassVar[Time]

    @abc.abstractmethod
    def milliseconds(self) -> int:
        """The current wall-clock time in milliseconds since the epoch (Kafka: ``milliseconds``)."""

    @abc.abstractmethod
    def nanoseconds(self) -> int:
        """The monotonic clock in nanoseconds, for elapsed time only (Kafka: ``nanoseconds``)."""

    def hi_res_clock_ms(self) -> int:
        """``nanoseconds()`` in milliseconds (Kafka: ``hiResClockMs``)."""
        return _nanos_to_millis(self.nanoseconds())

    def hi_res_milliseconds(self) -> int:
        """Alias of :meth:`hi_res_clock_ms`."""
        return self.hi_res_clock_ms()

    @abc.abstractmethod
    def sleep(self, ms: int) -> None:
        """Sleep for ``ms`` milliseconds (a mock clock advances instead; Kafka: ``sleep``)."""

    @abc.abstractmethod
    def wait_object(
        self, monitor: threading.Condition, condition: Callable[[], bool], deadline_ms: int
    ) -> None:
        """Wait on ``monitor`` until ``condition()`` holds or this clock reaches ``deadline_ms``.

        Kafka: ``Time.waitObject(obj, condition, deadlineMs)``, with a :class:`threading.Condition` for the
        Java object's monitor.  The caller notifies ``monitor`` when the condition may have changed;
        ``condition`` is evaluated with ``monitor`` held.

        Raises:
            TimeoutError: the deadline passed first (Kafka: ``TimeoutException``).
        """

    def wait_for_future(self, future: concurrent.futures.Future[_T], deadline_ns: int) -> _T:
        """The result of ``future``, waiting at most until ``nanoseconds()`` reaches ``deadline_ns``.

        Kafka: ``Time.waitForFuture``.  An exception of the future is raised as is (Java wraps it in an
        ``ExecutionException``).

        Raises:
            TimeoutError: the deadline passed first.
        """
        while True:
            now_ns = self.nanoseconds()
            if deadline_ns <= now_ns:
                raise TimeoutError("Timed out waiting for a future")
            try:
                return future.result(timeout=(deadline_ns - now_ns) / NS_PER_SEC)
            except concurrent.futures.TimeoutError:
                continue


class SystemTime(Time):
    """The real clocks (Kafka: ``SystemTime``): ``time.time_ns`` (Java ``currentTimeMillis``),
    ``time.monotonic_ns`` (Java ``nanoTime``) and ``time.sleep``.  Use :data:`SYSTEM_TIME`."""

    def milliseconds(self) -> int:
        return time.time_ns() // NS_PER_MS

    def nanoseconds(self) -> int:
        return time.monotonic_ns()

    def sleep(self, ms: int) -> None:
        time.sleep(ms / MS_PER_SEC)

    def wait_object(
        self, monitor: threading.Condition, condition: Callable[[], bool], deadline_ms: int
    ) -> None:
        with monitor:
            while True:
                if condition():
                    return
                now_ms = self.milliseconds()
                if now_ms >= deadline_ms:
                    raise TimeoutError("Condition not satisfied before deadline")
                monitor.wait((deadline_ms - now_ms) / MS_PER_SEC)

    def __repr__(self) -> str:
        return "SystemTime()"


#: The one system clock (Kafka: ``Time.SYSTEM``; 0.10.1: ``object SystemTime``).
SYSTEM_TIME: Final = SystemTime()
Time.SYSTEM = SYSTEM_TIME


class MockTime(Time):
    """A clock that moves only when told to, with a :class:`MockScheduler` that runs tasks as it moves.

    Kafka: the clients ``MockTime`` (auto-tick, listeners, separate millisecond and nanosecond counters)
    and the server-common ``MockTime`` that adds ``scheduler`` (0.10.1: ``kafka.utils.MockTime``).

    ``sleep(ms)`` advances both clocks by ``ms``, tells the listeners, then ticks :attr:`scheduler`, which
    runs every task that has come due, in the sleeping thread.  A task that sleeps ticks the scheduler again
    from inside, as in Kafka.

    ``auto_tick_ms`` (clients ``MockTime``) makes every ``milliseconds()`` and ``nanoseconds()`` call advance
    the clock first.  Kafka's server ``MockTime`` forbids it with a scheduler, because reading the clock
    inside ``tick`` would sleep, tick and read again without end; here the clock does not advance for reads
    made (in the same thread) while an automatic advance is being announced, by the scheduler's ``tick``, the
    tasks it runs and the listeners, which ends that loop: each read outside them advances the clock once.

    ``current_time_ms`` defaults to the wall clock and ``current_high_res_time_ns`` to the monotonic clock
    at construction, as in Kafka.
    """

    def __init__(
        self,
        auto_tick_ms: int = 0,
        current_time_ms: int | None = None,
        current_high_res_time_ns: int | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._auto_tick_ms = auto_tick_ms
        self._time_ms = time.time_ns() // NS_PER_MS if current_time_ms is None else current_time_ms
        self._high_res_time_ns = (
            time.monotonic_ns() if current_high_res_time_ns is None else current_high_res_time_ns
        )
        self._listeners: tuple[Callable[[], None], ...] = ()  # copy on write, as CopyOnWriteArrayList
        self._announcing = threading.local()
        self.scheduler: Final = MockScheduler(self)

    @property
    def auto_tick_ms(self) -> int:
        return self._auto_tick_ms

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every change of the time (Kafka: ``MockTime.addListener``)."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            listeners = list(self._listeners)
            if listener in listeners:
                listeners.remove(listener)
            self._listeners = tuple(listeners)

    def milliseconds(self) -> int:
        if self._auto_tick_ms:  # read on every append: no call when there is nothing to advance
            self._maybe_sleep(self._auto_tick_ms)
        with self._lock:
            return self._time_ms

    def nanoseconds(self) -> int:
        if self._auto_tick_ms:
            self._maybe_sleep(self._auto_tick_ms)
        with self._lock:
            return self._high_res_time_ns

    def _maybe_sleep(self, ms: int) -> None:
        if ms == 0:
            return
        if getattr(self._announcing, "active", False):
            return  # a read by a listener or task of this automatic advance: the clock stays put
        self._announcing.active = True
        try:
            self.sleep(ms)
        finally:
            self._announcing.active = False

    def _advance(self, ms: int) -> None:
        with self._lock:
            self._time_ms += ms
            self._high_res_time_ns += ms * NS_PER_MS

    def sleep(self, ms: int) -> None:
        """Advance both clocks by ``ms``, notify the listeners, run the tasks now due (Kafka: ``sleep``)."""
        self._advance(ms)
        self._tick()

    def set_current_time_ms(self, new_ms: int) -> None:
        """Set the wall clock to ``new_ms`` and the monotonic clock to ``new_ms`` in nanoseconds.

        Kafka: ``MockTime.setCurrentTimeMs``.  Moving backwards raises ``ValueError`` (Kafka's
        ``IllegalArgumentException``) and, unlike Kafka, leaves the time as it was (Kafka has already set it
        when it checks).  Unlike Kafka's server ``MockTime``, this also ticks :attr:`scheduler`, as ``sleep``
        does, so every way of moving the clock runs the tasks that came due.
        """
        with self._lock:
            if self._time_ms > new_ms:
                raise ValueError(
                    f"Setting the time to {new_ms} while current time {self._time_ms} is newer; "
                    "this is not allowed"
                )
            self._time_ms = new_ms
            self._high_res_time_ns = new_ms * NS_PER_MS
        self._tick()

    def _tick(self) -> None:
        for listener in self._listeners:
            listener()
        self.scheduler.tick()

    def wait_object(
        self, monitor: threading.Condition, condition: Callable[[], bool], deadline_ms: int
    ) -> None:
        """Wait until ``condition()`` or until another thread moves this clock past ``deadline_ms``.

        Kafka: ``MockTime.waitObject``: a listener notifies ``monitor`` whenever the time changes.
        """

        def wake() -> None:
            with monitor:
                monitor.notify_all()

        self.add_listener(wake)
        try:
            with monitor:
                while self.milliseconds() < deadline_ms and not condition():
                    monitor.wait()
                if not condition():
                    raise TimeoutError("Condition not satisfied before deadline")
        finally:
            self.remove_listener(wake)

    def __repr__(self) -> str:
        with self._lock:
            return f"MockTime({self._time_ms})"


# --- Scheduler --------------------------------------------------------------------------------------------


class ScheduledTask:
    """The handle :meth:`Scheduler.schedule` returns (Kafka 3.x: the ``ScheduledFuture``).

    ``cancel()`` stops a task that has not run yet, or stops a periodic task from running again; it returns
    ``False`` when the task had already finished or been cancelled (as ``Future.cancel``).  Shutting a
    :class:`KafkaScheduler` down cancels its waiting tasks.
    """

    __slots__ = ("_cancelled", "_done", "_state_lock", "fun", "name", "period_ms")

    def __init__(self, name: str, fun: Callable[[], object], period_ms: int) -> None:
        self.name = name
        self.fun = fun
        self.period_ms = period_ms
        self._state_lock = threading.Lock()
        self._cancelled = False
        self._done = False

    @property
    def periodic(self) -> bool:
        """True when the task repeats every ``period_ms`` (``period_ms > 0``)."""
        return self.period_ms > 0

    def cancel(self) -> bool:
        with self._state_lock:
            if self._cancelled or self._done:
                return False
            self._cancelled = True
            return True

    def cancelled(self) -> bool:
        return self._cancelled

    def done(self) -> bool:
        """True once a one-off task has run, or once the task is cancelled."""
        return self._done or self._cancelled

    def _finish(self) -> None:
        with self._state_lock:
            self._done = True

    def __repr__(self) -> str:
        state = "cancelled" if self._cancelled else "done" if self._done else "pending"
        return f"{type(self).__name__}({self.name!r}, period_ms={self.period_ms}, {state})"


class Scheduler(abc.ABC):
    """A scheduler of background jobs: periodic ones and delayed one-off ones.

    Kafka: ``org.apache.kafka.server.util.Scheduler`` (0.10.1: ``trait kafka.utils.Scheduler``).
    """

    @abc.abstractmethod
    def startup(self) -> None:
        """Make the scheduler ready to accept tasks (Kafka: ``startup``)."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stop the scheduler.  When this returns no task runs any more, delayed ones included (Kafka:
        ``shutdown``)."""

    @property
    @abc.abstractmethod
    def is_started(self) -> bool:
        """Whether the scheduler has been started and not shut down (Kafka: ``isStarted``)."""

    @abc.abstractmethod
    def schedule(
        self, name: str, fun: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        """Run ``fun`` after ``delay_ms`` ms, and then every ``period_ms`` ms if ``period_ms > 0``.

        Kafka: ``schedule(name, task, delayMs, periodMs)``.  ``name`` appears in the log lines about the
        task.  Returns the task's handle.
        """

    def schedule_once(self, name: str, fun: Callable[[], object], delay_ms: int = 0) -> ScheduledTask:
        """Run ``fun`` once after ``delay_ms`` ms (Kafka 3.x: ``scheduleOnce``)."""
        return self.schedule(name, fun, delay_ms, -1)

    @abc.abstractmethod
    def resize_thread_pool(self, new_size: int) -> None:
        """Change the number of worker threads (Kafka 3.x: ``resizeThreadPool``)."""


class _KafkaTask(ScheduledTask):
    """A task of a :class:`KafkaScheduler`: when it runs next on the monotonic clock, and its FIFO number."""

    __slots__ = ("next_ns", "seq")

    def __init__(self, name: str, fun: Callable[[], object], period_ms: int, next_ns: int, seq: int) -> None:
        super().__init__(name, fun, period_ms)
        self.next_ns = next_ns
        self.seq = seq

    def run(self) -> None:
        """Kafka's wrapping ``Runnable``: run the task, log (never raise) what it throws."""
        logger.debug("Beginning execution of scheduled task '%s'.", self.name)
        try:
            self.fun()
        except Exception:
            logger.exception("Uncaught exception in scheduled task '%s'", self.name)
        finally:
            logger.debug("Completed execution of scheduled task '%s'.", self.name)


class _Executor:
    """One run of a :class:`KafkaScheduler`: Java's ``ScheduledThreadPoolExecutor``, reduced to what Kafka
    uses.

    A heap of tasks ordered by (next run time, submission number) and a pool of worker threads that wait on
    one condition.  Workers are started lazily, one per submitted task until the core size is reached
    (Java's ``ensurePrestart``).  A worker takes the head task once it is due, and hands the wait for the
    next head to another worker before running it (the leader-follower scheme of Java's
    ``DelayedWorkQueue``), so a long task does not hold up a due one while another worker is idle.  A
    periodic task runs at a fixed rate: its next run is its previous scheduled time plus the period, so a
    late run is followed by catch-up runs, never by two runs at once.  ``shut_down`` cancels every waiting
    task (``setContinueExistingPeriodicTasksAfterShutdownPolicy(false)``,
    ``setExecuteExistingDelayedTasksAfterShutdownPolicy(false)``) and lets running ones finish.
    """

    def __init__(self, core_size: int, new_thread: Callable[[Callable[[], None]], threading.Thread]) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[tuple[int, int, _KafkaTask]] = []
        self._workers: set[threading.Thread] = set()
        self._core_size = core_size
        self._new_thread = new_thread
        self._stopped = False

    def submit(self, task: _KafkaTask) -> None:
        with self._cond:
            heapq.heappush(self._queue, (task.next_ns, task.seq, task))
            self._ensure_prestart()
            self._cond.notify()

    def _ensure_prestart(self) -> None:
        workers = len(self._workers)
        if workers < self._core_size or workers == 0:
            self._add_worker()

    def _add_worker(self) -> None:
        thread = self._new_thread(self._work)
        self._workers.add(thread)
        thread.start()

    def set_core_size(self, new_size: int) -> None:
        with self._cond:
            delta = new_size - self._core_size
            self._core_size = new_size
            for _ in range(min(delta, len(self._queue))):
                self._add_worker()
            self._cond.notify_all()  # idle workers above the new size leave

    def contains(self, task: ScheduledTask) -> bool:
        """Whether ``task`` waits in the queue (a cancelled task counts as removed: removeOnCancel)."""
        with self._cond:
            return not task.cancelled() and any(entry[2] is task for entry in self._queue)

    def _take(self) -> _KafkaTask | None:
        with self._cond:
            while True:
                if self._stopped:
                    return None
                if len(self._workers) > max(self._core_size, 1):
                    self._workers.discard(threading.current_thread())  # leave now, so no other one does
                    return None
                if not self._queue:
                    self._cond.wait()
                    continue
                task = self._queue[0][2]
                if task.cancelled():
                    heapq.heappop(self._queue)  # removeOnCancel
                    continue
                delay_ns = task.next_ns - time.monotonic_ns()
                if delay_ns > 0:
                    self._cond.wait(delay_ns / NS_PER_SEC)
                    continue
                heapq.heappop(self._queue)
                if self._queue:
                    self._cond.notify()  # another worker takes over waiting for the next task
                return task

    def _work(self) -> None:
        me = threading.current_thread()
        try:
            while (task := self._take()) is not None:
                task.run()
                with self._cond:
                    if task.periodic and not self._stopped and not task.cancelled():
                        task.next_ns += task.period_ms * NS_PER_MS
                        heapq.heappush(self._queue, (task.next_ns, task.seq, task))
                        self._cond.notify()
                    elif not task.periodic:
                        task._finish()
        finally:
            with self._cond:
                self._workers.discard(me)

    def shut_down(self) -> None:
        with self._cond:
            self._stopped = True
            for _, _, task in self._queue:
                task.cancel()
            self._queue.clear()
            self._cond.notify_all()

    def await_termination(self) -> None:
        """Wait for the running tasks to finish (Java: ``awaitTermination``).  A worker shutting its own
        scheduler down does not wait for itself."""
        with self._cond:
            workers = list(self._workers)
        me = threading.current_thread()
        for worker in workers:
            if worker is not me:
                worker.join()


class KafkaScheduler(Scheduler):
    """A scheduler with a pool of worker threads (Kafka: ``KafkaScheduler``, over a Java thread pool).

    ``threads`` is the size of the pool; the threads are named ``thread_name_prefix`` followed by a number
    that counts up over the scheduler's life, and are daemon threads unless ``daemon`` is false (a
    non-daemon pool keeps the interpreter alive at exit until :meth:`shutdown`).  The arguments are in
    0.10.1's order; 3.x moved ``daemon`` before the prefix.

    A task that raises is logged (``logging``, ERROR, with the traceback) and does not stop the scheduler;
    a periodic one keeps its schedule.  :meth:`shutdown` cancels the tasks not yet running, waits for the
    running ones to finish (Kafka waits up to a day; this waits as long as they take), and the scheduler can
    be started again.  Thread-safe.

    Raises:
        SchedulerStateError: ``startup`` on a started scheduler; ``schedule`` on one not started (see the
            module docstring).
    """

    def __init__(
        self, threads: int, thread_name_prefix: str = "kafka-scheduler-", daemon: bool = True
    ) -> None:
        if threads < 0:
            raise ValueError(f"threads must be at least 0, not {threads}")
        self.threads = threads
        self.thread_name_prefix = thread_name_prefix
        self.daemon = daemon
        self._lock = threading.RLock()  # Kafka's `this synchronized`
        self._executor: _Executor | None = None
        self._thread_ids = itertools.count()
        self._task_seq = itertools.count()

    def _new_thread(self, target: Callable[[], None]) -> threading.Thread:
        name = f"{self.thread_name_prefix}{next(self._thread_ids)}"
        return threading.Thread(target=target, name=name, daemon=self.daemon)

    def startup(self) -> None:
        """Start the pool (Kafka: ``KafkaScheduler.startup``)."""
        logger.debug("Initializing task scheduler.")
        with self._lock:
            if self._executor is not None:
                raise SchedulerStateError("This scheduler has already been started.")
            self._executor = _Executor(self.threads, self._new_thread)

    def shutdown(self) -> None:
        """Cancel the waiting tasks and wait for the running ones (Kafka: ``KafkaScheduler.shutdown``).

        Does nothing on a scheduler that is not started.
        """
        logger.debug("Shutting down task scheduler.")
        with self._lock:
            executor = self._executor
            if executor is not None:
                executor.shut_down()
                self._executor = None
        if executor is not None:
            executor.await_termination()

    def schedule(
        self, name: str, fun: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        """Kafka: ``KafkaScheduler.schedule``.  A negative delay counts as 0, as in Java."""
        logger.debug(
            "Scheduling task %s with initial delay %d ms and period %d ms.", name, delay_ms, period_ms
        )
        with self._lock:
            executor = self._executor
            if executor is None:
                raise SchedulerStateError(
                    f"Kafka scheduler is not running (task '{name}' was not scheduled)."
                )
            next_ns = time.monotonic_ns() + max(delay_ms, 0) * NS_PER_MS
            task = _KafkaTask(name, fun, period_ms, next_ns, next(self._task_seq))
            executor.submit(task)
            return task

    @property
    def is_started(self) -> bool:
        with self._lock:
            return self._executor is not None

    def resize_thread_pool(self, new_size: int) -> None:
        """Change the pool size of a running scheduler (Kafka 3.x: ``resizeThreadPool``)."""
        with self._lock:
            self.threads = new_size
            if self._executor is not None:
                self._executor.set_core_size(new_size)

    # Visible for testing
    def _task_running(self, task: ScheduledTask) -> bool:
        """Whether ``task`` is waiting in the queue for its next run (Kafka 3.x: ``taskRunning``)."""
        executor = self._executor
        return executor is not None and executor.contains(task)

    def __repr__(self) -> str:
        state = "started" if self.is_started else "stopped"
        return (
            f"KafkaScheduler(threads={self.threads}, thread_name_prefix={self.thread_name_prefix!r}, {state})"
        )


class MockTask(ScheduledTask):
    """A task of a :class:`MockScheduler`: its next run on the mock clock (Kafka: ``MockTask``)."""

    __slots__ = ("next_execution", "seq")

    def __init__(
        self, name: str, fun: Callable[[], object], next_execution: int, period_ms: int, seq: int
    ) -> None:
        super().__init__(name, fun, period_ms)
        self.next_execution = next_execution
        self.seq = seq

    def reschedule_if_periodic(self) -> bool:
        """Move a periodic task to its next run and return True; return False for a one-off task (Kafka:
        ``rescheduleIfPeriodic``)."""
        if self.periodic:
            self.next_execution += self.period_ms
            return True
        return False


class MockScheduler(Scheduler):
    """A scheduler that runs tasks only when its clock moves, synchronously, in the thread that moved it.

    Kafka: ``MockScheduler`` (server-common test utils; 0.10.1: ``kafka.utils.MockScheduler``).  Use the one
    a :class:`MockTime` owns::

        time = MockTime()
        time.scheduler.schedule("a task", lambda: print("hello world", time.milliseconds()), delay_ms=1000)
        time.sleep(1001)  # the task runs here

    A task runs when the clock reaches its time exactly (as if running took no time).  :meth:`tick` runs
    every due task, earliest first; a periodic task is put back with its next time and runs again in the
    same tick if that is due too, so sleeping 100 ms runs a 1 ms task 100 times.  ``schedule`` ticks at
    once, so a task with no delay runs inside ``schedule``.  The lock is not held while a task runs, so a task
    may schedule others and another thread may schedule while a task runs.  What a task raises propagates
    to whoever moved the clock (a one-off task is then gone; a periodic one is not rescheduled).

    :meth:`shutdown` runs every remaining task once, due or not, and empties the queue; the scheduler then
    keeps working (``is_started`` is always true, as in 0.10.1), which is how Kafka's ``testRestart`` uses it.

    Differences from Kafka, for determinism and safety: tasks due at the same time run in the order they
    were scheduled (Java's priority queue leaves ties unordered); a period of 0 is a one-off task (Kafka's
    mock treats it as periodic and its ``tick`` would spin forever at one instant); ``cancel`` works
    (Kafka's mock ignores it).
    """

    def __init__(self, time: Time) -> None:
        self.time = time
        self._lock = threading.RLock()
        self._tasks: list[tuple[int, int, MockTask]] = []
        self._seq = itertools.count()

    @property
    def is_started(self) -> bool:
        return True

    def startup(self) -> None:
        """Nothing to start (Kafka: ``MockScheduler.startup``)."""

    def schedule(
        self, name: str, fun: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        """Queue the task at ``now + delay_ms``, then :meth:`tick` (Kafka: ``MockScheduler.schedule``)."""
        task = MockTask(name, fun, self.time.milliseconds() + delay_ms, period_ms, next(self._seq))
        self._add(task)
        self.tick()
        return task

    def shutdown(self) -> None:
        """Run every remaining task once, whatever its time, and forget them (Kafka: ``shutdown``)."""
        while (task := self._poll(None)) is not None:
            task.fun()
            task._finish()

    def resize_thread_pool(self, new_size: int) -> None:
        """No threads to resize."""

    def tick(self) -> None:
        """Run every task due at the clock's current time, earliest first (Kafka: ``MockScheduler.tick``).

        The time is read once, at the start; periodic tasks are rescheduled and run again while due.
        """
        now = self.time.milliseconds()
        while (task := self._poll(now)) is not None:
            task.fun()
            if task.reschedule_if_periodic():
                if not task.cancelled():
                    self._add(task)
            else:
                task._finish()

    def clear(self) -> None:
        """Forget every queued task without running it (Kafka: ``MockScheduler.clear``)."""
        with self._lock:
            self._tasks.clear()

    def pending(self) -> list[MockTask]:
        """The queued tasks, earliest first (for tests)."""
        with self._lock:
            return [entry[2] for entry in sorted(self._tasks) if not entry[2].cancelled()]

    def _poll(self, now: int | None) -> MockTask | None:
        """Remove and return the earliest task if it is due at ``now`` (any task when ``now`` is None)."""
        with self._lock:
            while self._tasks:
                next_execution, _, task = self._tasks[0]
                if task.cancelled():
                    heapq.heappop(self._tasks)
                    continue
                if now is not None and next_execution > now:
                    return None
                heapq.heappop(self._tasks)
                return task
            return None

    def _add(self, task: MockTask) -> None:
        with self._lock:
            heapq.heappush(self._tasks, (task.next_execution, task.seq, task))

    def __repr__(self) -> str:
        with self._lock:
            return f"MockScheduler({len(self._tasks)} tasks, time={self.time!r})"
