"""Tests of the record layer (kafkalog.record): batches and records of the three message formats, compression codecs."""
