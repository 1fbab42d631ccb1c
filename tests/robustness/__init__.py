"""Cross-cutting suites of what must not break kafkalog: faults, bad input, fuzzing, crashes, races, special files."""
