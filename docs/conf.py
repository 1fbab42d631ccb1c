"""Sphinx configuration of kafkalog's reference.

Built by ``make docs``: HTML and the doctest builder, both with warnings as errors and nitpicky
cross-references (``sphinx-build -n -W --keep-going``).  The figures are drawn at build time from real
logs made by kafkalog (``_ext/kafkalog_figures.py``, ``_ext/kafkalog_pictures.py``), the tour shows what
``kafkalog demo`` prints when the docs are built (``_ext/kafkalog_tour.py``) and the port map is rendered from
``port_map.toml`` (``_ext/kafkalog_port_map.py``).  No page needs the network.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import kafkalog  # noqa: E402


def _import_quietly(module: str) -> None:
    """Import ``module`` and undo a ``logging.basicConfig`` it runs: accessible-pygments (Furo's colour
    styles) does so at import, which would print every INFO record kafkalog logs while the pictures and
    the tour are made."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    __import__(module)
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


_import_quietly("a11y_pygments")

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
    "kafkalog_tour",
    "kafkalog_i18n",
    "kafkalog_tables",
    "kafkalog_layers",
]

exclude_patterns = ["_build", "_generated/*.tmp"]
templates_path = ["_templates"]
root_doc = "index"
language = "en"
# Furo: a wide content column, tables and code blocks that scroll inside themselves rather than spill
# over the sidebars, and a light and a dark scheme.
html_theme = "furo"
html_title = f"kafkalog {release}"
html_theme_options = {"navigation_with_keys": True}
html_static_path = ["_static"]
html_css_files = ["kafkalog.css"]
# Furo's sidebar with the language switch (English ⇄ 中文, _ext/kafkalog_i18n.py) under the project name.
html_sidebars = {"**": ["sidebar/scroll-start.html", "sidebar/brand.html", "sidebar/language.html",
                        "sidebar/search.html", "sidebar/navigation.html", "sidebar/scroll-end.html"]}

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

# Cross-references are checked (-n), but the docs are built offline: names from the standard library,
# numpy, pyarrow and pyspark, and type-variable names, are not linked rather than reported.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(os|io|pathlib|collections\.abc|typing|types|threading|enum|datetime|argparse|mmap|abc|re|"
               r"random|logging|concurrent\.futures|contextlib|dataclasses|numpy|npt|np|pyarrow|pa|pyspark|"
               r"_thread|tomllib|subprocess|queue|hashlib|zlib|fsspec|uuid|asyncio|kio)(\..*)?"),
    (r"py:.*", r"(SparkSession|DataFrame|StructType|InputPartition|DataSource|DataSourceReader|DataSourceWriter|"
               r"DataSourceStreamReader|DataSourceArrowWriter|WriterCommitMessage|ReadLimit|Path|TextIO|BinaryIO|"
               r"Any|Self|NDArray|AbstractFileSystem)(\..*)?"),
    (r"py:.*", r"(.*\.)?_?[A-Z]"),  # TypeVars: T, _T, ...
    (r"py:.*", r"(.*\.)?_\w+"),  # private helpers named in a docstring: not part of the reference
    # unparsed generics, Cython buffers
    (r"py:class", r"(list|dict|tuple|set|frozenset|type|Mapping)\[.*|:1\] \w+|const .*"),
    (r"py:(attr|data)", r".*"),  # instance attributes and module constants without a docstring of their own
]

# Every page makes, in a block the reader sees, what its examples need: a scratch directory (``workdir``) and, on
# the pages that show kafkalog's warnings, a ``logged()`` helper, so its examples can be pasted as they stand.
# This setup is the build's safety net behind them: what kafkalog logs at WARNING or above while an example runs
# is collected, not printed, and a page that makes kafkalog warn without showing it fails the build (a warning a
# broker gives is a sign that the example does what no broker does); after each page its directory and its
# handler are removed.
doctest_global_setup = """
import logging as _logging
import os
import tempfile
from pathlib import Path

import kafkalog


class _DocLogs(_logging.Handler):
    def __init__(self):
        super().__init__(_logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


_doc_logs = _DocLogs()
_logging.getLogger("kafkalog").addHandler(_doc_logs)


def logged():
    \"\"\"What kafkalog logged at WARNING or above since the last call, one line each: level and message.\"\"\"
    records, _doc_logs.records = _doc_logs.records, []
    return [f"{r.levelname} {r.getMessage()}" for r in records]


_doc_tmp = tempfile.TemporaryDirectory(prefix="kafkalog-doctest-")
workdir = Path(_doc_tmp.name)
"""
doctest_global_cleanup = """
import shutil as _shutil

_logging.getLogger("kafkalog").removeHandler(_doc_logs)
if "page_log" in globals():
    _logging.getLogger("kafkalog").removeHandler(page_log)
_shutil.rmtree(workdir, ignore_errors=True)
_doc_tmp.cleanup()
_unshown = logged()
assert not _unshown, f"an example made kafkalog log what it does not show: {_unshown}"
"""
