"""Google-style sections (``Raises:``, ``Args:``, ``Returns:``) of kafkalog's docstrings, through napoleon.

Only functions, methods, classes and modules are converted.  A property's or attribute's docstring
starts with prose such as "The log end offset (Kafka: ``logEndOffset``)", which napoleon would read
as ``type: description``; those are left as written.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.ext.napoleon import Config
from sphinx.ext.napoleon.docstring import GoogleDocstring

_CONFIG = Config(napoleon_google_docstring=True, napoleon_numpy_docstring=False, napoleon_use_rtype=False)


def _process(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what in ("attribute", "property", "data"):
        return
    converted = GoogleDocstring(lines, _CONFIG, app, what, name, obj, options).lines()
    lines[:] = converted


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", _process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
