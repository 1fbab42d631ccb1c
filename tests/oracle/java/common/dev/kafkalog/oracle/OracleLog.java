package dev.kafkalog.oracle;

import java.util.Map;

/**
 * One open Kafka log behind the protocol.  Every method calls the Kafka method the contract names and returns its
 * answer in the contract's shape (built by {@link Answers}); what Kafka throws propagates unchanged.
 */
public interface OracleLog {
    /** {@code appendAsLeader} (client, coordinator) or {@code appendAsFollower} (replication); the append info. */
    Map<String, Object> append(Op.Append op, byte[] batch) throws Exception;

    /** {@code appendAsLeader(marker, leaderEpoch, COORDINATOR)}; the append info. */
    Map<String, Object> appendMarker(Op.Marker op, byte[] batch) throws Exception;

    /** {@code roll()}; the new active segment's base offset. */
    long roll() throws Exception;

    boolean truncateTo(long offset) throws Exception;

    void truncateFullyAndStartAt(long offset) throws Exception;

    /** {@code maybeIncrementLogStartOffset(offset, ClientRecordDeletion)}. */
    boolean deleteRecords(long offset) throws Exception;

    long updateHighWatermark(long offset) throws Exception;

    /** {@code deleteOldSegments()}. */
    int deleteOldSegments() throws Exception;

    /** {@code flushUptoOffsetExclusive(logEndOffset)}; the recovery point after it. */
    long flush() throws Exception;

    /** {@code read(offset, maxBytes, isolation, minOneMessage)}. */
    Map<String, Object> read(Op.Read op) throws Exception;

    /**
     * The range one cleaning of the log would take now: {@code LogCleanerManager.cleanableOffsets} from the last clean
     * offset, and the {@code LogToClean} over it.  The log is cleanable when the range holds bytes: the contract's
     * {@code clean} is one cleaning of the log up to its active segment (issue 29), so the filters of the cleaner
     * thread's {@code grabFilthiestCompactedLog} (the compact policy, {@code min.cleanable.dirty.ratio}) are not
     * applied.
     */
    CleanPlan planCleaning(Long lastCleanOffset, long nowMs) throws Exception;

    /** {@code Cleaner.clean(LogToClean)} of a plan that is {@linkplain CleanPlan#cleanable cleanable}. */
    Map<String, Object> clean(CleanPlan plan) throws Exception;

    /** The contract's state, but for {@code timeMs} (the runner's clock adds it). */
    Map<String, Object> state();

    long logStartOffset();

    long logEndOffset();

    long recoveryPoint();

    long activeSegmentBaseOffset();

    /** {@code cleanup.policy} includes {@code compact}. */
    boolean compact();

    /** {@code close()}. */
    void close() throws Exception;

    /**
     * Leaves the log as a crash would: no close, no final snapshot, no index trim; only handles and metrics that
     * write nothing are released.
     */
    void abandon();

    /**
     * The cleaner's choice for the log.
     *
     * @param forcedCheckpoint the offset the cleaner checkpoints before cleaning when the last one is no longer valid
     *     ({@code OffsetsToClean.forceUpdateCheckpoint}), else null
     * @param cleanable the range holds bytes to clean
     * @param firstDirtyOffset where cleaning starts (what the cleaner checkpoints if the cleaning fails)
     * @param toClean the version's {@code LogToClean}
     */
    record CleanPlan(Long forcedCheckpoint, boolean cleanable, long firstDirtyOffset, Object toClean) { }
}
