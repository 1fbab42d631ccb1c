"""The reference's data stays true to the code: every object and kernel the port map names exists, and
every method of the port checklist is in it.  (The docs themselves are built, and their examples run,
by ``make docs``, part of ``make test``.)"""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kafkalog import _core_py, _impl

ROOT = Path(__file__).resolve().parent.parent
PORT_MAP = ROOT / "docs" / "port_map.toml"
CHECKLIST = ROOT.parent / "shared" / "docs" / "port-checklist.md"


def resolve(path: str) -> Any:
    """The object a dotted path names: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


@pytest.fixture(scope="module")
def port_map() -> list[dict[str, Any]]:
    with open(PORT_MAP, "rb") as f:
        classes: list[dict[str, Any]] = tomllib.load(f)["class"]
    return classes


def test_every_kafkalog_object_in_the_port_map_exists(port_map: list[dict[str, Any]]) -> None:
    missing = []
    for cls in port_map:
        for entry in [cls, *cls.get("method", [])]:
            try:
                resolve(entry["kafkalog"])
            except (ImportError, AttributeError):
                missing.append(f"{cls['kafka']}.{entry['kafka']}: {entry['kafkalog']}")
    assert missing == []
    assert sum(len(cls.get("method", [])) for cls in port_map) >= 150


def test_every_kernel_in_the_port_map_exists_in_both_twins(port_map: list[dict[str, Any]]) -> None:
    kernels = {m["kernel"] for cls in port_map for m in cls.get("method", []) if m.get("kernel")}
    assert kernels, "the port map names no kernel"
    for name in sorted(kernels):
        assert callable(getattr(_core_py, name, None)), name
        for core in (_impl.core, *(importlib.import_module(f"kafkalog.{m}") for m in ("_core",)
                                   if "cython" in _impl.both())):
            assert callable(getattr(core, name, None)), (core.__name__, name)


def test_every_checklist_method_is_in_the_port_map(port_map: list[dict[str, Any]]) -> None:
    if not CHECKLIST.exists():
        pytest.skip(f"no port checklist at {CHECKLIST}")
    listed = {(cls["kafka"], m["kafka"]) for cls in port_map for m in cls.get("method", [])}
    wanted = set()
    for line in CHECKLIST.read_text().splitlines():
        found = re.match(r"\| (\w+) \| (.+) \|$", line)
        if found and found.group(1) != "class":
            wanted |= {(found.group(1), m.strip()) for m in found.group(2).split(",")}
    assert len(wanted) > 100
    assert sorted(wanted - listed) == []
