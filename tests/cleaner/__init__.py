"""Tests of compaction: the cleaner (Kafka's LogCleanerTest / CleanerTest), LogCleanerManager, the offset map and
the integration runs.
"""
