"""Sphinx configuration of kafkalog's reference.

Built by ``make docs``: HTML and the doctest builder, both with warnings as errors and nitpicky
cross-references (``sphinx-build -n -W --keep-going``).  The figures are drawn at build time from real
logs made by kafkalog (``_ext/kafkalog_figures.py``) and the port map is rendered from
``port_map.toml`` (``_ext/kafkalog_port_map.py``).  No page needs the network.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import kafkalog  # noqa: E402

project = "kafkalog"
author = "The kafkalog authors"
copyright = "2026, The kafkalog authors. A port of Apache Kafka's design (Apache License 2.0)"
release = kafkalog.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "kafkalog_port_map",
    "kafkalog_refs",
    "kafkalog_docstrings",
    "kafkalog_cli_help",
    "kafkalog_figures",
]

exclude_patterns = ["_build", "_generated/*.tmp"]
templates_path: list[str] = []
root_doc = "index"
language = "en"
html_theme = "alabaster"
html_theme_options = {"description": "Kafka's log layer, ported", "fixed_sidebar": True}
html_static_path: list[str] = []

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

# Cross-references are checked (-n), but the docs are built offline: names from the standard library,
# numpy, pyarrow and pyspark, and type-variable names, are not linked rather than reported.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(os|io|pathlib|collections\.abc|typing|types|threading|enum|datetime|argparse|mmap|abc|re|"
               r"random|logging|concurrent\.futures|contextlib|dataclasses|numpy|npt|np|pyarrow|pa|pyspark|"
               r"_thread|tomllib|subprocess|queue|hashlib|zlib)(\..*)?"),
    (r"py:.*", r"(SparkSession|DataFrame|StructType|InputPartition|DataSource|DataSourceReader|DataSourceWriter|"
               r"DataSourceStreamReader|DataSourceArrowWriter|WriterCommitMessage|ReadLimit|Path|TextIO|BinaryIO|"
               r"Any|Self|NDArray)(\..*)?"),
    (r"py:.*", r"(.*\.)?_?[A-Z]"),  # TypeVars: T, _T, ...
    (r"py:.*", r"(.*\.)?_\w+"),  # private helpers named in a docstring: not part of the reference
    (r"py:class", r"(list|dict|tuple|set|frozenset|type)\[.*|:1\] \w+|const .*"),  # unparsed generics, Cython buffers
    (r"py:(attr|data)", r".*"),  # instance attributes and module constants without a docstring of their own
]

doctest_global_setup = """
import os
import tempfile
from pathlib import Path

import kafkalog

_doc_tmp = tempfile.TemporaryDirectory(prefix="kafkalog-doctest-")
workdir = Path(_doc_tmp.name)
"""
doctest_global_cleanup = """
_doc_tmp.cleanup()
"""
