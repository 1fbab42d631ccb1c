import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.config.ServerLogConfigs;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.CleanerConfig;
import org.apache.kafka.storage.internals.log.CleanerStats;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * {@code clean LOGDIR SEGMENTBYTES WORKDIR WARMUP ROUNDS}: Kafka's {@code Cleaner.clean} of the whole dirty section
 * (offset 0 to the active segment's base) of the compacted log in LOGDIR, a fresh copy each round.
 *
 * <p>Before each round (untimed) LOGDIR is copied under WORKDIR and the copy opened as a broker opens a cleanly shut
 * down log ({@code UnifiedLog.create}, {@code cleanup.policy=compact}, {@code segment.bytes} SEGMENTBYTES: under
 * Kafka 4's 1 MiB floor it goes in as {@code internal.segment.bytes}, as the oracle does it); the clock runs around
 * {@code clean(new LogToClean(log, 0, activeSegmentBaseOffset, false))} alone; the copy is closed and deleted after.
 *
 * <p>The Cleaner is the one a broker's only cleaner thread builds from the default {@code CleanerConfig}
 * ({@code LogCleaner.CleanerThread}): a {@code SkimpyOffsetMap} of {@code dedupeBufferSize / numThreads} (128 MiB)
 * hashing with MD5, read and write buffers of {@code ioBufferSize / numThreads / 2} (256 KiB) that may grow to
 * {@code message.max.bytes}, load factor 0.9, the cleaner's {@code Throttler} at its default (unbounded) rate,
 * {@code Time.SYSTEM}; made once and reused by every round, as a cleaner thread reuses its map.
 *
 * <p>The check is the last round's: the end offset {@code clean} returns, its {@code CleanerStats} (messages and bytes
 * read and written, the map's messages, invalid messages), the cleaned log's size, segment count and log end offset,
 * and what its cleaned segments hold (batches, records, control batches, tombstones, the sum of the records'
 * offsets), read back after the clock stopped.
 */
final class CleanBench {
    /** Kafka 4's floor for {@code segment.bytes}; smaller segments take the testing-only internal setting. */
    private static final int MIN_SEGMENT_BYTES = 1024 * 1024;
    /** {@code LogCleaner}'s throttler checks its rate every 300 ms. */
    private static final long THROTTLE_CHECK_INTERVAL_MS = 300L;

    private CleanBench() {
    }

    static String run(Path logDir, int segmentBytes, Path workDir, int warmup, int rounds) throws Exception {
        LogConfig config = compacted(segmentBytes);
        Cleaner cleaner = brokerCleaner();
        KafkaScheduler scheduler = KafkaLogBench.startScheduler();
        BrokerTopicStats topicStats = new BrokerTopicStats(false);
        List<Double> timed = new ArrayList<>();
        String check = "";
        for (int round = 0; round < warmup + rounds; round++) {
            Path roundDir = workDir.resolve("round-" + round);
            Path copy = roundDir.resolve(logDir.getFileName());
            copyTree(logDir, copy);
            UnifiedLog log = KafkaLogBench.open(copy.toFile(), config, scheduler, topicStats, true);
            LogToClean toClean = new LogToClean(log, 0L, log.activeSegment().baseOffset(), false);
            long start = System.nanoTime();
            Map.Entry<Long, CleanerStats> done = cleaner.clean(toClean);
            long elapsed = System.nanoTime() - start;
            if (round >= warmup) {
                timed.add(elapsed / 1e9);
            }
            if (round == warmup + rounds - 1) {
                check = check(log, done.getKey(), done.getValue());
            }
            log.close();
            KafkaLogBench.deleteTree(roundDir);
        }
        scheduler.shutdown();
        return KafkaLogBench.result(timed, check);
    }

    /** {@code LogCleaner.CleanerThread}'s Cleaner over the default {@code CleanerConfig}, one thread. */
    private static Cleaner brokerCleaner() throws Exception {
        CleanerConfig config = new CleanerConfig(CleanerConfig.LOG_CLEANER_THREADS,
            CleanerConfig.LOG_CLEANER_DEDUPE_BUFFER_SIZE, CleanerConfig.LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR,
            CleanerConfig.LOG_CLEANER_IO_BUFFER_SIZE, ServerLogConfigs.MAX_MESSAGE_BYTES_DEFAULT,
            CleanerConfig.LOG_CLEANER_IO_MAX_BYTES_PER_SECOND, CleanerConfig.LOG_CLEANER_BACKOFF_MS, true);
        Throttler throttler = new Throttler(config.maxIoBytesPerSecond, THROTTLE_CHECK_INTERVAL_MS, "cleaner-io",
            "bytes", Time.SYSTEM);
        int mapBytes = (int) Math.min(config.dedupeBufferSize / config.numThreads, Integer.MAX_VALUE);
        return new Cleaner(0, new SkimpyOffsetMap(mapBytes, config.hashAlgorithm()),
            config.ioBufferSize / config.numThreads / 2, config.maxMessageSize, config.dedupeBufferLoadFactor,
            throttler, Time.SYSTEM, tp -> { });
    }

    private static LogConfig compacted(int segmentBytes) {
        Map<String, Object> props = new HashMap<>();
        props.put("cleanup.policy", "compact");
        props.put(segmentBytes < MIN_SEGMENT_BYTES ? LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG : "segment.bytes",
            segmentBytes);
        return new LogConfig(props);
    }

    private static String check(UnifiedLog log, long endOffset, CleanerStats stats) throws IOException {
        long batches = 0;
        long records = 0;
        long controlBatches = 0;
        long tombstones = 0;
        long offsetSum = 0;
        for (LogSegment segment : log.logSegments(0L, endOffset)) {
            for (RecordBatch batch : segment.log().batches()) {
                batches++;
                if (batch.isControlBatch()) {
                    controlBatches++;
                }
                for (Record record : batch) {
                    records++;
                    offsetSum += record.offset();
                    if (!batch.isControlBatch() && record.hasKey() && !record.hasValue()) {
                        tombstones++;
                    }
                }
            }
        }
        return "\"end_offset\": " + endOffset
            + ", \"messages_read\": " + stats.messagesRead()
            + ", \"bytes_read\": " + stats.bytesRead()
            + ", \"messages_written\": " + stats.messagesWritten()
            + ", \"bytes_written\": " + stats.bytesWritten()
            + ", \"map_messages_read\": " + stats.mapMessagesRead()
            + ", \"invalid_messages_read\": " + stats.invalidMessagesRead()
            + ", \"size\": " + log.size()
            + ", \"segments\": " + log.numberOfSegments()
            + ", \"log_end_offset\": " + log.logEndOffset()
            + ", \"batches\": " + batches
            + ", \"records\": " + records
            + ", \"control_batches\": " + controlBatches
            + ", \"tombstones\": " + tombstones
            + ", \"offset_sum\": " + offsetSum;
    }

    private static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
    }
}
