"""The ``kafkalog-demo`` directive: what ``kafkalog demo`` prints, run when the docs are built.

``.. kafkalog-demo::`` shows the tour's whole output, ``.. kafkalog-demo:: 3`` only its step 3 (the
``== 3. ...`` heading and the lines under it).  The tour (:func:`kafkalog.cli.demo.tour`) runs once per
build, in a temporary directory, so the page shows this build's output and cannot go stale: a step the
tour no longer has is a build error.
"""

from __future__ import annotations

import functools
import io
import re
from typing import Any

from docutils import nodes
from kafkalog_pictures import quiet_kafkalog
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from kafkalog.cli.demo import tour

_STEP = re.compile(r"^== (\d+)\. ", re.MULTILINE)


@functools.cache
def tour_output() -> str:
    out = io.StringIO()
    with quiet_kafkalog():  # the tour's crash is logged as a broker would; the narration says it already
        status = tour(None, out)
    if status != 0:
        raise RuntimeError(f"kafkalog demo exited with {status}")
    return out.getvalue()


def tour_steps(text: str) -> dict[int, str]:
    """The tour's output cut at its step headings: step number → the heading and its lines."""
    starts = [(int(m.group(1)), m.start()) for m in _STEP.finditer(text)]
    steps = {}
    for (number, start), (_n, end) in zip(starts, [*starts[1:], (0, len(text))], strict=True):
        steps[number] = text[start:end].rstrip("\n")
    return steps


class DemoDirective(SphinxDirective):
    optional_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        text = tour_output().rstrip("\n")
        if self.arguments:
            steps = tour_steps(text)
            try:
                text = steps[int(self.arguments[0])]
            except (KeyError, ValueError):
                raise self.error(f"kafkalog-demo: the tour has steps {sorted(steps)}, "
                                 f"not {self.arguments[0]!r}") from None
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        block["classes"].append("kafkalog-demo")  # wrapped, not scrolled (kafkalog.css): it is prose
        return [block]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kafkalog-demo", DemoDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
