import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;

/**
 * {@code snapshot LOGDIR LOGENDOFFSET NOWMS WARMUP ROUNDS}: the producer state of the partition in LOGDIR loaded from its
 * newest snapshot, as a log's load does: a {@code ProducerStateManager} made over the dir and
 * {@code truncateAndReload(0, LOGENDOFFSET, NOWMS)} (NOWMS the time the producers are judged expired by), timed
 * from the constructor to the loaded map.
 */
final class SnapshotBench {
    private static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    private static final int PRODUCER_ID_EXPIRATION_MS = 86_400_000;

    private SnapshotBench() {
    }

    static String run(Path logDir, long logEndOffset, long nowMs, int warmup, int rounds) throws Exception {
        File dir = logDir.toFile();
        TopicPartition partition = parse(dir.getName());
        List<Double> timed = new ArrayList<>();
        int producers = -1;
        long mapEnd = -1;
        for (int round = 0; round < warmup + rounds; round++) {
            long start = System.nanoTime();
            ProducerStateManager state = new ProducerStateManager(partition, dir, MAX_TRANSACTION_TIMEOUT_MS,
                new ProducerStateManagerConfig(PRODUCER_ID_EXPIRATION_MS, false), Time.SYSTEM);
            state.truncateAndReload(0L, logEndOffset, nowMs);
            long elapsed = System.nanoTime() - start;
            if (round >= warmup) {
                timed.add(elapsed / 1e9);
            }
            producers = state.activeProducers().size();
            mapEnd = state.mapEndOffset();
        }
        return KafkaLogBench.result(timed, "\"producers\": " + producers + ", \"map_end_offset\": " + mapEnd);
    }

    private static TopicPartition parse(String name) {
        int dash = name.lastIndexOf('-');
        return new TopicPartition(name.substring(0, dash), Integer.parseInt(name.substring(dash + 1)));
    }
}
