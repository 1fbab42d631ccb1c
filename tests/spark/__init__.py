"""Tests of the Spark data source (kafkalog.spark), its demo and the demo's workload generator."""
