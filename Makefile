# kafkalog: the two commands of the README's quick start, and the checks they stand on.
#
#   make demo    build everything into .venv and run the main job (kafkalog.spark.demo, on an embedded
#                Spark; needs Java 17): DEMO_ARGS="--records 100000 --master local[2]" to change it
#   make demo-cluster  the same job on a Spark standalone cluster started here (a master, two workers),
#                reading the log dirs through an S3-compatible server on 127.0.0.1
#   make test    build everything into .venv, then lint, type-check, run the whole test suite and build
#                the docs (their examples run as doctests)
#   make peers   kafka-python's and confluent-kafka-python's own integration suites against kafkalog serve
#                (tests/peers; minutes, downloads their sources once, not part of make test):
#                PEERS_ARGS="--confluent-source PATH" gives confluent's tests, which its sdist does not ship
#
# Each target sets up what it needs; nothing has to be installed by hand first but Python 3.11+.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SOURCES := $(shell find kafkalog -name '*.py' -o -name '*.pyx' -o -name '*.pxi' -o -name '*.pyi' -o -name '*.h') setup.py pyproject.toml

.PHONY: all demo demo-cluster tour test lint typecheck stubtest pytest docs bench build clean oracle-jars \
	oracle-run oracle peers

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Installs kafkalog (compiling kafkalog._core) with its test, bench and dev tools. Editable, so a
# change to a .py file is live at once; a change to the .pyx, its .pxi families or the C header rebuilds here.
# The editable install is a .pth naming this checkout (pyproject.toml's package-dir), so python -m kafkalog
# finds the package from any folder, the one holding a clone named kafkalog included.
$(STAMP): $(PY) $(SOURCES)
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -c "import kafkalog._core"
	touch $(STAMP)

build: $(STAMP)

DEMO_ARGS ?=

demo: $(STAMP)
	$(PY) -m kafkalog.spark.demo $(DEMO_ARGS)

demo-cluster: $(STAMP)
	$(PY) -m kafkalog.spark.demo --cluster $(DEMO_ARGS)

tour: $(STAMP)
	$(PY) -m kafkalog demo

lint: $(STAMP)
	$(PY) -m ruff check kafkalog tests docs
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/cython-lint kafkalog/_core.pyx kafkalog/_core_pyx/*.pxi
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(PY) -m mypy

stubtest: $(STAMP)
	$(PY) -m mypy.stubtest kafkalog._core --concise --mypy-config-file pyproject.toml

# Kafka's own jars, the oracle the tests hold kafkalog to (Java is a test-time tool only: the package never needs
# it): the newest 3.9 (Scala UnifiedLog, the behaviour the port follows, and the last line that writes v0/v1) and
# the newest 4.x served, resolved by Maven into .oracle/kafka-<version>/lib (ignored), once.  Without Java or Maven
# this says so and the oracle tests skip; .ci/run sets KAFKALOG_REQUIRE_ORACLE=1, which makes that skip a failure.
KAFKA_VERSIONS := 3.9.2 4.4.0
ORACLE_DIR := .oracle
ORACLE_STAMPS := $(foreach v,$(KAFKA_VERSIONS),$(ORACLE_DIR)/kafka-$(v)/.resolved)

ORACLE_BROKER_STAMPS := $(foreach v,$(KAFKA_VERSIONS),$(ORACLE_DIR)/kafka-$(v)/.broker-resolved)

oracle-jars: $(ORACLE_STAMPS) $(ORACLE_BROKER_STAMPS)

$(ORACLE_DIR)/kafka-%/.resolved: tests/oracle/pom.xml
	@if command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then \
		rm -rf $(ORACLE_DIR)/kafka-$*/lib && mkdir -p $(ORACLE_DIR) && \
		if mvn -q -B -f tests/oracle/pom.xml -Dkafka.version=$* dependency:copy-dependencies \
				-DoutputDirectory=$(CURDIR)/$(ORACLE_DIR)/kafka-$*/lib -DincludeScope=runtime \
				>$(ORACLE_DIR)/kafka-$*.log 2>&1; then touch $@; \
		else cat $(ORACLE_DIR)/kafka-$*.log >&2; exit 1; fi; \
	else \
		echo "oracle-jars: no java or mvn on PATH: Kafka $* is not fetched, the oracle tests will skip" >&2; \
	fi

# What the real-broker tests (tests/oracle/broker) add to a version's jars, by its line (3 or 4), without their
# dependencies: 3.x LocalTieredStorage (the storage test jar), 4.x the slf4j binding its broker logs through.  Kept
# in broker-lib/ beside lib/, so that nothing but the broker's class path sees them.
$(ORACLE_DIR)/kafka-%/.broker-resolved: tests/oracle/broker/pom.xml
	@if command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then \
		rm -rf $(ORACLE_DIR)/kafka-$*/broker-lib && mkdir -p $(ORACLE_DIR)/kafka-$*/broker-lib && \
		if mvn -q -B -f tests/oracle/broker/pom.xml -Dkafka.version=$* -Dkafka.line=$(firstword $(subst ., ,$*)) \
				dependency:copy-dependencies -DexcludeTransitive=true \
				-DoutputDirectory=$(CURDIR)/$(ORACLE_DIR)/kafka-$*/broker-lib \
				>$(ORACLE_DIR)/kafka-$*-broker.log 2>&1; then touch $@; \
		else cat $(ORACLE_DIR)/kafka-$*-broker.log >&2; exit 1; fi; \
	else \
		echo "oracle-jars: no java or mvn on PATH: the broker jars of Kafka $* are not fetched, the broker tests will skip" >&2; \
	fi

# The differential harness (tests/oracle, docs/oracle.rst): scenario files run against Kafka's UnifiedLog and
# kafkalog's Log, every answer and every file compared after every op.  Exit 0: identical; 1: a difference
# (printed: the scenario, the op, the first differing field or file and byte); 2: a scenario it cannot read.
#   make oracle-run SCENARIOS="a.json b.json"   those files (default: every regression file)
#   make oracle                                  ORACLE_SCENARIOS generated scenarios per Kafka line from seed
#                                                ORACLE_SEED; each differing one is shrunk into .oracle/shrunk/
SCENARIOS ?= $(wildcard tests/oracle/scenarios/*.json)
ORACLE_SCENARIOS ?= 300
ORACLE_SEED ?= 1000

oracle-run: $(STAMP) oracle-jars
	$(PY) -m tests.oracle.run $(SCENARIOS)

oracle: $(STAMP) oracle-jars
	$(PY) -m tests.oracle.run --generate $(ORACLE_SCENARIOS) --seed $(ORACLE_SEED) --keep-going \
		--shrink-to $(ORACLE_DIR)/shrunk

# The suite on PYTEST_WORKERS processes (pytest-xdist), a test module to a process (loadscope: a module's tests,
# both kernel twins of each, share one process and its module fixtures: a broker, a Spark cluster, a Kafka JVM).
# 2 is CI's core count; PYTEST_WORKERS=0 runs it in this process, PYTEST_ARGS adds pytest options.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=

pytest: $(STAMP) oracle-jars
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

# The reference: HTML, then every example in it run by the doctest builder; warnings (nitpicky
# cross-references included) are errors.  Output in docs/_build/html.
DOCS_FLAGS := -n -W --keep-going -q

docs: $(STAMP)
	$(PY) -m sphinx $(DOCS_FLAGS) -b html docs docs/_build/html
	$(PY) -m sphinx $(DOCS_FLAGS) -b doctest docs docs/_build/doctest

test: lint typecheck stubtest pytest docs

# The peers' own integration suites against kafkalog serve (tests/peers/run_peer_suites.py): a summary on stdout
# and in .oracle/peers/summary.json.  Slow (minutes per suite) and online the first time, so not part of test.
PEERS_ARGS ?=

peers: $(STAMP)
	$(PY) tests/peers/run_peer_suites.py $(PEERS_ARGS)

# Every benchmark (kafkalog/bench, shipped with the package), then bench-report/ (report.md and charts); the
# rows beside Kafka's own log layer run on the jars oracle-jars fetches (skipped, with a note, without Java);
# BENCH_ARGS="--quick" for the short run (a few minutes on 2 cores, about 5 GB of memory at its peak).
BENCH_ARGS ?=

bench: $(STAMP) oracle-jars
	$(PY) -m kafkalog bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info kafkalog/_core.c kafkalog/_core.html kafkalog/*.so docs/_build docs/_generated \
		$(ORACLE_DIR)
