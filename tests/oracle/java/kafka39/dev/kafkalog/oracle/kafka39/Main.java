package dev.kafkalog.oracle.kafka39;

import java.io.IOException;

import dev.kafkalog.oracle.Runner;

/** The runner on Kafka 3.9's Scala {@code kafka.log.UnifiedLog} and {@code kafka.log.Cleaner}. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws IOException {
        Runner.main(new Kafka39Backend());
    }
}
