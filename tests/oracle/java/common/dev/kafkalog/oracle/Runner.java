package dev.kafkalog.oracle;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The Kafka runner of kafkalog's oracle (issue 29): one JSON request a line on stdin, one JSON answer a line on
 * stdout, applied to Kafka's own {@code UnifiedLog} and {@code Cleaner} through a {@link Backend}.
 *
 * <p>Requests ({@code docs/oracle.rst}, "The Kafka runner", has the whole protocol):
 * <ul>
 *   <li>{@code {"cmd": "version"}} answers {@code {"kafka", "java"}};</li>
 *   <li>{@code {"cmd": "start", "dir", "config", "time_ms"}} creates the log and answers its state;</li>
 *   <li>{@code {"cmd": "op", "op": {...}}} answers {@code {"result", "state"}}, or {@code {"error", "state"}} when
 *       Kafka threw; appends and markers add {@code "input"}, the bytes appended;</li>
 *   <li>{@code {"cmd": "end"}} closes the log and answers its last state.</li>
 * </ul>
 * A request it cannot understand answers {@code {"fatal": why}}; an exception from Kafka never ends the process.
 * Stdout carries the protocol only: {@code System.out} is pointed at stderr before anything else runs.
 */
public final class Runner {
    private static final String PRODUCER_ID_EXPIRATION_MS = "producer.id.expiration.ms";
    private static final int DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000;

    private final Backend backend;
    private final ObjectMapper mapper = new ObjectMapper();
    private final PrintStream log;

    private MockClock clock;
    private OracleLog current;
    private Path dir;
    private Map<String, String> config;
    private int producerIdExpirationMs;
    /** The cleaner checkpoint of the partition: the end offset of the last cleaning (none at first). */
    private Long lastCleanOffset;
    private int opIndex;

    Runner(Backend backend, PrintStream log) {
        this.backend = backend;
        this.log = log;
    }

    /** The program: serves stdin until it ends, then closes the open log, if any. */
    public static void main(Backend backend) throws IOException {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        backend.configureLogging();
        Runner runner = new Runner(backend, System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            protocol.println(runner.serve(line));
            protocol.flush();
        }
        runner.endQuietly();
    }

    /** One request line in, one answer line out. */
    String serve(String line) {
        Map<String, Object> answer;
        try {
            answer = handle(line);
        } catch (ProtocolException e) {
            answer = fatal(e.getMessage());
        } catch (RuntimeException | Error e) {
            // a bug of the runner, not an answer of Kafka's: say so and keep serving
            e.printStackTrace(log);
            answer = fatal("runner failure: " + e);
        }
        try {
            return mapper.writeValueAsString(answer);
        } catch (JsonProcessingException e) {
            return "{\"fatal\": \"cannot write the answer as JSON\"}";
        }
    }

    private Map<String, Object> handle(String line) throws ProtocolException {
        JsonNode message;
        try {
            message = mapper.readTree(line);
        } catch (JsonProcessingException e) {
            throw new ProtocolException("not a JSON line: " + e.getOriginalMessage());
        }
        Fields f = new Fields(message, "request");
        String cmd = f.string("cmd");
        Map<String, Object> answer = switch (cmd) {
            case "version" -> version();
            case "start" -> start(f.string("dir"), f.object("config"), f.integer("time_ms", Long.MIN_VALUE / 1_000_000,
                Long.MAX_VALUE / 1_000_000));
            case "op" -> op(f.raw("op"));
            case "end" -> end();
            default -> throw new ProtocolException("unknown cmd '" + cmd + "' (version, start, op, end)");
        };
        f.done();
        return answer;
    }

    private Map<String, Object> version() {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("kafka", backend.kafkaVersion());
        answer.put("java", System.getProperty("java.version"));
        return answer;
    }

    private Map<String, Object> start(String dirName, Fields configFields, long timeMs) throws ProtocolException {
        if (current != null) {
            throw new ProtocolException("start: the log of " + dir + " is still open (send end first)");
        }
        Path path = Paths.get(dirName);
        if (!path.isAbsolute()) {
            throw new ProtocolException("start: dir must be an absolute path, not " + dirName);
        }
        if (Files.exists(path)) {
            throw new ProtocolException("start: " + dirName + " exists already (the runner creates the partition dir)");
        }
        Map<String, String> topicConfig = new LinkedHashMap<>();
        int expirationMs = DEFAULT_PRODUCER_ID_EXPIRATION_MS;
        for (String name : configFields.names()) {
            JsonNode value = configFields.raw(name);
            if (!value.isTextual()) {
                throw new ProtocolException("start: config '" + name + "' must be a string, not " + Fields.describe(value));
            }
            if (name.equals(PRODUCER_ID_EXPIRATION_MS)) {
                // a broker config: it goes to the producer state manager, not to the topic's LogConfig
                try {
                    expirationMs = Integer.parseInt(value.textValue());
                } catch (NumberFormatException e) {
                    throw new ProtocolException("start: " + PRODUCER_ID_EXPIRATION_MS + " must be an int, not "
                        + value.textValue());
                }
            } else {
                topicConfig.put(name, value.textValue());
            }
        }
        configFields.done();
        dir = path;
        config = topicConfig;
        producerIdExpirationMs = expirationMs;
        clock = new MockClock(timeMs);
        lastCleanOffset = null;
        opIndex = 0;
        try {
            current = backend.open(dir, config, clock, 0L, 0L, true, producerIdExpirationMs);
        } catch (Exception e) {
            return error(e, null);
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("state", state());
        return answer;
    }

    private Map<String, Object> end() {
        Map<String, Object> answer = new LinkedHashMap<>();
        if (current == null) {
            answer.put("state", null);
            return answer;
        }
        OracleLog closing = current;
        current = null;
        clock.scheduler().clear();
        try {
            closing.close();
        } catch (Exception e) {
            return error(e, closing);
        }
        answer.put("state", stateOf(closing));
        return answer;
    }

    private void endQuietly() {
        if (current != null) {
            try {
                current.close();
            } catch (Exception e) {
                log.println("closing the log at the end of input: " + e);
            }
            current = null;
        }
    }

    private Map<String, Object> op(JsonNode node) throws ProtocolException {
        Op op = Op.parse(node);
        if (current == null) {
            throw new ProtocolException("op " + op.name() + ": no log is open (send start first)");
        }
        int index = opIndex++;
        Map<String, Object> answer = new LinkedHashMap<>();
        byte[] input = null;
        try {
            Map<String, Object> result;
            if (op instanceof Op.Append append) {
                long baseOffset = append.baseOffset() != null ? append.baseOffset()
                    : append.origin() == Op.Origin.REPLICATION ? current.logEndOffset() : 0L;
                input = backend.buildAppend(append, baseOffset);
                answer.put("input", Base64.getEncoder().encodeToString(input));
                result = current.append(append, input);
            } else if (op instanceof Op.Marker marker) {
                input = backend.buildMarker(marker, clock.milliseconds());
                answer.put("input", Base64.getEncoder().encodeToString(input));
                result = current.appendMarker(marker, input);
            } else {
                result = apply(op);
            }
            answer.put("result", result);
        } catch (ProtocolException e) {
            throw e;
        } catch (Exception | Error e) {
            Map<String, Object> failed = error(e, current);
            logError(index, op, failed);
            failed.putAll(answer);
            return reorder(failed);
        }
        answer.put("state", current == null ? null : state());
        return reorder(answer);
    }

    private Map<String, Object> apply(Op op) throws Exception {
        Map<String, Object> result = new LinkedHashMap<>();
        if (op instanceof Op.Roll) {
            result.put("activeSegment", current.roll());
        } else if (op instanceof Op.TruncateTo t) {
            boolean belowActiveSegment = t.offset() < current.activeSegmentBaseOffset();
            result.put("truncated", current.truncateTo(t.offset()));
            if (belowActiveSegment) {
                truncateCleanerCheckpoint();
            }
        } else if (op instanceof Op.TruncateFullyAndStartAt t) {
            current.truncateFullyAndStartAt(t.offset());
            truncateCleanerCheckpoint();
        } else if (op instanceof Op.DeleteRecords d) {
            result.put("incremented", current.deleteRecords(d.offset()));
        } else if (op instanceof Op.AdvanceTime a) {
            clock.sleep(a.ms());
            result.put("timeMs", clock.milliseconds());
        } else if (op instanceof Op.UpdateHighWatermark u) {
            result.put("highWatermark", current.updateHighWatermark(u.offset()));
        } else if (op instanceof Op.Retention) {
            result.put("deleted", current.deleteOldSegments());
        } else if (op instanceof Op.Clean) {
            result = clean();
        } else if (op instanceof Op.Flush) {
            result.put("recoveryPoint", current.flush());
        } else if (op instanceof Op.Reopen r) {
            reopen(r);
        } else if (op instanceof Op.Read r) {
            result = current.read(r);
        } else {
            throw new IllegalStateException("no handler for op " + op.name());
        }
        return result;
    }

    /**
     * One cleaning of the log up to its active segment: the range from {@code cleanableOffsets} (checkpointing its
     * start first when the old checkpoint is no longer valid, as {@code grabFilthiestCompactedLog} does), the cleaning
     * when the range holds bytes, then the end offset recorded as {@code doneCleaning} does (the start offset when the
     * cleaning fails).
     */
    private Map<String, Object> clean() throws Exception {
        OracleLog.CleanPlan plan = current.planCleaning(lastCleanOffset, clock.milliseconds());
        if (plan.forcedCheckpoint() != null) {
            lastCleanOffset = plan.forcedCheckpoint();
        }
        if (!plan.cleanable()) {
            return Answers.notCleaned();
        }
        lastCleanOffset = plan.firstDirtyOffset();
        Map<String, Object> result = current.clean(plan);
        lastCleanOffset = (Long) result.get("endOffset");
        return result;
    }

    /**
     * {@code LogManager.truncateTo} and {@code truncateFullyAndStartAt} pull a compacted log's cleaner checkpoint back
     * to the new active segment ({@code LogCleanerManager.maybeTruncateCheckpoint}).
     */
    private void truncateCleanerCheckpoint() {
        long activeBase = current.activeSegmentBaseOffset();
        if (current.compact() && lastCleanOffset != null && lastCleanOffset > activeBase) {
            lastCleanOffset = activeBase;
        }
    }

    /**
     * Clean: {@code close()}, then a new log with the closed one's recovery point and log start offset. Unclean: the
     * log is abandoned as a crash leaves it, the tail damaged if asked, then a new log with the given (or the
     * abandoned log's) recovery point. Either way the tasks the old log left queued are dropped, as a restarted broker
     * starts a new scheduler; the clock and the cleaner checkpoint carry over.
     */
    private void reopen(Op.Reopen op) throws Exception {
        OracleLog old = current;
        long logStartOffset = old.logStartOffset();
        long recoveryPoint;
        if (op.cleanShutdown()) {
            old.close();
            recoveryPoint = old.recoveryPoint();
        } else {
            recoveryPoint = op.recoveryPoint() != null ? op.recoveryPoint() : old.recoveryPoint();
            old.abandon();
            TailDamage.apply(dir, op.truncateBytes(), op.corruptByte());
        }
        current = null;
        clock.scheduler().clear();
        current = backend.open(dir, config, clock, logStartOffset, recoveryPoint, op.cleanShutdown(),
            producerIdExpirationMs);
    }

    private Map<String, Object> state() {
        return stateOf(current);
    }

    private Map<String, Object> stateOf(OracleLog of) {
        Map<String, Object> state = of.state();
        state.put("timeMs", clock.milliseconds());
        return state;
    }

    /** {@code {"error": {"class", "message"}, "state"}}; the state is null when there is no log to describe. */
    private Map<String, Object> error(Throwable thrown, OracleLog of) {
        Throwable e = thrown;
        while (e instanceof InvocationTargetException && e.getCause() != null) {
            e = e.getCause();
        }
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("class", e.getClass().getSimpleName());
        error.put("message", e.getMessage());
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("error", error);
        Map<String, Object> state = null;
        if (of != null) {
            try {
                state = stateOf(of);
            } catch (RuntimeException stateFailure) {
                stateFailure.printStackTrace(log);
            }
        }
        answer.put("state", state);
        return answer;
    }

    private void logError(int index, Op op, Map<String, Object> failed) {
        Object error = failed.get("error");
        log.println("op " + index + " (" + op.name() + ") failed in Kafka: " + error);
    }

    private static Map<String, Object> fatal(String why) {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("fatal", why);
        return answer;
    }

    /** Answers in one key order: input, result or error, state. */
    private static Map<String, Object> reorder(Map<String, Object> answer) {
        Map<String, Object> ordered = new LinkedHashMap<>();
        for (String key : new String[] {"input", "result", "error", "state"}) {
            if (answer.containsKey(key)) {
                ordered.put(key, answer.get(key));
            }
        }
        return ordered;
    }
}
