"""Tests of the tiered-storage layouts (kafkalog.remote): Kafka's LocalTieredStorage, Aiven's plugin and the
__remote_log_metadata topic, over fsspec's memory and local filesystems.
"""
