"""Tests of kafkalog.scheduler: Kafka's SchedulerTest (0.10.1.1 and 3.8.0) cases plus the port's own.

Mirrors ``core/src/test/scala/unit/kafka/utils/SchedulerTest.scala``: testMockSchedulerNonPeriodicTask,
testMockSchedulerPeriodicTask, testReentrantTaskInMockScheduler, testNonPeriodicTask,
testNonPeriodicTaskWhenPeriodIsZero, testPeriodicTask, testRestart and testMockSchedulerLocking, and
``MockTimeTest``.  The KafkaScheduler tests use real threads with short periods and bounded waits; every test
checks that no scheduler thread outlives it.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import threading
import time
from collections.abc import Iterator

import pytest

from kafkalog.errors import KafkaLogError
from kafkalog.scheduler import (
    NS_PER_MS,
    SYSTEM_TIME,
    KafkaScheduler,
    MockScheduler,
    MockTime,
    ScheduledTask,
    Scheduler,
    SchedulerStateError,
    SystemTime,
    Time,
)

WAIT_S = 5.0  # upper bound for any wait on a real thread; the tests normally finish in milliseconds


class Counter:
    """Kafka's AtomicInteger counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0
        self.reached = threading.Event()
        self.target = 1

    def get_and_increment(self) -> int:
        with self._lock:
            before = self.value
            self.value += 1
            if self.value >= self.target:
                self.reached.set()
            return before

    def get(self) -> int:
        with self._lock:
            return self.value


def _scheduler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(("kafka-scheduler-", "test-pool-"))]


@pytest.fixture(autouse=True)
def no_thread_left_behind() -> Iterator[None]:
    before = set(_scheduler_threads())
    yield
    leftover = [t for t in _scheduler_threads() if t not in before]
    assert leftover == []


@pytest.fixture
def scheduler() -> Iterator[KafkaScheduler]:
    pool = KafkaScheduler(1)
    pool.startup()
    yield pool
    pool.shutdown()


@pytest.fixture
def mock_time() -> MockTime:
    return MockTime()


@pytest.fixture
def counter1() -> Counter:
    return Counter()


@pytest.fixture
def counter2() -> Counter:
    return Counter()


# --- Kafka's SchedulerTest ----------------------------------------------------------------------------------


def test_mock_scheduler_non_periodic_task(mock_time: MockTime, counter1: Counter, counter2: Counter) -> None:
    mock_time.scheduler.schedule_once("test1", counter1.get_and_increment, 1)
    mock_time.scheduler.schedule_once("test2", counter2.get_and_increment, 100)
    assert counter1.get() == 0, "Counter1 should not be incremented prior to task running."
    assert counter2.get() == 0, "Counter2 should not be incremented prior to task running."
    mock_time.sleep(1)
    assert counter1.get() == 1, "Counter1 should be incremented"
    assert counter2.get() == 0, "Counter2 should not be incremented"
    mock_time.sleep(100000)
    assert counter1.get() == 1, "More sleeping should not result in more incrementing on counter1."
    assert counter2.get() == 1, "Counter2 should now be incremented."


def test_mock_scheduler_periodic_task(mock_time: MockTime, counter1: Counter, counter2: Counter) -> None:
    mock_time.scheduler.schedule("test1", counter1.get_and_increment, 1, 1)
    mock_time.scheduler.schedule("test2", counter2.get_and_increment, 100, 100)
    assert counter1.get() == 0, "Counter1 should not be incremented prior to task running."
    assert counter2.get() == 0, "Counter2 should not be incremented prior to task running."
    mock_time.sleep(1)
    assert counter1.get() == 1, "Counter1 should be incremented"
    assert counter2.get() == 0, "Counter2 should not be incremented"
    mock_time.sleep(100)
    assert counter1.get() == 101, "Counter1 should be incremented 101 times"
    assert counter2.get() == 1, "Counter2 should be incremented once"


def test_reentrant_task_in_mock_scheduler(mock_time: MockTime, counter2: Counter) -> None:
    mock_time.scheduler.schedule_once(
        "test1", lambda: mock_time.scheduler.schedule_once("test2", counter2.get_and_increment, 0), 1
    )
    mock_time.sleep(1)
    assert counter2.get() == 1


def test_non_periodic_task(scheduler: KafkaScheduler, counter1: Counter) -> None:
    task = scheduler.schedule_once("test", counter1.get_and_increment)
    assert counter1.reached.wait(WAIT_S)
    time.sleep(0.005)
    assert counter1.get() == 1, "Should only run once"
    assert _wait_until(task.done)
    assert not task.cancelled()
    assert not task.cancel()  # already done


def test_non_periodic_task_when_period_is_zero(scheduler: KafkaScheduler, counter1: Counter) -> None:
    task = scheduler.schedule("test", counter1.get_and_increment, 0, 0)
    assert not task.periodic
    assert counter1.reached.wait(WAIT_S)
    time.sleep(0.005)
    assert counter1.get() == 1, "Should only run once"


def test_periodic_task(scheduler: KafkaScheduler, counter1: Counter) -> None:
    counter1.target = 20
    task = scheduler.schedule("test", counter1.get_and_increment, 0, 5)
    assert task.periodic
    assert counter1.reached.wait(WAIT_S), "Should count to 20"
    assert counter1.get() >= 20
    assert not task.done()


def test_restart(mock_time: MockTime, counter1: Counter) -> None:
    # schedule a task to increment a counter
    mock_time.scheduler.schedule_once("test1", counter1.get_and_increment, 1)
    mock_time.sleep(1)
    assert counter1.get() == 1
    # restart the scheduler
    mock_time.scheduler.shutdown()
    mock_time.scheduler.startup()
    # schedule another task to increment the counter
    mock_time.scheduler.schedule_once("test1", counter1.get_and_increment, 1)
    mock_time.sleep(1)
    assert counter1.get() == 2


def test_mock_scheduler_locking(mock_time: MockTime) -> None:
    """The scheduler's lock is not held while a task runs, so another thread can schedule meanwhile."""
    init = threading.Event()
    completed = threading.Semaphore(0)
    task_latches = [threading.Event(), threading.Event()]

    def scheduled_task(latch: threading.Event) -> None:
        init.set()
        assert latch.wait(WAIT_S), "Timed out waiting for latch"
        completed.release()

    mock_time.scheduler.schedule_once("test1", lambda: scheduled_task(task_latches[0]), 1)
    stop = threading.Event()

    def ticker() -> None:
        while not stop.is_set():
            mock_time.sleep(1)
            time.sleep(0.001)

    tick_thread = threading.Thread(target=ticker, name="test-ticker")
    tick_thread.start()
    try:
        # wait for the first task to run, then schedule the next while the first one is running
        assert init.wait(WAIT_S)
        mock_time.scheduler.schedule_once("test2", lambda: scheduled_task(task_latches[1]), 1)
        for latch in task_latches:
            latch.set()
        assert completed.acquire(timeout=WAIT_S), "Tasks did not complete"
        assert completed.acquire(timeout=WAIT_S), "Tasks did not complete"
    finally:
        stop.set()
        tick_thread.join(WAIT_S)
    assert not tick_thread.is_alive()


# --- KafkaScheduler -----------------------------------------------------------------------------------------


def _wait_until(condition: object, timeout: float = WAIT_S) -> bool:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.001)
    return bool(condition())


def test_schedule_before_startup_is_an_error(counter1: Counter) -> None:
    pool = KafkaScheduler(1)
    assert not pool.is_started
    with pytest.raises(SchedulerStateError, match="Kafka scheduler is not running") as info:
        pool.schedule("early", counter1.get_and_increment)
    assert isinstance(info.value, KafkaLogError)
    assert isinstance(info.value, RuntimeError)
    assert counter1.get() == 0
    assert _scheduler_threads() == []
    pool.shutdown()  # shutting down a scheduler that never started does nothing
    assert not pool.is_started


def test_startup_twice_is_an_error(scheduler: KafkaScheduler) -> None:
    assert scheduler.is_started
    with pytest.raises(SchedulerStateError, match="already been started"):
        scheduler.startup()
    assert scheduler.is_started


def test_schedule_after_shutdown_is_an_error(counter1: Counter) -> None:
    pool = KafkaScheduler(1)
    pool.startup()
    pool.shutdown()
    assert not pool.is_started
    with pytest.raises(SchedulerStateError):
        pool.schedule_once("late", counter1.get_and_increment)
    assert counter1.get() == 0


def test_kafka_scheduler_restart(counter1: Counter) -> None:
    pool = KafkaScheduler(1, thread_name_prefix="test-pool-")
    names: list[str] = []

    def record() -> None:
        names.append(threading.current_thread().name)
        counter1.get_and_increment()

    pool.startup()
    pool.schedule_once("first", record)
    assert counter1.reached.wait(WAIT_S)
    pool.shutdown()
    assert not pool.is_started
    pool.startup()
    counter1.reached.clear()
    counter1.target = 2
    pool.schedule_once("second", record)
    assert counter1.reached.wait(WAIT_S)
    pool.shutdown()
    # the thread number counts on over the scheduler's life, as Kafka's AtomicInteger does
    assert names == ["test-pool-0", "test-pool-1"]


def test_threads_are_named_and_daemon_as_asked() -> None:
    seen: list[tuple[str, bool]] = []
    ran = threading.Event()

    def record() -> None:
        thread = threading.current_thread()
        seen.append((thread.name, thread.daemon))
        ran.set()

    for daemon in (True, False):
        ran.clear()
        pool = KafkaScheduler(1, "test-pool-", daemon=daemon)
        pool.startup()
        pool.schedule_once("who", record)
        assert ran.wait(WAIT_S)
        pool.shutdown()
    assert seen == [("test-pool-0", True), ("test-pool-0", False)]
    assert repr(KafkaScheduler(2, "test-pool-")) == (
        "KafkaScheduler(threads=2, thread_name_prefix='test-pool-', stopped)"
    )


def test_delayed_task_waits_for_its_delay(scheduler: KafkaScheduler) -> None:
    ran_at: list[int] = []
    done = threading.Event()
    def stamp() -> None:
        ran_at.append(time.monotonic_ns())
        done.set()

    start = time.monotonic_ns()
    scheduler.schedule_once("delayed", stamp, 30)
    assert done.wait(WAIT_S)
    assert ran_at[0] - start >= 30 * NS_PER_MS


def test_tasks_run_in_time_order(scheduler: KafkaScheduler) -> None:
    order: list[str] = []
    done = threading.Event()
    def last() -> None:
        order.append("c")
        done.set()

    scheduler.schedule_once("c", last, 60)
    scheduler.schedule_once("b", lambda: order.append("b"), 30)
    scheduler.schedule_once("a", lambda: order.append("a"), 0)
    assert done.wait(WAIT_S)
    assert order == ["a", "b", "c"]


def test_exceptions_are_logged_and_do_not_stop_the_scheduler(
    scheduler: KafkaScheduler, counter1: Counter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="kafkalog.scheduler")
    failures = Counter()
    failures.target = 3

    def boom() -> None:
        failures.get_and_increment()
        raise ValueError("task failed on purpose")

    scheduler.schedule("boom", boom, 0, 2)
    assert failures.reached.wait(WAIT_S), "a failing periodic task keeps its schedule"
    scheduler.schedule_once("after", counter1.get_and_increment)
    assert counter1.reached.wait(WAIT_S)
    errors = [r for r in caplog.records if r.name == "kafkalog.scheduler" and r.levelno == logging.ERROR]
    assert len(errors) >= 3
    assert errors[0].getMessage() == "Uncaught exception in scheduled task 'boom'"
    assert errors[0].exc_info is not None
    assert errors[0].exc_info[0] is ValueError


def test_shutdown_waits_for_the_running_task() -> None:
    pool = KafkaScheduler(1, "test-pool-")
    pool.startup()
    started = threading.Event()
    finished = threading.Event()

    def slow() -> None:
        started.set()
        time.sleep(0.05)
        finished.set()

    pool.schedule_once("slow", slow)
    assert started.wait(WAIT_S)
    pool.shutdown()
    assert finished.is_set()
    assert _scheduler_threads() == []


def test_shutdown_cancels_waiting_tasks(counter1: Counter) -> None:
    pool = KafkaScheduler(2, "test-pool-")
    pool.startup()
    delayed = pool.schedule_once("delayed", counter1.get_and_increment, 60_000)
    periodic = pool.schedule("periodic", counter1.get_and_increment, 60_000, 1000)
    assert pool._task_running(delayed)
    began = time.monotonic()
    pool.shutdown()
    assert time.monotonic() - began < 1.0
    assert delayed.cancelled() and periodic.cancelled()
    assert delayed.done() and periodic.done()
    assert counter1.get() == 0
    assert not pool._task_running(delayed)


def test_cancel_stops_a_periodic_task(scheduler: KafkaScheduler, counter1: Counter) -> None:
    handle: list[ScheduledTask] = []
    cancelled = threading.Event()

    def count_to_three() -> None:
        if counter1.get_and_increment() == 2:
            assert handle[0].cancel()  # from inside its third run: it is not put back afterwards
            cancelled.set()

    handle.append(scheduler.schedule("periodic", count_to_three, 0, 2))
    assert cancelled.wait(WAIT_S)
    task = handle[0]
    assert not task.cancel()
    assert task.cancelled() and task.done()
    time.sleep(0.03)
    assert counter1.get() == 3
    assert not scheduler._task_running(task)


def test_cancel_before_the_first_run(scheduler: KafkaScheduler, counter1: Counter) -> None:
    task = scheduler.schedule_once("never", counter1.get_and_increment, 60_000)
    other = scheduler.schedule_once("later", counter1.get_and_increment, 60_000)
    assert scheduler._task_running(task)
    assert task.cancel()
    assert not scheduler._task_running(task)
    assert scheduler._task_running(other)
    assert counter1.get() == 0
    assert repr(task) == "_KafkaTask('never', period_ms=-1, cancelled)"


def test_threads_run_tasks_side_by_side() -> None:
    pool = KafkaScheduler(2, "test-pool-")
    pool.startup()
    barrier = threading.Barrier(2, timeout=WAIT_S)
    passed = Counter()
    passed.target = 2

    def meet() -> None:
        barrier.wait()
        passed.get_and_increment()

    try:
        pool.schedule_once("left", meet)
        pool.schedule_once("right", meet)
        assert passed.reached.wait(WAIT_S)
    finally:
        pool.shutdown()
    assert not barrier.broken


def test_resize_thread_pool() -> None:
    pool = KafkaScheduler(1, "test-pool-")
    pool.startup()
    barrier = threading.Barrier(2, timeout=WAIT_S)
    passed = Counter()
    passed.target = 2

    def meet() -> None:
        barrier.wait()
        passed.get_and_increment()

    try:
        pool.resize_thread_pool(2)
        assert pool.threads == 2
        pool.schedule_once("left", meet)
        pool.schedule_once("right", meet)
        assert passed.reached.wait(WAIT_S)
        pool.resize_thread_pool(1)
        ran = Counter()
        pool.schedule_once("after shrink", ran.get_and_increment)
        assert ran.reached.wait(WAIT_S)
        assert _wait_until(lambda: len(_scheduler_threads()) == 1)
    finally:
        pool.shutdown()


def test_a_task_may_shut_its_own_scheduler_down(counter1: Counter) -> None:
    pool = KafkaScheduler(1, "test-pool-")
    pool.startup()

    def stop() -> None:
        pool.shutdown()
        counter1.get_and_increment()

    pool.schedule_once("stop", stop)
    assert counter1.reached.wait(WAIT_S)
    assert not pool.is_started
    assert _wait_until(lambda: _scheduler_threads() == [])


def test_kafka_scheduler_is_a_scheduler() -> None:
    assert isinstance(KafkaScheduler(1), Scheduler)
    assert isinstance(MockScheduler(MockTime()), Scheduler)
    with pytest.raises(ValueError, match="threads must be at least 0"):
        KafkaScheduler(-1)


# --- MockScheduler ------------------------------------------------------------------------------------------


def test_mock_tasks_run_in_time_order_and_ties_in_schedule_order(mock_time: MockTime) -> None:
    start = mock_time.milliseconds()
    runs: list[tuple[int, str]] = []

    def log(name: str) -> None:
        runs.append((mock_time.milliseconds() - start, name))

    mock_time.scheduler.schedule("every-2", lambda: log("every-2"), 2, 2)
    mock_time.scheduler.schedule("every-3", lambda: log("every-3"), 3, 3)
    mock_time.scheduler.schedule_once("once-3", lambda: log("once-3"), 3)
    mock_time.sleep(6)
    # every task runs with the clock already at 6: the scheduler reads the time once per tick
    assert [name for _, name in runs] == ["every-2", "every-3", "once-3", "every-2", "every-2", "every-3"]
    assert {at for at, _ in runs} == {6}
    assert [task.name for task in mock_time.scheduler.pending()] == ["every-2", "every-3"]
    assert [task.next_execution - start for task in mock_time.scheduler.pending()] == [8, 9]


def test_mock_task_with_no_delay_runs_inside_schedule(mock_time: MockTime, counter1: Counter) -> None:
    task = mock_time.scheduler.schedule_once("now", counter1.get_and_increment)
    assert counter1.get() == 1
    assert task.done()
    assert mock_time.scheduler.pending() == []


def test_mock_period_zero_is_a_one_off_task(mock_time: MockTime, counter1: Counter) -> None:
    mock_time.scheduler.schedule("zero", counter1.get_and_increment, 1, 0)
    mock_time.sleep(10)
    assert counter1.get() == 1
    assert mock_time.scheduler.pending() == []


def test_mock_shutdown_runs_every_remaining_task_once(mock_time: MockTime, counter1: Counter) -> None:
    mock_time.scheduler.schedule("periodic", counter1.get_and_increment, 1000, 10)
    mock_time.scheduler.schedule_once("later", counter1.get_and_increment, 5000)
    mock_time.scheduler.shutdown()
    assert counter1.get() == 2
    assert mock_time.scheduler.pending() == []
    assert mock_time.scheduler.is_started
    mock_time.sleep(10_000)
    assert counter1.get() == 2


def test_mock_cancel_and_clear(mock_time: MockTime, counter1: Counter) -> None:
    periodic = mock_time.scheduler.schedule("periodic", counter1.get_and_increment, 1, 1)
    mock_time.sleep(3)
    assert counter1.get() == 3
    assert periodic.cancel()
    mock_time.sleep(3)
    assert counter1.get() == 3
    assert periodic.done()
    mock_time.scheduler.schedule_once("cleared", counter1.get_and_increment, 1)
    mock_time.scheduler.clear()
    mock_time.sleep(5)
    assert counter1.get() == 3


def test_mock_task_exception_reaches_the_caller(mock_time: MockTime, counter1: Counter) -> None:
    def boom() -> None:
        raise RuntimeError("boom in a mock task")

    mock_time.scheduler.schedule_once("boom", boom, 1)
    mock_time.scheduler.schedule_once("next", counter1.get_and_increment, 2)
    with pytest.raises(RuntimeError, match="boom in a mock task"):
        mock_time.sleep(1)
    mock_time.sleep(1)
    assert counter1.get() == 1


def test_a_task_that_sleeps_ticks_again(mock_time: MockTime) -> None:
    runs: list[str] = []
    mock_time.scheduler.schedule_once("inner", lambda: runs.append("inner"), 15)
    def outer() -> None:
        runs.append("outer")
        mock_time.sleep(10)

    mock_time.scheduler.schedule_once("outer", outer, 10)
    mock_time.sleep(10)
    assert runs == ["outer", "inner"]


# --- Time, MockTime, SystemTime -----------------------------------------------------------------------------


def test_mock_time_advances_both_clocks() -> None:
    mock = MockTime(0, 1_000, 5_000_000)
    assert mock.milliseconds() == 1_000
    assert mock.nanoseconds() == 5_000_000
    assert mock.hi_res_clock_ms() == mock.hi_res_milliseconds() == 5
    mock.sleep(7)
    assert mock.milliseconds() == 1_007
    assert mock.nanoseconds() == 12_000_000
    assert repr(mock) == "MockTime(1007)"
    assert MockTime(0, 0, -1_500_000).hi_res_clock_ms() == -1  # Java's toMillis truncates toward zero


def test_mock_time_defaults_to_the_real_clocks() -> None:
    before_ms, before_ns = time.time_ns() // NS_PER_MS, time.monotonic_ns()
    mock = MockTime()
    assert before_ms <= mock.milliseconds() <= time.time_ns() // NS_PER_MS
    assert before_ns <= mock.nanoseconds() <= time.monotonic_ns()
    assert mock.auto_tick_ms == 0


def test_mock_time_auto_tick() -> None:
    mock = MockTime(auto_tick_ms=5, current_time_ms=100, current_high_res_time_ns=0)
    assert mock.milliseconds() == 105
    assert mock.milliseconds() == 110
    assert mock.nanoseconds() == 15 * NS_PER_MS


def test_mock_time_auto_tick_with_the_scheduler_does_not_recurse() -> None:
    mock = MockTime(auto_tick_ms=1, current_time_ms=0, current_high_res_time_ns=0)
    seen: list[int] = []
    mock.scheduler.schedule("p", lambda: seen.append(mock.milliseconds()), 3, 3)
    for _ in range(10):
        mock.milliseconds()
    assert seen, "the periodic task ran as the clock ticked by itself"
    assert all(b > a for a, b in itertools.pairwise(seen))
    # schedule() read the clock at 1 (task due at 4) and its tick at 2; the loop read 3..12; the task's own
    # reads, made while the advance is announced, do not move the clock
    assert seen == [4, 7, 10]
    assert mock.milliseconds() == 13


def test_set_current_time_ms() -> None:
    mock = MockTime(0, 1000, 0)
    ran = Counter()
    mock.scheduler.schedule_once("due", ran.get_and_increment, 500)
    mock.set_current_time_ms(1500)
    assert mock.milliseconds() == 1500
    assert mock.nanoseconds() == 1500 * NS_PER_MS
    assert ran.get() == 1
    with pytest.raises(ValueError, match="Setting the time to 1000 while current time 1500 is newer"):
        mock.set_current_time_ms(1000)
    assert mock.milliseconds() == 1500


def test_mock_time_listeners() -> None:
    mock = MockTime(0, 0, 0)
    calls: list[int] = []

    def listener() -> None:
        calls.append(mock.milliseconds())

    mock.add_listener(listener)
    mock.sleep(2)
    mock.set_current_time_ms(10)
    mock.remove_listener(listener)
    mock.sleep(1)
    assert calls == [2, 10]


def test_mock_time_wait_object() -> None:
    mock = MockTime(0, 0, 0)
    monitor = threading.Condition()
    flag: list[bool] = []

    # the condition becomes true in another thread
    def satisfy() -> None:
        with monitor:
            flag.append(True)
            monitor.notify_all()

    setter = threading.Timer(0.01, satisfy)
    setter.start()
    mock.wait_object(monitor, lambda: bool(flag), deadline_ms=100)
    setter.join()
    assert flag == [True]

    # the deadline passes when another thread moves the mock clock
    mover = threading.Timer(0.01, lambda: mock.sleep(200))
    mover.start()
    with pytest.raises(TimeoutError, match="Condition not satisfied before deadline"):
        mock.wait_object(monitor, lambda: False, deadline_ms=100)
    mover.join()
    assert mock.milliseconds() == 200


def test_system_time() -> None:
    assert Time.SYSTEM is SYSTEM_TIME
    assert isinstance(SYSTEM_TIME, SystemTime)
    now_ms = time.time_ns() // NS_PER_MS
    assert abs(SYSTEM_TIME.milliseconds() - now_ms) < 1000
    first = SYSTEM_TIME.nanoseconds()
    SYSTEM_TIME.sleep(2)
    elapsed = SYSTEM_TIME.nanoseconds() - first
    assert elapsed >= 2 * NS_PER_MS
    assert SYSTEM_TIME.hi_res_clock_ms() == pytest.approx(time.monotonic_ns() // NS_PER_MS, abs=50)
    assert repr(SYSTEM_TIME) == "SystemTime()"


def test_system_time_wait_object() -> None:
    monitor = threading.Condition()
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        SYSTEM_TIME.wait_object(monitor, lambda: False, SYSTEM_TIME.milliseconds() + 20)
    assert time.monotonic() - began >= 0.015
    checked: list[bool] = []

    def condition() -> bool:
        checked.append(True)
        return True

    SYSTEM_TIME.wait_object(monitor, condition, 0)  # already true: returns before looking at the deadline
    assert checked == [True]


def test_wait_for_future() -> None:
    done: concurrent.futures.Future[int] = concurrent.futures.Future()
    done.set_result(42)
    assert SYSTEM_TIME.wait_for_future(done, SYSTEM_TIME.nanoseconds() + 10 * NS_PER_MS) == 42
    pending: concurrent.futures.Future[int] = concurrent.futures.Future()
    with pytest.raises(TimeoutError):
        SYSTEM_TIME.wait_for_future(pending, SYSTEM_TIME.nanoseconds() + 10 * NS_PER_MS)
    failed: concurrent.futures.Future[int] = concurrent.futures.Future()
    failed.set_exception(KeyError("gone"))
    with pytest.raises(KeyError, match="gone"):
        SYSTEM_TIME.wait_for_future(failed, SYSTEM_TIME.nanoseconds() + 10 * NS_PER_MS)
    # a mock clock that never moves by itself: the deadline is already past
    with pytest.raises(TimeoutError):
        MockTime(0, 0, 100).wait_for_future(pending, 100)


def test_scheduled_task_handle() -> None:
    task = ScheduledTask("t", lambda: None, 5)
    assert task.periodic
    assert (task.cancelled(), task.done()) == (False, False)
    assert repr(task) == "ScheduledTask('t', period_ms=5, pending)"
    assert task.cancel()
    assert repr(task) == "ScheduledTask('t', period_ms=5, cancelled)"
    assert not ScheduledTask("once", lambda: None, -1).periodic
