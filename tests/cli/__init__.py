"""Tests of the command line (kafkalog.cli): its commands, dump, and the benchmark report."""
