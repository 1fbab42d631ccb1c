/*
 * kafkalog's benchmark rows, Kafka's side: Kafka's own log classes doing the work a kafkalog row does, on the
 * same data, timed inside this JVM after it has been warmed up.  Compiled and run by kafkalog/bench/kafka_jvm.py
 * against the jars of one Kafka version (4.x: the Java UnifiedLog of the storage module).
 *
 * One command a run; it prints one JSON line on stdout: {"rounds_s": [seconds of each timed round], "check": {...}}
 * ("check" holds what the Python side compares with kafkalog's own result, so a fast wrong answer shows).  Every
 * command runs its work `warmup` times untimed, then `rounds` times timed (System.nanoTime around the work only:
 * the buffers a round appends are copied before its clock starts, and a log is created and closed outside it).
 *
 *   append  BATCHES WORKDIR FLUSH WARMUP ROUNDS   appendAsLeader of every batch of the file BATCHES (record batches
 *                                                 end to end, as producers sent them) into a fresh log, then, with
 *                                                 FLUSH=1, UnifiedLog.flush(true) (the fsync of segment and indexes)
 *   read    LOGDIR MAXBYTES WARMUP ROUNDS         a consumer's reads of the whole partition: UnifiedLog.read from
 *                                                 each next offset (MAXBYTES, the log end as the bound), and every
 *                                                 record of every batch iterated as the consumer's fetcher does
 *                                                 (streamingIterator over a cached BufferSupplier), its offset,
 *                                                 timestamp, key, value and headers read
 *   lookup  INDEX BASEOFFSET TARGETS WARMUP ROUNDS OffsetIndex.lookup of each target (int64 big-endian in TARGETS)
 *                                                 in the index file INDEX, opened read-only
 *   open    ...                                   an unclean open that recovers every segment (OpenBench)
 *   snapshot ...                                  the producer state loaded from a snapshot (SnapshotBench)
 *   dump    ...                                   kafka-dump-log.sh --deep-iteration (DumpBench)
 *   clean   ...                                   Cleaner.clean of a compacted log's dirty section (CleanBench)
 */

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.CloseableIterator;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

public final class KafkaLogBench {
    /** The broker defaults of {@code transaction.max.timeout.ms}, {@code producer.id.expiration.ms} and its check. */
    private static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    private static final int PRODUCER_ID_EXPIRATION_MS = 86_400_000;
    private static final int PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000;

    private KafkaLogBench() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: KafkaLogBench append|read|lookup ...");
        }
        String json = switch (args[0]) {
            case "append" -> append(Path.of(args[1]), Path.of(args[2]), args[3].equals("1"), Integer.parseInt(args[4]),
                Integer.parseInt(args[5]));
            case "read" -> read(Path.of(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                Integer.parseInt(args[4]));
            case "lookup" -> lookup(Path.of(args[1]), Long.parseLong(args[2]), Path.of(args[3]),
                Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            case "open" -> OpenBench.run(Path.of(args[1]), Path.of(args[2]), Long.parseLong(args[3]), Path.of(args[4]),
                Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            case "snapshot" -> SnapshotBench.run(Path.of(args[1]), Long.parseLong(args[2]), Long.parseLong(args[3]),
                Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            case "dump" -> DumpBench.run(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            case "clean" -> CleanBench.run(Path.of(args[1]), Integer.parseInt(args[2]), Path.of(args[3]),
                Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            default -> throw new IllegalArgumentException("unknown command " + args[0]);
        };
        System.out.println(json);
        System.out.flush();
        // The scheduler threads of the logs are daemon threads; nothing is left to wait for.
        System.exit(0);
    }

    /** A started scheduler of one thread, as the logs of a row share it (its tasks are minutes away). */
    static KafkaScheduler startScheduler() {
        KafkaScheduler scheduler = new KafkaScheduler(1, true, "kafka-scheduler-");
        scheduler.startup();
        return scheduler;
    }

    /** The log in {@code dir} with the default topic config: a clean open, or with {@code clean} false an unclean one
     * that recovers every segment (recovery point 0). */
    static UnifiedLog open(File dir, KafkaScheduler scheduler, BrokerTopicStats stats, boolean clean)
            throws IOException {
        return open(dir, new LogConfig(new HashMap<String, Object>()), scheduler, stats, clean);
    }

    static UnifiedLog open(File dir, LogConfig config, KafkaScheduler scheduler, BrokerTopicStats stats,
                           boolean clean) throws IOException {
        return UnifiedLog.create(dir, config, 0L, clean ? Long.MAX_VALUE : 0L, scheduler, stats, Time.SYSTEM,
            MAX_TRANSACTION_TIMEOUT_MS, new ProducerStateManagerConfig(PRODUCER_ID_EXPIRATION_MS, false),
            PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, new LogDirFailureChannel(1), clean, Optional.empty());
    }

    /** The record batches of a file of batches laid end to end, each its own array (copied per round). */
    private static List<byte[]> batchesOf(Path file) throws IOException {
        MemoryRecords all = MemoryRecords.readableRecords(ByteBuffer.wrap(Files.readAllBytes(file)));
        List<byte[]> out = new ArrayList<>();
        for (MutableRecordBatch batch : all.batches()) {
            ByteBuffer one = ByteBuffer.allocate(batch.sizeInBytes());
            batch.writeTo(one);
            out.add(one.array());
        }
        return out;
    }

    private static String append(Path batchesFile, Path workDir, boolean flush, int warmup, int rounds)
            throws Exception {
        List<byte[]> batches = batchesOf(batchesFile);
        KafkaScheduler scheduler = startScheduler();
        BrokerTopicStats stats = new BrokerTopicStats(false);
        List<Double> timed = new ArrayList<>();
        long logEnd = -1;
        long size = -1;
        for (int round = 0; round < warmup + rounds; round++) {
            File dir = workDir.resolve("round-" + round).resolve("bench-0").toFile();
            UnifiedLog log = open(dir, scheduler, stats, true);
            // Kafka assigns the offsets in the request's own buffer: each round appends fresh copies.
            List<MemoryRecords> copies = new ArrayList<>(batches.size());
            for (byte[] batch : batches) {
                copies.add(MemoryRecords.readableRecords(ByteBuffer.wrap(batch.clone())));
            }
            long start = System.nanoTime();
            for (MemoryRecords records : copies) {
                log.appendAsLeader(records, 0);
            }
            if (flush) {
                log.flush(true);
            }
            long elapsed = System.nanoTime() - start;
            if (round >= warmup) {
                timed.add(elapsed / 1e9);
            }
            logEnd = log.logEndOffset();
            size = log.size();
            log.close();
            deleteTree(dir.getParentFile().toPath());
        }
        scheduler.shutdown();
        return result(timed, "\"log_end_offset\": " + logEnd + ", \"size\": " + size);
    }

    private static String read(Path logDir, int maxBytes, int warmup, int rounds) throws Exception {
        KafkaScheduler scheduler = startScheduler();
        BrokerTopicStats stats = new BrokerTopicStats(false);
        UnifiedLog log = open(logDir.toFile(), scheduler, stats, true);
        long end = log.logEndOffset();
        BufferSupplier supplier = BufferSupplier.create();
        List<Double> timed = new ArrayList<>();
        long records = 0;
        long digest = 0;
        for (int round = 0; round < warmup + rounds; round++) {
            long count = 0;
            long sum = 0;
            long start = System.nanoTime();
            long offset = log.logStartOffset();
            while (offset < end) {
                FetchDataInfo fetched = log.read(offset, maxBytes, FetchIsolation.LOG_END, true);
                for (RecordBatch batch : fetched.records.batches()) {
                    try (CloseableIterator<Record> it = batch.streamingIterator(supplier)) {
                        while (it.hasNext()) {
                            Record record = it.next();
                            if (record.offset() < offset) {
                                continue; // before the fetch offset, in the batch it starts in: a consumer skips it
                            }
                            ByteBuffer key = record.key();
                            ByteBuffer value = record.value();
                            sum += record.offset() + record.timestamp() + record.headers().length
                                + (key == null ? -1 : key.remaining()) + (value == null ? -1 : value.remaining());
                            count++;
                        }
                    }
                    offset = batch.nextOffset();
                }
            }
            long elapsed = System.nanoTime() - start;
            if (round >= warmup) {
                timed.add(elapsed / 1e9);
            }
            records = count;
            digest = sum;
        }
        log.close();
        scheduler.shutdown();
        return result(timed, "\"records\": " + records + ", \"digest\": " + digest);
    }

    private static String lookup(Path indexFile, long baseOffset, Path targetsFile, int warmup, int rounds)
            throws Exception {
        ByteBuffer raw = ByteBuffer.wrap(Files.readAllBytes(targetsFile));
        long[] targets = new long[raw.remaining() / 8];
        for (int i = 0; i < targets.length; i++) {
            targets[i] = raw.getLong();
        }
        OffsetIndex index = new OffsetIndex(indexFile.toFile(), baseOffset, -1, false);
        List<Double> timed = new ArrayList<>();
        long digest = 0;
        for (int round = 0; round < warmup + rounds; round++) {
            long sum = 0;
            long start = System.nanoTime();
            for (long target : targets) {
                var found = index.lookup(target);
                sum += found.offset() + found.position();
            }
            long elapsed = System.nanoTime() - start;
            if (round >= warmup) {
                timed.add(elapsed / 1e9);
            }
            digest = sum;
        }
        index.close();
        return result(timed, "\"lookups\": " + targets.length + ", \"digest\": " + digest);
    }

    static String result(List<Double> timed, String check) {
        StringBuilder out = new StringBuilder("{\"rounds_s\": [");
        for (int i = 0; i < timed.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(timed.get(i));
        }
        return out.append("], \"check\": {").append(check).append("}}").toString();
    }

    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
