package dev.kafkalog.oracle;

import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The shapes of the protocol's answers, in one place, so both versions name every key the same and in the same
 * order: the state, an append's {@code LogAppendInfo}, a read's {@code FetchDataInfo}, a cleaning's result.
 */
public final class Answers {
    private Answers() {
    }

    /** The contract's state of a log (without {@code timeMs}, which the runner's clock adds). */
    public static Map<String, Object> state(long logStartOffset, long logEndOffset, long highWatermark,
                                            long lastStableOffset, Long firstUnstableOffset, long recoveryPoint,
                                            List<List<Long>> segments, List<List<Object>> activeProducers,
                                            List<List<Long>> leaderEpochs) {
        Map<String, Object> state = new LinkedHashMap<>();
        state.put("logStartOffset", logStartOffset);
        state.put("logEndOffset", logEndOffset);
        state.put("highWatermark", highWatermark);
        state.put("lastStableOffset", lastStableOffset);
        state.put("firstUnstableOffset", firstUnstableOffset);
        state.put("recoveryPoint", recoveryPoint);
        state.put("segments", segments);
        state.put("activeProducers", activeProducers);
        state.put("leaderEpochs", leaderEpochs);
        return state;
    }

    /** One {@code activeProducers} row: {@code [producerId, producerEpoch, lastSequence, lastOffset, txnFirst]}. */
    public static List<Object> producer(long producerId, short producerEpoch, int lastSequence, long lastOffset,
                                        Long currentTxnFirstOffset) {
        List<Object> row = new ArrayList<>(5);
        row.add(producerId);
        row.add((long) producerEpoch);
        row.add((long) lastSequence);
        row.add(lastOffset);
        row.add(currentTxnFirstOffset);
        return row;
    }

    public static List<Long> pair(long a, long b) {
        return List.of(a, b);
    }

    /**
     * Every field of Kafka's {@code LogAppendInfo} (3.9.2 and 4.4.0 have the same ones: neither has
     * {@code shallowOffsetOfMaxTimestamp}, {@code errorMessage} nor {@code shallowCount}, so those keys are left
     * out).  The conversion time is reported as 0: it is measured on the wall clock.
     */
    public static Map<String, Object> appendInfo(long firstOffset, long lastOffset, Integer lastLeaderEpoch,
                                                 long maxTimestamp, long logAppendTime, long logStartOffset,
                                                 Long temporaryMemoryBytes, Integer numRecordsConverted,
                                                 String sourceCompression, int validBytes, long lastOffsetOfFirstBatch,
                                                 List<Map<String, Object>> recordErrors, String leaderHwChange) {
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("firstOffset", firstOffset);
        info.put("lastOffset", lastOffset);
        info.put("lastLeaderEpoch", lastLeaderEpoch);
        info.put("maxTimestamp", maxTimestamp);
        info.put("logAppendTime", logAppendTime);
        info.put("logStartOffset", logStartOffset);
        if (temporaryMemoryBytes == null) {
            info.put("recordValidationStats", null);
        } else {
            Map<String, Object> stats = new LinkedHashMap<>();
            stats.put("temporaryMemoryBytes", temporaryMemoryBytes);
            stats.put("numRecordsConverted", numRecordsConverted);
            stats.put("conversionTimeNanos", 0L);
            info.put("recordValidationStats", stats);
        }
        info.put("sourceCompression", sourceCompression);
        info.put("validBytes", validBytes);
        info.put("lastOffsetOfFirstBatch", lastOffsetOfFirstBatch);
        info.put("recordErrors", recordErrors);
        info.put("leaderHwChange", leaderHwChange);
        return info;
    }

    public static Map<String, Object> recordError(int batchIndex, String message) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("batchIndex", batchIndex);
        error.put("message", message);
        return error;
    }

    /** A read's {@code FetchDataInfo}; {@code abortedTransactions} is null when Kafka gave none (not read_committed). */
    public static Map<String, Object> read(long messageOffset, long segmentBaseOffset, int relativePositionInSegment,
                                           byte[] records, boolean firstEntryIncomplete,
                                           List<Map<String, Object>> abortedTransactions) {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("messageOffset", messageOffset);
        metadata.put("segmentBaseOffset", segmentBaseOffset);
        metadata.put("relativePositionInSegment", relativePositionInSegment);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("fetchOffsetMetadata", metadata);
        result.put("records", Base64.getEncoder().encodeToString(records));
        result.put("firstEntryIncomplete", firstEntryIncomplete);
        result.put("abortedTransactions", abortedTransactions);
        return result;
    }

    public static Map<String, Object> abortedTransaction(long producerId, long firstOffset) {
        Map<String, Object> txn = new LinkedHashMap<>();
        txn.put("producerId", producerId);
        txn.put("firstOffset", firstOffset);
        return txn;
    }

    /** A cleaning's end offset and its {@code CleanerStats} counters. */
    public static Map<String, Object> cleaned(long endOffset, long firstDirtyOffset, long firstUncleanableOffset,
                                              long messagesRead, long bytesRead, long messagesWritten,
                                              long bytesWritten, long invalidMessagesRead) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("endOffset", endOffset);
        result.put("firstDirtyOffset", firstDirtyOffset);
        result.put("firstUncleanableOffset", firstUncleanableOffset);
        result.put("messagesRead", messagesRead);
        result.put("bytesRead", bytesRead);
        result.put("messagesWritten", messagesWritten);
        result.put("bytesWritten", bytesWritten);
        result.put("invalidMessagesRead", invalidMessagesRead);
        return result;
    }

    /** The cleaner thread would not clean the log now. */
    public static Map<String, Object> notCleaned() {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("endOffset", null);
        return result;
    }
}
