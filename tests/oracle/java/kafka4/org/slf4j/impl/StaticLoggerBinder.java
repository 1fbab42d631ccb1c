package org.slf4j.impl;

import org.slf4j.ILoggerFactory;
import org.slf4j.spi.LoggerFactoryBinder;

import dev.kafkalog.oracle.kafka4.StderrLoggerFactory;

/**
 * The slf4j 1.7 binding of the Kafka 4 runner.  Kafka 4.4.0's runtime jars bring slf4j-api 1.7 and log4j2 but no
 * bridge between them, so without this slf4j would drop every message (after a warning of its own); with it,
 * warnings and errors go to stderr and nothing to stdout.
 */
public final class StaticLoggerBinder implements LoggerFactoryBinder {
    /** The slf4j API version this binding is written against (slf4j reads the field). */
    public static String REQUESTED_API_VERSION = "1.6.99";

    private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();

    private final ILoggerFactory factory = new StderrLoggerFactory();

    private StaticLoggerBinder() {
    }

    public static StaticLoggerBinder getSingleton() {
        return SINGLETON;
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public String getLoggerFactoryClassStr() {
        return StderrLoggerFactory.class.getName();
    }
}
