package dev.kafkalog.oracle.kafka4;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogOffsetsListener;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import dev.kafkalog.oracle.Backend;
import dev.kafkalog.oracle.MockClock;
import dev.kafkalog.oracle.Op;
import dev.kafkalog.oracle.OracleLog;
import dev.kafkalog.oracle.ProtocolException;

/**
 * Kafka 4: the Java {@code org.apache.kafka.storage.internals.log.UnifiedLog}, made through
 * {@code UnifiedLog.create}, and the record builders, which moved to {@code org.apache.kafka.common.record.internal}.
 */
public final class Kafka4Backend implements Backend {
    /** {@code transaction.max.timeout.ms}'s default. */
    static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    /** {@code producer.id.expiration.check.interval.ms}'s default. */
    static final int PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000;
    /** Kafka 4's floor for {@code segment.bytes} (3.9 takes 14). */
    static final int MIN_SEGMENT_BYTES = 1024 * 1024;

    @Override
    public String kafkaVersion() {
        return AppInfoParser.getVersion();
    }

    /** Done by the slf4j binding the runner ships ({@code org.slf4j.impl.StaticLoggerBinder}): nothing to set. */
    @Override
    public void configureLogging() {
    }

    @Override
    public byte[] buildAppend(Op.Append op, long baseOffset) throws ProtocolException {
        Op.Producer p = op.producer();
        long producerId = p == null ? RecordBatch.NO_PRODUCER_ID : p.id();
        short producerEpoch = p == null ? RecordBatch.NO_PRODUCER_EPOCH : p.epoch();
        int baseSequence = p == null ? RecordBatch.NO_SEQUENCE : p.sequence();
        boolean transactional = p != null && p.transactional();
        if (op.magic() < RecordBatch.MAGIC_VALUE_V2 && p != null) {
            throw new ProtocolException("op append: producer fields need magic 2 (a v" + op.magic()
                + " message has none)");
        }
        int leaderEpoch = op.magic() >= RecordBatch.MAGIC_VALUE_V2 ? op.leaderEpoch()
            : RecordBatch.NO_PARTITION_LEADER_EPOCH;
        try {
            MemoryRecordsBuilder builder = MemoryRecords.builder(ByteBuffer.allocate(1024), op.magic(),
                Compression.of(op.compression()).build(), TimestampType.CREATE_TIME, baseOffset,
                RecordBatch.NO_TIMESTAMP, producerId, producerEpoch, baseSequence, transactional, leaderEpoch);
            for (Op.Rec r : op.records()) {
                Header[] headers = r.headers().entrySet().stream()
                    .map(h -> new RecordHeader(h.getKey(), h.getValue().getBytes(StandardCharsets.UTF_8)))
                    .toArray(Header[]::new);
                builder.append(r.timestamp(), utf8(r.key()), utf8(r.value()), headers);
            }
            return bytes(builder.build());
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new ProtocolException("op append: Kafka's MemoryRecordsBuilder refuses the batch: " + e.getMessage(), e);
        }
    }

    @Override
    public byte[] buildMarker(Op.Marker op, long timestampMs) {
        EndTransactionMarker marker = new EndTransactionMarker(
            op.commit() ? ControlRecordType.COMMIT : ControlRecordType.ABORT, op.coordinatorEpoch());
        return bytes(MemoryRecords.withEndTransactionMarker(0L, timestampMs, op.leaderEpoch(), op.producerId(),
            op.producerEpoch(), marker));
    }

    /**
     * A {@code segment.bytes} under Kafka 4's 1 MiB floor goes in as {@code internal.segment.bytes}, the testing-only
     * config that 4.x's own log tests use for small segments, so one scenario runs on both versions.
     */
    @Override
    public OracleLog open(Path dir, Map<String, String> config, MockClock clock, long logStartOffset,
                          long recoveryPoint, boolean lastShutdownClean, int producerIdExpirationMs)
            throws Exception {
        Map<String, String> props = new LinkedHashMap<>(config);
        String segmentBytes = props.get("segment.bytes");
        if (segmentBytes != null && !props.containsKey(LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG)) {
            try {
                if (Integer.parseInt(segmentBytes.trim()) < MIN_SEGMENT_BYTES) {
                    props.remove("segment.bytes");
                    props.put(LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG, segmentBytes);
                }
            } catch (NumberFormatException e) {
                // left as it is: LogConfig says what is wrong with it
            }
        }
        // what the broker checks when a topic is created with these configs
        LogConfig.validate(props);
        LogConfig logConfig = new LogConfig(props, props.keySet());
        BrokerTopicStats stats = new BrokerTopicStats(false);
        UnifiedLog log = UnifiedLog.create(dir.toFile(), logConfig, logStartOffset, recoveryPoint, clock.scheduler(),
            stats, clock, MAX_TRANSACTION_TIMEOUT_MS, new ProducerStateManagerConfig(producerIdExpirationMs, false),
            PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, new LogDirFailureChannel(1), lastShutdownClean, Optional.empty(),
            new ConcurrentHashMap<String, Integer>(), false, LogOffsetsListener.NO_OP_OFFSETS_LISTENER);
        return new Kafka4Log(log, stats, clock);
    }

    static byte[] bytes(MemoryRecords records) {
        ByteBuffer buffer = records.buffer();
        byte[] out = new byte[buffer.remaining()];
        buffer.get(out);
        return out;
    }

    static MemoryRecords records(byte[] batch) {
        return MemoryRecords.readableRecords(ByteBuffer.wrap(batch));
    }

    private static byte[] utf8(String text) {
        return text == null ? null : text.getBytes(StandardCharsets.UTF_8);
    }
}
