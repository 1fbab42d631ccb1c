"""Tests of the log layer: Log (UnifiedLog, LocalLog), LogLoader, LogValidator, LogConfig, fetch metadata, the
consumer view, LogManager and its dir lock, topic names and the scheduler.
"""
