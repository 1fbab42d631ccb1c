"""Tests of kafkalog.manager.log_manager.LogManager (Kafka's LogManagerTest and the port's own), with the fixtures they
share."""
