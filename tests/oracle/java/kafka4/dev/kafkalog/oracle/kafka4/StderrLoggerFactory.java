package dev.kafkalog.oracle.kafka4;

import java.io.PrintStream;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.helpers.FormattingTuple;
import org.slf4j.helpers.MarkerIgnoringBase;
import org.slf4j.helpers.MessageFormatter;

/** slf4j loggers that write warnings and errors to stderr, one line each (and the stack of a throwable). */
public final class StderrLoggerFactory implements ILoggerFactory {
    private final ConcurrentMap<String, Logger> loggers = new ConcurrentHashMap<>();

    @Override
    public Logger getLogger(String name) {
        return loggers.computeIfAbsent(name, StderrLogger::new);
    }

    private static final class StderrLogger extends MarkerIgnoringBase {
        private static final long serialVersionUID = 1L;

        StderrLogger(String name) {
            this.name = name;
        }

        private void write(String level, String format, Object... args) {
            FormattingTuple tuple = MessageFormatter.arrayFormat(format, args);
            PrintStream err = System.err;
            synchronized (err) {
                err.println("[" + Instant.now() + "] " + level + " " + name + ": " + tuple.getMessage());
                if (tuple.getThrowable() != null) {
                    tuple.getThrowable().printStackTrace(err);
                }
            }
        }

        // trace, debug and info: off
        @Override public boolean isTraceEnabled() { return false; }
        @Override public void trace(String msg) { }
        @Override public void trace(String format, Object arg) { }
        @Override public void trace(String format, Object arg1, Object arg2) { }
        @Override public void trace(String format, Object... arguments) { }
        @Override public void trace(String msg, Throwable t) { }
        @Override public boolean isDebugEnabled() { return false; }
        @Override public void debug(String msg) { }
        @Override public void debug(String format, Object arg) { }
        @Override public void debug(String format, Object arg1, Object arg2) { }
        @Override public void debug(String format, Object... arguments) { }
        @Override public void debug(String msg, Throwable t) { }
        @Override public boolean isInfoEnabled() { return false; }
        @Override public void info(String msg) { }
        @Override public void info(String format, Object arg) { }
        @Override public void info(String format, Object arg1, Object arg2) { }
        @Override public void info(String format, Object... arguments) { }
        @Override public void info(String msg, Throwable t) { }

        // warn and error: to stderr
        @Override public boolean isWarnEnabled() { return true; }
        @Override public void warn(String msg) { write("WARN", msg); }
        @Override public void warn(String format, Object arg) { write("WARN", format, arg); }
        @Override public void warn(String format, Object arg1, Object arg2) { write("WARN", format, arg1, arg2); }
        @Override public void warn(String format, Object... arguments) { write("WARN", format, arguments); }
        @Override public void warn(String msg, Throwable t) { write("WARN", msg, t); }
        @Override public boolean isErrorEnabled() { return true; }
        @Override public void error(String msg) { write("ERROR", msg); }
        @Override public void error(String format, Object arg) { write("ERROR", format, arg); }
        @Override public void error(String format, Object arg1, Object arg2) { write("ERROR", format, arg1, arg2); }
        @Override public void error(String format, Object... arguments) { write("ERROR", format, arguments); }
        @Override public void error(String msg, Throwable t) { write("ERROR", msg, t); }
    }
}
