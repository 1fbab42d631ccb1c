package dev.kafkalog.oracle;

import java.util.PriorityQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.server.util.Scheduler;

/**
 * Kafka's {@code Scheduler} driven by a {@link MockClock}: nothing runs until the clock moves; then every task due
 * at the new time runs at once, in the thread that moved it, earliest first.
 *
 * <p>The rules are those of kafkalog's {@code kafkalog.scheduler.MockScheduler}, so that both sides of the oracle
 * run the same tasks at the same instants:
 * <ul>
 *   <li>a task is due when the clock reaches its time exactly; {@link #schedule} ticks at once, so a task with no
 *       delay (the {@code flush-log} task of a roll) runs inside the call that scheduled it;</li>
 *   <li>a tick reads the clock once; a periodic task is put back at its next time and runs again in the same tick
 *       while that is still due (sleeping 30 minutes runs a 10-minute check three times, all at the final time);</li>
 *   <li>tasks due at the same time run in the order they were scheduled (Kafka's test {@code MockScheduler} leaves
 *       ties to its priority queue); a period of 0 or less is a one-off task; {@code cancel} works (Kafka's test
 *       scheduler ignores it, so a closed log's expiration check would go on running);</li>
 *   <li>what a task throws reaches whoever moved the clock; a one-off task is then gone, a periodic one is not put
 *       back.</li>
 * </ul>
 */
public final class DeterministicScheduler implements Scheduler {
    private final MockClock clock;
    private final PriorityQueue<Task> queue = new PriorityQueue<>();
    private long nextSeq;

    DeterministicScheduler(MockClock clock) {
        this.clock = clock;
    }

    @Override
    public void startup() {
    }

    /** Runs every remaining task once, due or not, as Kafka's {@code MockScheduler.shutdown} does. */
    @Override
    public void shutdown() {
        Task task;
        while ((task = poll(Long.MAX_VALUE)) != null) {
            task.done = true;
            task.runnable.run();
        }
    }

    @Override
    public ScheduledFuture<?> schedule(String name, Runnable runnable, long delayMs, long periodMs) {
        Task task = new Task(name, runnable, Math.addExact(clock.milliseconds(), delayMs), periodMs, nextSeq++);
        queue.add(task);
        tick();
        return task;
    }

    @Override
    public void resizeThreadPool(int newSize) {
    }

    /** Runs the tasks due at the clock's current time, earliest first. */
    public void tick() {
        long now = clock.milliseconds();
        Task task;
        while ((task = poll(now)) != null) {
            if (task.periodMs <= 0) {
                task.done = true;
            }
            task.runnable.run();
            if (task.periodMs > 0 && !task.cancelled) {
                task.nextMs = Math.addExact(task.nextMs, task.periodMs);
                queue.add(task);
            }
        }
    }

    /**
     * Forgets every queued task without running it: what a broker restart does to the delayed deletions and the
     * periodic checks of the logs it had open (Kafka's {@code KafkaScheduler.shutdown} drops delayed tasks).
     */
    public void clear() {
        for (Task task : queue) {
            task.cancelled = true;
        }
        queue.clear();
    }

    /** The queued tasks' names and times, earliest first (for the runner's own tests and for diagnostics). */
    public String describe() {
        StringBuilder out = new StringBuilder();
        queue.stream().sorted().forEach(t -> out.append(t.name).append('@').append(t.nextMs).append(' '));
        return out.toString().trim();
    }

    private Task poll(long now) {
        while (!queue.isEmpty()) {
            Task head = queue.peek();
            if (head.cancelled) {
                queue.poll();
                continue;
            }
            if (head.nextMs > now) {
                return null;
            }
            return queue.poll();
        }
        return null;
    }

    private final class Task implements ScheduledFuture<Void> {
        final String name;
        final Runnable runnable;
        final long periodMs;
        final long seq;
        long nextMs;
        boolean cancelled;
        boolean done;

        Task(String name, Runnable runnable, long nextMs, long periodMs, long seq) {
            this.name = name;
            this.runnable = runnable;
            this.nextMs = nextMs;
            this.periodMs = periodMs;
            this.seq = seq;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(nextMs - clock.milliseconds(), TimeUnit.MILLISECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            Task that = (Task) other;
            int byTime = Long.compare(nextMs, that.nextMs);
            return byTime != 0 ? byTime : Long.compare(seq, that.seq);
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            if (cancelled || done) {
                return false;
            }
            cancelled = true;
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return done || cancelled;
        }

        @Override
        public Void get() {
            return null;
        }

        @Override
        public Void get(long timeout, TimeUnit unit) {
            return null;
        }
    }
}
