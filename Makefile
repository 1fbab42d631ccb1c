# kafkalog: the two commands of the README's quick start, and the checks they stand on.
#
#   make demo    build everything into .venv and run the main job (kafkalog.spark.demo, on an embedded
#                Spark; needs Java 17): DEMO_ARGS="--records 100000 --master local[2]" to change it
#   make demo-cluster  the same job on a Spark standalone cluster started here (a master, two workers),
#                reading the log dirs through an S3-compatible server on 127.0.0.1
#   make test    build everything into .venv, then lint, type-check, run the whole test suite and build
#                the docs (their examples run as doctests)
#
# Each target sets up what it needs; nothing has to be installed by hand first but Python 3.11+.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SOURCES := $(shell find kafkalog -name '*.py' -o -name '*.pyx' -o -name '*.pxi' -o -name '*.pyi' -o -name '*.h') setup.py pyproject.toml

.PHONY: all demo demo-cluster tour test lint typecheck stubtest pytest docs bench build clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Installs kafkalog (compiling kafkalog._core) with its test, bench and dev tools. Editable, so a
# change to a .py file is live at once; a change to the .pyx, its .pxi families or the C header rebuilds here.
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

typecheck: $(STAMP)
	$(PY) -m mypy

stubtest: $(STAMP)
	$(PY) -m mypy.stubtest kafkalog._core --concise --mypy-config-file pyproject.toml

pytest: $(STAMP)
	$(PY) -m pytest

# The reference: HTML, then every example in it run by the doctest builder; warnings (nitpicky
# cross-references included) are errors.  Output in docs/_build/html.
DOCS_FLAGS := -n -W --keep-going -q

docs: $(STAMP)
	$(PY) -m sphinx $(DOCS_FLAGS) -b html docs docs/_build/html
	$(PY) -m sphinx $(DOCS_FLAGS) -b doctest docs docs/_build/doctest

test: lint typecheck stubtest pytest docs

# Every benchmark (kafkalog/bench, shipped with the package), then bench-report/ (report.md and charts);
# BENCH_ARGS="--quick" for the one-minute run.
BENCH_ARGS ?=

bench: $(STAMP)
	$(PY) -m kafkalog bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info kafkalog/_core.c kafkalog/_core.html kafkalog/*.so docs/_build docs/_generated
