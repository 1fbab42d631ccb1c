"""Model-based tests: the log and the cleaner driven by random operations and checked against a plain model."""
