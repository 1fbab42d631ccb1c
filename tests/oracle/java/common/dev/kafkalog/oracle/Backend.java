package dev.kafkalog.oracle;

import java.nio.file.Path;
import java.util.Map;

/**
 * One Kafka version's side of the runner: how its record builders make a batch and how its {@code UnifiedLog} is
 * created.  The two implementations ({@code kafka39}, {@code kafka4}) differ only where Kafka's API does.
 */
public interface Backend {
    /** Kafka's own version string of the jars on the class path ({@code AppInfoParser.getVersion()}). */
    String kafkaVersion();

    /** Sets up logging: nothing to stdout, warnings and errors to stderr.  Called once, first. */
    void configureLogging();

    /**
     * A producer's batch for {@code op}, as Kafka's {@code MemoryRecordsBuilder} writes it, starting at
     * {@code baseOffset}.
     *
     * @throws ProtocolException the builder refuses the batch (headers or producer fields on magic 0/1, zstd on
     *     magic 0/1): a scenario no client could send
     */
    byte[] buildAppend(Op.Append op, long baseOffset) throws ProtocolException;

    /**
     * {@code MemoryRecords.withEndTransactionMarker} at {@code timestampMs}, base offset 0.
     *
     * @throws ProtocolException the marker asks for what the version does not have (a transaction version on 3.9)
     */
    byte[] buildMarker(Op.Marker op, long timestampMs) throws ProtocolException;

    /**
     * Creates (or loads) the log of {@code dir}: Kafka's {@code UnifiedLog} with the topic config, on the clock and
     * its scheduler, no topic id.
     *
     * @param producerIdExpirationMs {@code producer.id.expiration.ms} (a broker config, kept out of the topic's)
     */
    OracleLog open(Path dir, Map<String, String> config, MockClock clock, long logStartOffset, long recoveryPoint,
                   boolean lastShutdownClean, int producerIdExpirationMs) throws Exception;
}
