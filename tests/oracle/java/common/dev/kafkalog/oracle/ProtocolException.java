package dev.kafkalog.oracle;

/**
 * A request the runner cannot understand or carry out as asked (bad JSON, an unknown op or field, a value out of
 * range, a batch Kafka's builder refuses to build): answered {@code {"fatal": message}}, never confused with an
 * exception Kafka's log threw.
 */
public final class ProtocolException extends Exception {
    private static final long serialVersionUID = 1L;

    public ProtocolException(String message) {
        super(message);
    }

    public ProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
