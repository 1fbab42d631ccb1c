package dev.kafkalog.oracle.kafka4;

import java.io.IOException;

import dev.kafkalog.oracle.Runner;

/** The runner on Kafka 4's Java {@code UnifiedLog} and {@code Cleaner} (the storage module). */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws IOException {
        Runner.main(new Kafka4Backend());
    }
}
