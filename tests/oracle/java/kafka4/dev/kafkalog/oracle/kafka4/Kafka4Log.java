package dev.kafkalog.oracle.kafka4;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.BatchMetadata;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.CleanerStats;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogCleanerManager;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.RecordValidationStats;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import dev.kafkalog.oracle.Answers;
import dev.kafkalog.oracle.MockClock;
import dev.kafkalog.oracle.Op;
import dev.kafkalog.oracle.OracleLog;
import dev.kafkalog.oracle.Reflect;

/** One Kafka 4 {@code org.apache.kafka.storage.internals.log.UnifiedLog} behind the protocol. */
final class Kafka4Log implements OracleLog {
    /** The contract's cleaner: a 4 MiB MD5 offset map, 64 KiB I/O buffers growing to 1 MiB, load factor 0.9. */
    static final int DEDUPE_BUFFER_SIZE = 4 << 20;
    static final int IO_BUFFER_SIZE = 64 << 10;
    static final int MAX_IO_BUFFER_SIZE = 1 << 20;
    static final double DEDUPE_LOAD_FACTOR = 0.9;
    /** Transactions V1: the marker rules of 3.9 (and kafkalog). */
    static final short DEFAULT_TRANSACTION_VERSION = 1;

    private final UnifiedLog log;
    private final BrokerTopicStats stats;
    private final MockClock clock;

    Kafka4Log(UnifiedLog log, BrokerTopicStats stats, MockClock clock) {
        this.log = log;
        this.stats = stats;
        this.clock = clock;
    }

    /**
     * {@code appendAsLeader(records, leaderEpoch, origin)}: no buffer caching, no verification guard, transaction
     * version -1 (unknown: the marker rules of transactions V1); every leader append converts to magic 2.
     */
    @Override
    public Map<String, Object> append(Op.Append op, byte[] batch) throws Exception {
        MemoryRecords records = Kafka4Backend.records(batch);
        LogAppendInfo info = switch (op.origin()) {
            case CLIENT -> log.appendAsLeader(records, op.leaderEpoch(), AppendOrigin.CLIENT);
            case COORDINATOR -> log.appendAsLeader(records, op.leaderEpoch(), AppendOrigin.COORDINATOR);
            case REPLICATION -> log.appendAsFollower(records, op.leaderEpoch());
        };
        return appendInfo(info);
    }

    /**
     * 4.x refuses a coordinator's marker without a transaction version; the default is transactions V1 (1), whose
     * epoch rule (a marker's epoch may not be below the producer's) is 3.9's and kafkalog's.  Transactions V2 (2),
     * which 4.x clusters use by default, wants the marker's epoch above the producer's.
     */
    @Override
    public Map<String, Object> appendMarker(Op.Marker op, byte[] batch) throws Exception {
        short transactionVersion = op.transactionVersion() == null ? DEFAULT_TRANSACTION_VERSION
            : op.transactionVersion();
        return appendInfo(log.appendAsLeader(Kafka4Backend.records(batch), op.leaderEpoch(), AppendOrigin.COORDINATOR,
            RequestLocal.noCaching(), VerificationGuard.SENTINEL, transactionVersion));
    }

    private static Map<String, Object> appendInfo(LogAppendInfo info) {
        RecordValidationStats validation = info.recordValidationStats();
        List<Map<String, Object>> errors = new ArrayList<>();
        for (ProduceResponse.RecordError e : info.recordErrors()) {
            errors.add(Answers.recordError(e.batchIndex, e.message));
        }
        return Answers.appendInfo(info.firstOffset(), info.lastOffset(), info.lastLeaderEpoch().orElse(null),
            info.maxTimestamp(), info.logAppendTime(), info.logStartOffset(),
            validation == null ? null : validation.temporaryMemoryBytes(),
            validation == null ? null : validation.numRecordsConverted(), info.sourceCompression().name,
            info.validBytes(), Reflect.<Long>field(info, "lastOffsetOfFirstBatch"), errors,
            info.leaderHwChange().name());
    }

    @Override
    public long roll() throws Exception {
        return log.roll().baseOffset();
    }

    @Override
    public boolean truncateTo(long offset) {
        return log.truncateTo(offset);
    }

    @Override
    public void truncateFullyAndStartAt(long offset) {
        log.truncateFullyAndStartAt(offset, Optional.empty());
    }

    @Override
    public boolean deleteRecords(long offset) {
        return log.maybeIncrementLogStartOffset(offset, LogStartOffsetIncrementReason.ClientRecordDeletion);
    }

    @Override
    public long updateHighWatermark(long offset) throws Exception {
        return log.updateHighWatermark(offset);
    }

    @Override
    public int deleteOldSegments() throws Exception {
        return log.deleteOldSegments();
    }

    @Override
    public long flush() {
        log.flushUptoOffsetExclusive(log.logEndOffset());
        return log.recoveryPoint();
    }

    @Override
    public Map<String, Object> read(Op.Read op) throws Exception {
        FetchIsolation isolation = switch (op.isolation()) {
            case LOG_END -> FetchIsolation.LOG_END;
            case HIGH_WATERMARK -> FetchIsolation.HIGH_WATERMARK;
            case TXN_COMMITTED -> FetchIsolation.TXN_COMMITTED;
        };
        FetchDataInfo fetched = log.read(op.offset(), op.maxBytes(), isolation, op.minOneMessage());
        List<Map<String, Object>> aborted = null;
        if (fetched.abortedTransactions.isPresent()) {
            aborted = new ArrayList<>();
            for (FetchResponseData.AbortedTransaction txn : fetched.abortedTransactions.get()) {
                aborted.add(Answers.abortedTransaction(txn.producerId(), txn.firstOffset()));
            }
        }
        return Answers.read(fetched.fetchOffsetMetadata.messageOffset, fetched.fetchOffsetMetadata.segmentBaseOffset,
            fetched.fetchOffsetMetadata.relativePositionInSegment, bytes(fetched.records),
            fetched.firstEntryIncomplete, aborted);
    }

    private static byte[] bytes(Records records) throws Exception {
        if (records instanceof MemoryRecords memory) {
            return Kafka4Backend.bytes(memory);
        }
        if (records instanceof FileRecords file) {
            ByteBuffer buffer = ByteBuffer.allocate(file.sizeInBytes());
            file.readInto(buffer, 0);  // reads the whole slice and flips the buffer
            byte[] out = new byte[buffer.remaining()];
            buffer.get(out);
            return out;
        }
        throw new IllegalStateException("a read returned " + records.getClass().getName());
    }

    /**
     * {@code LogCleanerManager.cleanableOffsets} and {@code maxCompactionDelay} are package-private in 4.x: called
     * through reflection, as they are.
     */
    @Override
    public CleanPlan planCleaning(Long lastCleanOffset, long nowMs) throws Exception {
        Object offsets = Reflect.call(LogCleanerManager.class, null, "cleanableOffsets",
            new Class<?>[] {UnifiedLog.class, Optional.class, long.class}, log, Optional.ofNullable(lastCleanOffset),
            nowMs);
        Class<?> offsetsClass = offsets.getClass();
        long firstDirtyOffset = Reflect.<Long>call(offsetsClass, offsets, "firstDirtyOffset", new Class<?>[0]);
        long firstUncleanableDirtyOffset = Reflect.<Long>call(offsetsClass, offsets, "firstUncleanableDirtyOffset",
            new Class<?>[0]);
        boolean forceUpdateCheckpoint = Reflect.<Boolean>call(offsetsClass, offsets, "forceUpdateCheckpoint",
            new Class<?>[0]);
        long compactionDelayMs = Reflect.<Long>call(LogCleanerManager.class, null, "maxCompactionDelay",
            new Class<?>[] {UnifiedLog.class, long.class, long.class}, log, firstDirtyOffset, nowMs);
        LogToClean toClean = new LogToClean(log, firstDirtyOffset, firstUncleanableDirtyOffset, compactionDelayMs > 0);
        return new CleanPlan(forceUpdateCheckpoint ? firstDirtyOffset : null, toClean.cleanableBytes() > 0,
            firstDirtyOffset, toClean);
    }

    @Override
    public Map<String, Object> clean(CleanPlan plan) throws Exception {
        LogToClean toClean = (LogToClean) plan.toClean();
        Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(DEDUPE_BUFFER_SIZE, "MD5"), IO_BUFFER_SIZE,
            MAX_IO_BUFFER_SIZE, DEDUPE_LOAD_FACTOR,
            new Throttler(Double.MAX_VALUE, 300L, "cleaner-io", "bytes", clock), clock, tp -> { });
        Map.Entry<Long, CleanerStats> done = cleaner.clean(toClean);
        CleanerStats cleanerStats = done.getValue();
        return Answers.cleaned(done.getKey(), toClean.firstDirtyOffset(), toClean.firstUncleanableOffset(),
            cleanerStats.messagesRead(), cleanerStats.bytesRead(), cleanerStats.messagesWritten(),
            cleanerStats.bytesWritten(), cleanerStats.invalidMessagesRead());
    }

    /** {@code lastSeq()} is package-private in 4.x: it is the last retained batch's sequence, -1 with none. */
    @Override
    public Map<String, Object> state() {
        List<List<Long>> segments = new ArrayList<>();
        for (LogSegment segment : log.logSegments()) {
            segments.add(Answers.pair(segment.baseOffset(), segment.size()));
        }
        List<List<Object>> producers = new ArrayList<>();
        for (Map.Entry<Long, ProducerStateEntry> e : new TreeMap<>(log.producerStateManager().activeProducers())
                .entrySet()) {
            ProducerStateEntry entry = e.getValue();
            int lastSeq = -1;
            for (BatchMetadata batch : entry.batchMetadata()) {
                lastSeq = batch.lastSeq();
            }
            producers.add(Answers.producer(e.getKey(), entry.producerEpoch(), lastSeq, entry.lastDataOffset(),
                entry.currentTxnFirstOffset().isPresent() ? entry.currentTxnFirstOffset().getAsLong() : null));
        }
        List<List<Long>> epochs = new ArrayList<>();
        LeaderEpochFileCache cache = log.leaderEpochCache();
        for (EpochEntry entry : cache.epochEntries()) {
            epochs.add(Answers.pair(entry.epoch(), entry.startOffset()));
        }
        return Answers.state(log.logStartOffset(), log.logEndOffset(), log.highWatermark(), log.lastStableOffset(),
            log.firstUnstableOffset().orElse(null), log.recoveryPoint(), segments, producers, epochs);
    }

    @Override
    public long logStartOffset() {
        return log.logStartOffset();
    }

    @Override
    public long logEndOffset() {
        return log.logEndOffset();
    }

    @Override
    public long recoveryPoint() {
        return log.recoveryPoint();
    }

    @Override
    public long activeSegmentBaseOffset() {
        return log.activeSegment().baseOffset();
    }

    @Override
    public boolean compact() {
        return log.config().compact;
    }

    @Override
    public void close() {
        try {
            log.close();
        } finally {
            release();
        }
    }

    /**
     * {@code closeQuietly()}: 4.x's close for a log being given up, which unmaps the indexes and closes the files but
     * writes nothing (no producer snapshot, no last time-index entry, no index trim), as 3.9's {@code closeHandlers()}.
     */
    @Override
    public void abandon() {
        try {
            log.closeQuietly();
        } finally {
            release();
        }
    }

    private void release() {
        log.removeLogMetrics();
        stats.close();
    }
}
