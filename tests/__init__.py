"""kafkalog's test suite, laid out as the package is: one folder per layer, plus the suites that cut across layers."""
