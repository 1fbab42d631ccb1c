"""The reference's data stays true to the code: every object and kernel the port map names exists, and
every method of the port checklist is in it; and the built reference holds together: every local link and
image of every page reaches a file of the build, and every ``#anchor`` an element of its page.  (The docs'
examples run by ``make docs``, part of ``make test``.)"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import tomllib
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

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


@pytest.fixture(scope="session")
def built_html() -> Path:
    """The whole reference built as ``make docs`` builds it (HTML, warnings as errors), once a session.

    It is built where ``make docs`` builds it, so the ``docs`` target that ``make test`` runs after pytest
    finds an up-to-date build and only checks it; a run with ``KAFKALOG_DOCS_OUT`` set builds there."""
    pytest.importorskip("sphinx")
    pytest.importorskip("furo")
    out = Path(os.environ.get("KAFKALOG_DOCS_OUT", ROOT / "docs" / "_build" / "html"))
    done = subprocess.run([sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-q", "-b", "html",
                           str(ROOT / "docs"), str(out)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


class _Page(HTMLParser):
    """A built page's local links and images (tag, attribute, URL) and the ids it defines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v for k, v in attrs if v is not None}
        if "id" in found:
            self.ids.add(found["id"])
        if tag == "a" and "name" in found:
            self.ids.add(found["name"])
        for attribute in ("href", "src"):
            url = found.get(attribute)
            if url is not None and not urlsplit(url).scheme and not url.startswith("//"):
                self.links.append((tag, attribute, url))


def broken_links(html: Path) -> list[str]:
    """Every local ``href`` and ``src`` of every page under ``html`` that names a file the build does not
    have, or an ``#anchor`` that its target page does not define."""
    pages: dict[Path, _Page] = {}
    for path in sorted(html.rglob("*.html")):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    broken = []
    for path, page in pages.items():
        for tag, attribute, url in page.links:
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            where = f"{path.relative_to(html.resolve())}: <{tag} {attribute}={url!r}>"
            if not target.is_relative_to(html.resolve()) or not target.exists():
                broken.append(f"{where}: no file {target}")
            elif target.is_dir():
                broken.append(f"{where}: a directory")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in pages[target].ids:
                broken.append(f"{where}: no #{parts.fragment} in {target.name}")
    return broken


@pytest.mark.slow
def test_every_local_link_of_the_built_reference_reaches_its_file_and_anchor(built_html: Path) -> None:
    assert len(list(built_html.rglob("*.html"))) > 20
    assert broken_links(built_html) == []


def test_the_link_checker_sees_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.html").write_text('<p id="here"><a href="sub/b.html#there">b</a> <a href="#here">me</a> '
                                     '<img src="_images/x.svg"> <a href="https://example.invalid/">out</a></p>')
    (tmp_path / "sub" / "b.html").write_text('<a href="../a.html#nowhere">a</a> <a href="../a.html#here">a</a> '
                                             '<span id="there"></span>')
    assert broken_links(tmp_path) == [
        f"a.html: <img src='_images/x.svg'>: no file {tmp_path.resolve() / '_images' / 'x.svg'}",
        "sub/b.html: <a href='../a.html#nowhere'>: no #nowhere in a.html",
    ]


def _unbreakable_runs(html: str) -> list[str]:
    """The runs of text in ``html`` that a browser may not wrap inside (with the reference's CSS, which
    forbids mid-word breaks in tables): text between spaces, hyphens and ``<wbr>``s, the other markup dropped."""
    text = unescape(re.sub(r"<[^>]*>", "", html.replace("<wbr>", " ")))
    return text.replace("-", "- ").split()


@pytest.mark.slow
@pytest.mark.parametrize("page", ["port-map.html", "spark.html", "clients.html"])
def test_table_identifiers_wrap_at_their_word_boundaries(built_html: Path, page: str) -> None:
    """A name in a table (a Kafka method, a dotted class path, a Kafka source path, an option) can wrap at
    its dots, slashes, underscores and camelCase humps, so no column must be wider than a short word."""
    tables = re.findall(r"<table.*?</table>", (built_html / page).read_text(encoding="utf-8"), flags=re.S)
    longest = max((run for table in tables for run in _unbreakable_runs(table)), key=len, default="")
    assert tables and len(longest) <= 24, longest


@pytest.mark.slow
def test_the_help_blocks_fit_the_text_column_or_wrap(built_html: Path) -> None:
    """Each ``--help`` of the command line page is formatted to the width the text column holds on a wide
    screen, and marked so that a narrow screen wraps it (``kafkalog.css``) rather than scrolling it."""
    page = (built_html / "cli.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<div class="kafkalog-cli-help[^"]*"><div class="highlight"><pre>(.*?)</pre>', page,
                        flags=re.S)
    assert len(blocks) >= 7  # kafkalog and each of its commands
    assert all(text.startswith("<span></span>usage: kafkalog") for text in blocks)
    lines = [unescape(re.sub(r"<[^>]*>", "", line)) for text in blocks for line in text.splitlines()]
    assert max(len(line) for line in lines) <= 80
    css = (built_html / "_static" / "kafkalog.css").read_text(encoding="utf-8")
    assert "div.kafkalog-cli-help pre { white-space: pre-wrap; }" in css
