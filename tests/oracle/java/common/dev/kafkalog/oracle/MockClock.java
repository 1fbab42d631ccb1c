package dev.kafkalog.oracle;

import java.util.function.Supplier;

import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;

/**
 * The one clock of a scenario: Kafka's {@code Time}, moved only by {@link #sleep} (the {@code advance_time} op),
 * with the {@link DeterministicScheduler} it drives.
 *
 * <p>It behaves as kafkalog's {@code kafkalog.scheduler.MockTime} (and Kafka's server-common test {@code MockTime},
 * which is not in the runtime jars): the wall clock starts at the scenario's {@code time_ms}, the monotonic clock
 * at the same instant in nanoseconds, both move together, and every move runs the tasks that fell due.
 * Single-threaded: the runner serves one request at a time.
 */
public final class MockClock implements Time {
    private static final long NANOS_PER_MS = 1_000_000L;

    private long timeMs;
    private long highResNanos;
    private final DeterministicScheduler scheduler;

    public MockClock(long startMs) {
        this.timeMs = startMs;
        this.highResNanos = Math.multiplyExact(startMs, NANOS_PER_MS);
        this.scheduler = new DeterministicScheduler(this);
    }

    public DeterministicScheduler scheduler() {
        return scheduler;
    }

    @Override
    public long milliseconds() {
        return timeMs;
    }

    @Override
    public long nanoseconds() {
        return highResNanos;
    }

    /** Moves both clocks by {@code ms} (not negative), then runs the tasks now due, earliest first. */
    @Override
    public void sleep(long ms) {
        if (ms < 0) {
            throw new IllegalArgumentException("cannot move the clock back by " + (-ms) + " ms");
        }
        timeMs = Math.addExact(timeMs, ms);
        highResNanos = Math.addExact(highResNanos, Math.multiplyExact(ms, NANOS_PER_MS));
        scheduler.tick();
    }

    /**
     * Nothing else moves this clock while a request is served, so a condition that is false now stays false: the
     * wait ends at once (Kafka's {@code MockTime} would block until another thread slept past the deadline).
     */
    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        if (!condition.get()) {
            throw new TimeoutException("condition not satisfied at " + timeMs + " ms and the mock clock is not moving"
                + " (deadline " + deadlineMs + " ms)");
        }
    }

    @Override
    public String toString() {
        return "MockClock(" + timeMs + " ms)";
    }
}
