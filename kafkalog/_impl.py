"""Chooses which twin of the kernels is live: the compiled ``_core`` or the plain ``_core_py``.

This is the only place that decides.  Everything else imports ``core`` from here.

* ``KAFKALOG_PURE_PYTHON=1`` selects the plain twin even when the compiled one is built.
* ``KAFKALOG_REQUIRE_EXTENSION=1`` makes a missing or broken build an ImportError instead of a silent
  fallback; CI sets it, so a build that did not happen fails the run.
* Otherwise the compiled twin is used when it imports, the plain one when it does not.

``both()`` gives every twin that can load, and ``using(name)`` makes one of them live for a while:
that is how the tests and benchmarks run the two side by side in one process.  Code that calls a
kernel looks it up as ``_impl.core.NAME`` at call time, so a switch reaches it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from . import _core_py

__all__ = ["USING_CYTHON", "both", "core", "implementation", "using"]


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _load_compiled() -> ModuleType | None:
    try:
        from . import _core
    except ImportError as e:
        if _flag("KAFKALOG_REQUIRE_EXTENSION"):
            raise ImportError(
                "KAFKALOG_REQUIRE_EXTENSION is set but kafkalog's compiled core (kafkalog._core) could not "
                f"be imported: {e}. Build it with `make build` or `pip install -e .`, or unset the "
                "variable to run on the plain-Python kernels."
            ) from e
        return None
    return _core


_compiled = _load_compiled()

core: ModuleType = _core_py if _flag("KAFKALOG_PURE_PYTHON") or _compiled is None else _compiled

USING_CYTHON = core is not _core_py


def implementation() -> str:
    """``"cython"`` when the compiled kernels are live, ``"python"`` when the plain ones are."""
    return str(core.IMPLEMENTATION)


_switch_lock = threading.Lock()


@contextmanager
def using(name: str) -> Iterator[ModuleType]:
    """Make the twin ``name`` (``"python"`` or ``"cython"``) the live one inside the ``with`` block.

    For tests and benchmarks: the switch is process-wide, so it is not meant for threads that run
    kernels concurrently with the switch.
    """
    global core, USING_CYTHON
    twins = both()
    if name not in twins:
        raise ImportError(f"kafkalog's {name} kernels are not available (built twins: {sorted(twins)})")
    with _switch_lock:
        previous = core
        core = twins[name]
        USING_CYTHON = core is not _core_py
    try:
        yield core
    finally:
        with _switch_lock:
            core = previous
            USING_CYTHON = core is not _core_py


def both() -> dict[str, ModuleType]:
    """Every twin that loads here, by name: always ``"python"``, and ``"cython"`` when it is built."""
    twins: dict[str, ModuleType] = {"python": _core_py}
    if _compiled is not None:
        twins["cython"] = _compiled
    return twins
