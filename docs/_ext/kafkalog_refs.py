"""Resolve the short Python references of kafkalog's docstrings.

The docstrings say ``:class:`CorruptRecordError``` where the module imports the name, as a reader of
the source expects.  Sphinx resolves a reference against the current module and class only, so such a
name is unresolved in the API reference.  This handler retries an unresolved ``py`` reference the way
Sphinx treats ``.Name`` (search by suffix), then by its last component (a name re-exported by a
package; when several objects have that name, only those under the package written count), and links it
when exactly one documented object matches; anything else stays unresolved and, with ``-n``, fails the
build.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.nodes import make_refnode


def _resolve(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.TextElement) -> Any:
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    domain: Any = env.domains["py"]
    matches = []
    # The name as written, then its last component (a re-exported name: kafkalog.record.Record is
    # documented where it is defined, kafkalog._core.Record).
    for name in dict.fromkeys((target, target.rpartition(".")[2])):
        matches = domain.find_obj(env, node.get("py:module"), node.get("py:class"), name, node["reftype"],
                                  searchmode=1)
        if matches:
            break
    prefix = target.rpartition(".")[0]
    if len({name for name, _obj in matches}) > 1 and prefix:
        # A name re-exported by a package (kafkalog.cleaner.compact, kafkalog.spark.compact) is defined in one of
        # its modules: among the names that share the last component, the one under the package written.
        matches = [(name, obj) for name, obj in matches if name.startswith(prefix + ".")]
    if len({name for name, _obj in matches}) != 1:
        return None
    name, obj = matches[0]
    return make_refnode(app.builder, node["refdoc"], obj.docname, obj.node_id, contnode, name)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("missing-reference", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
