import java.io.File;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * {@code open LOGDIR LASTSEGMENT VALIDBYTES TORNFILE WARMUP ROUNDS}: an unclean open of the log in LOGDIR, the recovery
 * of every segment after the recovery point (0): {@code UnifiedLog.create} with {@code lastShutdownClean=false}.
 * Before each round (untimed) the last segment file LASTSEGMENT is cut back to VALIDBYTES and the bytes of TORNFILE (a
 * batch cut short, as a crash leaves one) written after them, so every round recovers the same torn log; the log is
 * closed after the clock stops.
 */
final class OpenBench {
    private OpenBench() {
    }

    static String run(Path logDir, Path lastSegment, long validBytes, Path tornFile, int warmup, int rounds)
            throws Exception {
        byte[] torn = Files.readAllBytes(tornFile);
        KafkaScheduler scheduler = KafkaLogBench.startScheduler();
        BrokerTopicStats stats = new BrokerTopicStats(false);
        List<Double> timed = new ArrayList<>();
        long logEnd = -1;
        long size = -1;
        int segments = -1;
        for (int round = 0; round < warmup + rounds; round++) {
            try (RandomAccessFile file = new RandomAccessFile(lastSegment.toFile(), "rw")) {
                file.setLength(validBytes);
                file.seek(validBytes);
                file.write(torn);
                file.getFD().sync();
            }
            File dir = logDir.toFile();
            long start = System.nanoTime();
            UnifiedLog log = KafkaLogBench.open(dir, scheduler, stats, false);
            long elapsed = System.nanoTime() - start;
            if (round >= warmup) {
                timed.add(elapsed / 1e9);
            }
            logEnd = log.logEndOffset();
            size = log.size();
            segments = log.numberOfSegments();
            log.close();
        }
        scheduler.shutdown();
        return KafkaLogBench.result(timed, "\"log_end_offset\": " + logEnd + ", \"size\": " + size + ", \"segments\": "
            + segments);
    }
}
