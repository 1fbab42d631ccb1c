"""Tests of kafkalog.manager.LogManager (Kafka's LogManagerTest and the port's own), with the fixtures they share."""
