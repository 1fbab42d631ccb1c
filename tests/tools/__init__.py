"""Tests of the tools built on the log: verify, stats, partition-dir discovery and the log-dir writer."""
