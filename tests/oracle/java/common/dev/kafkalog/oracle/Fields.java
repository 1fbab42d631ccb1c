package dev.kafkalog.oracle;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Strict reading of one JSON object of the protocol: each field is asked for once, with its type and range, and
 * {@link #done} refuses any field nobody asked for, so a misspelt or misplaced field is an error, not a default.
 */
final class Fields {
    private final JsonNode node;
    private final String what;
    private final Set<String> seen = new HashSet<>();

    Fields(JsonNode node, String what) throws ProtocolException {
        if (node == null || !node.isObject()) {
            throw new ProtocolException(what + " must be a JSON object, not " + describe(node));
        }
        this.node = node;
        this.what = what;
    }

    boolean has(String name) {
        return node.has(name);
    }

    JsonNode raw(String name) throws ProtocolException {
        seen.add(name);
        JsonNode value = node.get(name);
        if (value == null) {
            throw new ProtocolException(what + ": missing field '" + name + "'");
        }
        return value;
    }

    String string(String name) throws ProtocolException {
        JsonNode value = raw(name);
        if (!value.isTextual()) {
            throw new ProtocolException(what + ": '" + name + "' must be a string, not " + describe(value));
        }
        return value.textValue();
    }

    /** A string or JSON null (a record's key or value). */
    String nullableString(String name) throws ProtocolException {
        JsonNode value = raw(name);
        if (value.isNull()) {
            return null;
        }
        if (!value.isTextual()) {
            throw new ProtocolException(what + ": '" + name + "' must be a string or null, not " + describe(value));
        }
        return value.textValue();
    }

    boolean bool(String name) throws ProtocolException {
        JsonNode value = raw(name);
        if (!value.isBoolean()) {
            throw new ProtocolException(what + ": '" + name + "' must be true or false, not " + describe(value));
        }
        return value.booleanValue();
    }

    long integer(String name, long min, long max) throws ProtocolException {
        return integerOf(raw(name), name, min, max);
    }

    Long optionalInteger(String name, long min, long max) throws ProtocolException {
        seen.add(name);
        JsonNode value = node.get(name);
        if (value == null || value.isNull()) {
            return null;
        }
        return integerOf(value, name, min, max);
    }

    private long integerOf(JsonNode value, String name, long min, long max) throws ProtocolException {
        if (!value.isIntegralNumber() || !value.canConvertToLong()) {
            throw new ProtocolException(what + ": '" + name + "' must be an integer, not " + describe(value));
        }
        long v = value.longValue();
        if (v < min || v > max) {
            throw new ProtocolException(what + ": '" + name + "' = " + v + " is out of range [" + min + ", " + max + "]");
        }
        return v;
    }

    Fields object(String name) throws ProtocolException {
        return new Fields(raw(name), what + "." + name);
    }

    Fields optionalObject(String name) throws ProtocolException {
        seen.add(name);
        JsonNode value = node.get(name);
        if (value == null || value.isNull()) {
            return null;
        }
        return new Fields(value, what + "." + name);
    }

    List<JsonNode> array(String name) throws ProtocolException {
        JsonNode value = raw(name);
        if (!value.isArray()) {
            throw new ProtocolException(what + ": '" + name + "' must be an array, not " + describe(value));
        }
        List<JsonNode> items = new ArrayList<>();
        value.forEach(items::add);
        return items;
    }

    /** The field names, in the order they appear (for objects whose keys are data: headers, config). */
    List<String> names() {
        List<String> names = new ArrayList<>();
        Iterator<String> it = node.fieldNames();
        it.forEachRemaining(names::add);
        return names;
    }

    String what() {
        return what;
    }

    /** Refuses the fields nobody asked for. */
    void done() throws ProtocolException {
        for (String name : names()) {
            if (!seen.contains(name)) {
                throw new ProtocolException(what + ": unknown field '" + name + "'");
            }
        }
    }

    static String describe(JsonNode node) {
        if (node == null) {
            return "nothing";
        }
        String text = node.toString();
        return node.getNodeType().name().toLowerCase() + " " + (text.length() > 60 ? text.substring(0, 60) + "..." : text);
    }
}
