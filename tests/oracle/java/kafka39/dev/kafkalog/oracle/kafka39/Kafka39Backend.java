package dev.kafkalog.oracle.kafka39;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogOffsetsListener;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;

import dev.kafkalog.oracle.Backend;
import dev.kafkalog.oracle.MockClock;
import dev.kafkalog.oracle.Op;
import dev.kafkalog.oracle.OracleLog;
import dev.kafkalog.oracle.ProtocolException;
import kafka.log.UnifiedLog;
import kafka.server.BrokerTopicStats;
import scala.Option;

/**
 * Kafka 3.9: the Scala {@code kafka.log.UnifiedLog}, made through its companion's {@code apply} (every default of
 * the Scala signature passed explicitly), and the {@code org.apache.kafka.common.record} builders.
 */
public final class Kafka39Backend implements Backend {
    /** {@code transaction.max.timeout.ms}'s default. */
    static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    /** {@code producer.id.expiration.check.interval.ms}'s default. */
    static final int PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000;

    @Override
    public String kafkaVersion() {
        return AppInfoParser.getVersion();
    }

    /** Kafka 3.9 logs through slf4j to reload4j (log4j 1.2): one stderr appender at WARN. */
    @Override
    public void configureLogging() {
        org.apache.log4j.Logger root = org.apache.log4j.Logger.getRootLogger();
        root.removeAllAppenders();
        root.addAppender(new org.apache.log4j.ConsoleAppender(
            new org.apache.log4j.PatternLayout("[%d{ISO8601}] %p %c: %m%n"), org.apache.log4j.ConsoleAppender.SYSTEM_ERR));
        root.setLevel(org.apache.log4j.Level.WARN);
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
    public byte[] buildMarker(Op.Marker op, long timestampMs) throws ProtocolException {
        if (op.transactionVersion() != null) {
            throw new ProtocolException("op marker: transaction_version is a Kafka 4 field (3.9 writes markers of"
                + " transactions V1 only)");
        }
        EndTransactionMarker marker = new EndTransactionMarker(
            op.commit() ? ControlRecordType.COMMIT : ControlRecordType.ABORT, op.coordinatorEpoch());
        return bytes(MemoryRecords.withEndTransactionMarker(0L, timestampMs, op.leaderEpoch(), op.producerId(),
            op.producerEpoch(), marker));
    }

    @Override
    public OracleLog open(Path dir, Map<String, String> config, MockClock clock, long logStartOffset,
                          long recoveryPoint, boolean lastShutdownClean, int producerIdExpirationMs) {
        Properties props = new Properties();
        props.putAll(config);
        // what the broker checks when a topic is created with these configs
        LogConfig.validate(props);
        LogConfig logConfig = new LogConfig(props, config.keySet());
        BrokerTopicStats stats = new BrokerTopicStats(false);
        UnifiedLog log = UnifiedLog.apply(dir.toFile(), logConfig, logStartOffset, recoveryPoint, clock.scheduler(),
            stats, clock, MAX_TRANSACTION_TIMEOUT_MS, new ProducerStateManagerConfig(producerIdExpirationMs, false),
            PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, new LogDirFailureChannel(1), lastShutdownClean, Option.empty(),
            true, new ConcurrentHashMap<String, Object>(), false, LogOffsetsListener.NO_OP_OFFSETS_LISTENER);
        return new Kafka39Log(log, stats, clock);
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
