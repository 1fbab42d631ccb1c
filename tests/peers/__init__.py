"""Other Kafka clients' own integration suites, run against ``kafkalog serve`` (issue 34).

kafka-python's and confluent-kafka-python's integration tests are written against a real Kafka cluster; each has a
switch for one already running (kafka-python: ``KAFKA_URI``, with ``KAFKA_VERSION``; confluent: ``BROKERS``).
``run_peer_suites.py`` points them at a ``kafkalog serve`` it starts, with the client versions installed beside
kafkalog, their tests from the published sources, and their test bodies unchanged; it counts passed, failed,
skipped and errors, and holds every failure against the triage kept in it (each suite's ``expected``: what a
single PLAINTEXT node without transactions, ACLs or share groups cannot do, and the APIs not answered yet).  Its
module docstring gives the steps, the cache (``.oracle/peers``, ignored by git) and the options.

- ``make peers`` runs both suites (minutes each; not part of ``make test``).  confluent's sdist ships no tests: give
  ``PEERS_ARGS="--confluent-source PATH"`` (a checkout or git repository of confluent-kafka-python) once.
- ``test_peer_suites.py`` runs a dozen of kafka-python's producer and consumer tests through the same script, offline,
  once the cache holds kafka-python's sdist (skipped otherwise), so the machinery cannot rot unnoticed.
- ``peer_results.py``: the pytest plugin the suites run with, writing each result as it happens.
- ``overlay/kafka-python``: stand-ins for the two support files kafka-python's sdist leaves out of its ``test/``.
"""
