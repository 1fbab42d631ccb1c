"""Cross-cutting suites checked against logs written by real brokers (../shared/golden) and by independent Kafka
clients.
"""
