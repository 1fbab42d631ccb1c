package dev.kafkalog.oracle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One operation of a scenario, read strictly from its JSON form (the contract's op list, issue 29): every field
 * named there, with the type and range Kafka's API takes, and nothing else.
 */
public sealed interface Op {
    /** The op's name in the scenario ({@code "append"}, {@code "roll"}, ...). */
    String name();

    int MAX_INT = Integer.MAX_VALUE;

    Set<String> COMPRESSIONS = Set.of("none", "gzip", "snappy", "lz4", "zstd");

    /** Where an append comes from: Kafka's {@code AppendOrigin} and whether the leader assigns the offsets. */
    enum Origin { CLIENT, REPLICATION, COORDINATOR }

    /** What a read may return up to: Kafka's {@code FetchIsolation}. */
    enum Isolation { LOG_END, HIGH_WATERMARK, TXN_COMMITTED }

    /** One record of an append: UTF-8 key and value (either may be null), its timestamp and headers in order. */
    record Rec(String key, String value, long timestamp, Map<String, String> headers) { }

    /** The producer fields of a batch; absent means -1/-1/-1, not transactional. */
    record Producer(long id, short epoch, int sequence, boolean transactional) { }

    record Append(List<Rec> records, String compression, byte magic, int leaderEpoch, Origin origin,
                  Producer producer, Long baseOffset) implements Op {
        public String name() {
            return "append";
        }
    }

    /**
     * An end-transaction marker; {@code transactionVersion} (an extension of the contract, Kafka 4 only) is the
     * transaction version the coordinator writes it under, null for the runner's default.
     */
    record Marker(boolean commit, long producerId, short producerEpoch, int coordinatorEpoch, int leaderEpoch,
                  Short transactionVersion) implements Op {
        public String name() {
            return "marker";
        }
    }

    record Roll() implements Op {
        public String name() {
            return "roll";
        }
    }

    record TruncateTo(long offset) implements Op {
        public String name() {
            return "truncate_to";
        }
    }

    record TruncateFullyAndStartAt(long offset) implements Op {
        public String name() {
            return "truncate_fully_and_start_at";
        }
    }

    record DeleteRecords(long offset) implements Op {
        public String name() {
            return "delete_records";
        }
    }

    record AdvanceTime(long ms) implements Op {
        public String name() {
            return "advance_time";
        }
    }

    record UpdateHighWatermark(long offset) implements Op {
        public String name() {
            return "update_high_watermark";
        }
    }

    record Retention() implements Op {
        public String name() {
            return "retention";
        }
    }

    record Clean() implements Op {
        public String name() {
            return "clean";
        }
    }

    record Flush() implements Op {
        public String name() {
            return "flush";
        }
    }

    /**
     * Close (or crash) and load again; an unclean one may damage the tail first: {@code truncateBytes} and
     * {@code corruptByte} are 0 for no damage.
     */
    record Reopen(boolean cleanShutdown, Long recoveryPoint, long truncateBytes, long corruptByte) implements Op {
        public String name() {
            return "reopen";
        }
    }

    record Read(long offset, int maxBytes, Isolation isolation, boolean minOneMessage) implements Op {
        public String name() {
            return "read";
        }
    }

    /** Reads one op; anything outside the contract is a {@link ProtocolException}. */
    static Op parse(JsonNode node) throws ProtocolException {
        Fields f = new Fields(node, "op");
        String name = f.string("op");
        f = new Fields(node, "op " + name);
        f.string("op");
        Op op = switch (name) {
            case "append" -> parseAppend(f);
            case "marker" -> parseMarker(f);
            case "roll" -> new Roll();
            case "truncate_to" -> new TruncateTo(f.integer("offset", Long.MIN_VALUE, Long.MAX_VALUE));
            case "truncate_fully_and_start_at" -> new TruncateFullyAndStartAt(f.integer("offset", 0, Long.MAX_VALUE));
            case "delete_records" -> new DeleteRecords(f.integer("offset", Long.MIN_VALUE, Long.MAX_VALUE));
            case "advance_time" -> new AdvanceTime(f.integer("ms", 0, Long.MAX_VALUE));
            case "update_high_watermark" -> new UpdateHighWatermark(f.integer("offset", Long.MIN_VALUE, Long.MAX_VALUE));
            case "retention" -> new Retention();
            case "clean" -> new Clean();
            case "flush" -> new Flush();
            case "reopen" -> parseReopen(f);
            case "read" -> new Read(f.integer("offset", Long.MIN_VALUE, Long.MAX_VALUE),
                (int) f.integer("max_bytes", 0, MAX_INT), isolation(f), f.bool("min_one_message"));
            default -> throw new ProtocolException("unknown op '" + name + "'");
        };
        f.done();
        return op;
    }

    private static Append parseAppend(Fields f) throws ProtocolException {
        List<Rec> records = new ArrayList<>();
        int index = 0;
        for (JsonNode item : f.array("records")) {
            Fields r = new Fields(item, f.what() + ".records[" + index++ + "]");
            String key = r.nullableString("key");
            String value = r.nullableString("value");
            long timestamp = r.integer("timestamp", Long.MIN_VALUE, Long.MAX_VALUE);
            Map<String, String> headers = new LinkedHashMap<>();
            Fields h = r.optionalObject("headers");
            if (h != null) {
                for (String header : h.names()) {
                    headers.put(header, h.string(header));
                }
            }
            r.done();
            records.add(new Rec(key, value, timestamp, Collections.unmodifiableMap(headers)));
        }
        String compression = f.string("compression");
        if (!COMPRESSIONS.contains(compression)) {
            throw new ProtocolException(f.what() + ": unknown compression '" + compression + "' (one of " + COMPRESSIONS
                + ")");
        }
        byte magic = (byte) f.integer("magic", 0, 2);
        int leaderEpoch = (int) f.integer("leader_epoch", Integer.MIN_VALUE, MAX_INT);
        Origin origin = switch (f.string("origin")) {
            case "client" -> Origin.CLIENT;
            case "replication" -> Origin.REPLICATION;
            case "coordinator" -> Origin.COORDINATOR;
            default -> throw new ProtocolException(f.what() + ": origin must be client, replication or coordinator");
        };
        Producer producer = null;
        Fields p = f.optionalObject("producer");
        if (p != null) {
            producer = new Producer(p.integer("id", Long.MIN_VALUE, Long.MAX_VALUE),
                (short) p.integer("epoch", Short.MIN_VALUE, Short.MAX_VALUE),
                (int) p.integer("sequence", Integer.MIN_VALUE, MAX_INT), p.bool("transactional"));
            p.done();
        }
        Long baseOffset = f.optionalInteger("base_offset", Long.MIN_VALUE, Long.MAX_VALUE);
        return new Append(Collections.unmodifiableList(records), compression, magic, leaderEpoch, origin, producer,
            baseOffset);
    }

    private static Marker parseMarker(Fields f) throws ProtocolException {
        boolean commit = switch (f.string("type")) {
            case "commit" -> true;
            case "abort" -> false;
            default -> throw new ProtocolException(f.what() + ": type must be commit or abort");
        };
        Fields p = f.object("producer");
        long id = p.integer("id", Long.MIN_VALUE, Long.MAX_VALUE);
        short epoch = (short) p.integer("epoch", Short.MIN_VALUE, Short.MAX_VALUE);
        p.done();
        int coordinatorEpoch = (int) f.integer("coordinator_epoch", Integer.MIN_VALUE, MAX_INT);
        int leaderEpoch = (int) f.integer("leader_epoch", Integer.MIN_VALUE, MAX_INT);
        Long transactionVersion = f.optionalInteger("transaction_version", 0, Short.MAX_VALUE);
        return new Marker(commit, id, epoch, coordinatorEpoch, leaderEpoch,
            transactionVersion == null ? null : transactionVersion.shortValue());
    }

    /** {@code truncate_bytes} and {@code corrupt_byte} of 0 (the scenario's defaults) damage nothing. */
    private static Reopen parseReopen(Fields f) throws ProtocolException {
        boolean clean = f.bool("clean_shutdown");
        Long recoveryPoint = f.optionalInteger("recovery_point", 0, Long.MAX_VALUE);
        Long truncateBytes = f.optionalInteger("truncate_bytes", 0, Long.MAX_VALUE);
        Long corruptByte = f.optionalInteger("corrupt_byte", 0, Long.MAX_VALUE);
        long cut = truncateBytes == null ? 0 : truncateBytes;
        long flip = corruptByte == null ? 0 : corruptByte;
        if (clean && (recoveryPoint != null || cut != 0 || flip != 0)) {
            throw new ProtocolException(f.what() + ": recovery_point, truncate_bytes and corrupt_byte apply to an"
                + " unclean reopen only");
        }
        return new Reopen(clean, recoveryPoint, cut, flip);
    }

    private static Isolation isolation(Fields f) throws ProtocolException {
        return switch (f.string("isolation")) {
            case "log_end" -> Isolation.LOG_END;
            case "high_watermark" -> Isolation.HIGH_WATERMARK;
            case "txn_committed" -> Isolation.TXN_COMMITTED;
            default -> throw new ProtocolException("op read: isolation must be log_end, high_watermark or txn_committed");
        };
    }
}
