package dev.kafkalog.oracle.kafka39;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.RecordValidationStats;
import org.apache.kafka.common.record.Records;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.FetchIsolation;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.internals.utils.Throttler;

import dev.kafkalog.oracle.Answers;
import dev.kafkalog.oracle.MockClock;
import dev.kafkalog.oracle.Op;
import dev.kafkalog.oracle.OracleLog;
import dev.kafkalog.oracle.Reflect;
import kafka.log.Cleaner;
import kafka.log.CleanerStats;
import kafka.log.LogCleanerManager$;
import kafka.log.LogToClean;
import kafka.log.OffsetsToClean;
import kafka.log.UnifiedLog;
import kafka.server.BrokerTopicStats;
import kafka.server.RequestLocal;
import scala.Option;
import scala.Tuple2;
import scala.runtime.BoxedUnit;

/** One Kafka 3.9 {@code kafka.log.UnifiedLog} behind the protocol. */
final class Kafka39Log implements OracleLog {
    /** The contract's cleaner: a 4 MiB MD5 offset map, 64 KiB I/O buffers growing to 1 MiB, load factor 0.9. */
    static final int DEDUPE_BUFFER_SIZE = 4 << 20;
    static final int IO_BUFFER_SIZE = 64 << 10;
    static final int MAX_IO_BUFFER_SIZE = 1 << 20;
    static final double DEDUPE_LOAD_FACTOR = 0.9;

    private final UnifiedLog log;
    private final BrokerTopicStats stats;
    private final MockClock clock;

    Kafka39Log(UnifiedLog log, BrokerTopicStats stats, MockClock clock) {
        this.log = log;
        this.stats = stats;
        this.clock = clock;
    }

    @Override
    public Map<String, Object> append(Op.Append op, byte[] batch) {
        MemoryRecords records = Kafka39Backend.records(batch);
        LogAppendInfo info = switch (op.origin()) {
            case CLIENT -> appendAsLeader(records, op.leaderEpoch(), AppendOrigin.CLIENT);
            case COORDINATOR -> appendAsLeader(records, op.leaderEpoch(), AppendOrigin.COORDINATOR);
            case REPLICATION -> log.appendAsFollower(records, op.leaderEpoch());
        };
        return appendInfo(info);
    }

    @Override
    public Map<String, Object> appendMarker(Op.Marker op, byte[] batch) {
        return appendInfo(appendAsLeader(Kafka39Backend.records(batch), op.leaderEpoch(), AppendOrigin.COORDINATOR));
    }

    /** The Scala defaults of {@code appendAsLeader}: the latest production metadata version, no buffer caching. */
    private LogAppendInfo appendAsLeader(MemoryRecords records, int leaderEpoch, AppendOrigin origin) {
        return log.appendAsLeader(records, leaderEpoch, origin, MetadataVersion.latestProduction(),
            RequestLocal.NoCaching(), VerificationGuard.SENTINEL);
    }

    private static Map<String, Object> appendInfo(LogAppendInfo info) {
        RecordValidationStats validation = info.recordValidationStats();
        List<Map<String, Object>> errors = new ArrayList<>();
        for (ProduceResponse.RecordError e : info.recordErrors()) {
            errors.add(Answers.recordError(e.batchIndex, e.message));
        }
        return Answers.appendInfo(info.firstOffset(), info.lastOffset(),
            info.lastLeaderEpoch().isPresent() ? info.lastLeaderEpoch().getAsInt() : null, info.maxTimestamp(),
            info.logAppendTime(), info.logStartOffset(),
            validation == null ? null : validation.temporaryMemoryBytes(),
            validation == null ? null : validation.numRecordsConverted(), info.sourceCompression().name,
            info.validBytes(), Reflect.<Long>field(info, "lastOffsetOfFirstBatch"), errors,
            info.leaderHwChange().name());
    }

    @Override
    public long roll() {
        return log.roll(Option.empty()).baseOffset();
    }

    @Override
    public boolean truncateTo(long offset) {
        return log.truncateTo(offset);
    }

    @Override
    public void truncateFullyAndStartAt(long offset) {
        log.truncateFullyAndStartAt(offset, Option.empty());
    }

    @Override
    public boolean deleteRecords(long offset) {
        return log.maybeIncrementLogStartOffset(offset, LogStartOffsetIncrementReason.ClientRecordDeletion);
    }

    @Override
    public long updateHighWatermark(long offset) {
        return log.updateHighWatermark(offset);
    }

    @Override
    public int deleteOldSegments() {
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
            return Kafka39Backend.bytes(memory);
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

    @Override
    public CleanPlan planCleaning(Long lastCleanOffset, long nowMs) {
        LogCleanerManager$ manager = LogCleanerManager$.MODULE$;
        OffsetsToClean offsets = manager.cleanableOffsets(log,
            lastCleanOffset == null ? Option.empty() : Option.apply(lastCleanOffset), nowMs);
        long compactionDelayMs = manager.kafka$log$LogCleanerManager$$maxCompactionDelay(log,
            offsets.firstDirtyOffset(), nowMs);
        LogToClean toClean = new LogToClean(log.topicPartition(), log, offsets.firstDirtyOffset(),
            offsets.firstUncleanableDirtyOffset(), compactionDelayMs > 0);
        return new CleanPlan(offsets.forceUpdateCheckpoint() ? offsets.firstDirtyOffset() : null,
            toClean.cleanableBytes() > 0, offsets.firstDirtyOffset(), toClean);
    }

    @Override
    public Map<String, Object> clean(CleanPlan plan) throws Exception {
        LogToClean toClean = (LogToClean) plan.toClean();
        Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(DEDUPE_BUFFER_SIZE, "MD5"), IO_BUFFER_SIZE,
            MAX_IO_BUFFER_SIZE, DEDUPE_LOAD_FACTOR,
            new Throttler(Double.MAX_VALUE, 300L, "cleaner-io", "bytes", clock), clock, tp -> BoxedUnit.UNIT);
        Tuple2<Object, CleanerStats> done = cleaner.clean(toClean);
        CleanerStats cleanerStats = done._2();
        return Answers.cleaned((Long) done._1(), toClean.firstDirtyOffset(), toClean.firstUncleanableOffset(),
            cleanerStats.messagesRead(), cleanerStats.bytesRead(), cleanerStats.messagesWritten(),
            cleanerStats.bytesWritten(), cleanerStats.invalidMessagesRead());
    }

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
            producers.add(Answers.producer(e.getKey(), entry.producerEpoch(), entry.lastSeq(), entry.lastDataOffset(),
                entry.currentTxnFirstOffset().isPresent() ? entry.currentTxnFirstOffset().getAsLong() : null));
        }
        List<List<Long>> epochs = new ArrayList<>();
        Option<LeaderEpochFileCache> cache = log.leaderEpochCache();
        if (cache.isDefined()) {
            for (EpochEntry entry : cache.get().epochEntries()) {
                epochs.add(Answers.pair(entry.epoch, entry.startOffset));
            }
        }
        Option<Object> firstUnstable = log.firstUnstableOffset();
        return Answers.state(log.logStartOffset(), log.logEndOffset(), log.highWatermark(), log.lastStableOffset(),
            firstUnstable.isDefined() ? (Long) firstUnstable.get() : null, log.recoveryPoint(), segments, producers,
            epochs);
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

    /** {@code closeHandlers()}: Kafka's close for an offline log dir, which unmaps and closes but writes nothing. */
    @Override
    public void abandon() {
        try {
            log.closeHandlers();
        } finally {
            release();
        }
    }

    private void release() {
        log.removeLogMetrics();
        stats.close();
    }
}
