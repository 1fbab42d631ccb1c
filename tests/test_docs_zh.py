"""The Chinese walkthroughs stay level with the English ones (issue 33): each ``docs/zh_CN/walkthrough/<page>.rst``
has its English twin's sections, at the same levels and in the same order, and its examples, block for block:
the same doctest code and the same expected output (a page's doctest group may carry a ``-zh`` suffix, and the
prose between the blocks is the translation's own), and every cross-reference target of the English page
(``:func:``, ``:class:``, ``:meth:``, ``:mod:``, ``:data:``, ``:attr:``, ``:ref:``).  A paragraph added to one
page and not the other is caught when it names something the other page does not; one that names nothing is
not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(p.name for p in (DOCS / "walkthrough").glob("*.rst"))
_UNDERLINE = re.compile(r"([-=~^\"'`#*+])\1{2,}")
_DIRECTIVE = re.compile(r"\.\. (doctest|testcode|testoutput)::\s*(\S*)")
# A role's text may run over a line break, and may be ``title <target>``; ``:doc:`` is left out, since each page
# links to its own twin by design.
_XREF = re.compile(r":(?:py:|std:)?(func|class|meth|mod|data|attr|ref):`([^`]+)`")
_EXPLICIT_TARGET = re.compile(r".*<([^<>]+)>", re.DOTALL)
# Cross-reference targets an English page may have and its Chinese twin not, page -> {target: why}.  Empty: every
# target so far is one the translation should carry too.
XREF_ALLOWED_MISSING: dict[str, dict[str, str]] = {}


def section_levels(text: str) -> list[str]:
    """The underline character of every section title, in order (the levels, whatever the titles say)."""
    lines = text.splitlines()
    return [lines[i][0] for i in range(1, len(lines))
            if _UNDERLINE.fullmatch(lines[i]) and lines[i - 1].strip() and not lines[i - 1].startswith(" ")]


def example_blocks(text: str) -> list[tuple[str, str, list[str]]]:
    """Every doctest block of a page: (directive, group without a ``-zh`` suffix, its lines, dedented)."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        found = _DIRECTIVE.fullmatch(lines[i].strip())
        if found is None or lines[i].startswith(" "):
            i += 1
            continue
        body: list[str] = []
        i += 1
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
            body.append(lines[i][3:])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        blocks.append((found.group(1), found.group(2).removesuffix("-zh"), body))
    return blocks


def xref_targets(text: str) -> set[str]:
    """The targets of a page's cross-reference roles: ``:meth:`~a.B.c``` gives ``a.B.c``, and
    ``:meth:`title <a.B.c>``` gives ``a.B.c`` (the role's kind is left out: the same target under another role is
    the same reference)."""
    targets = set()
    for found in _XREF.finditer(text):
        content = " ".join(found.group(2).split())
        explicit = _EXPLICIT_TARGET.fullmatch(content)
        target = explicit.group(1) if explicit else content
        targets.add(target.strip().removeprefix("~"))
    return targets


@pytest.mark.parametrize("page", PAGES)
def test_the_chinese_page_names_everything_the_english_one_names(page: str) -> None:
    english = xref_targets((DOCS / "walkthrough" / page).read_text(encoding="utf-8"))
    chinese = xref_targets((DOCS / "zh_CN" / "walkthrough" / page).read_text(encoding="utf-8"))
    allowed = XREF_ALLOWED_MISSING.get(page, {})
    assert english, "no cross-reference found in the English page: the pattern no longer matches its roles"
    missing = sorted(english - chinese - allowed.keys())
    assert not missing, f"the Chinese {page} lacks what the English one says about: {missing}"
    stale = sorted(allowed.keys() - (english - chinese))
    assert not stale, f"allowed to be missing from the Chinese {page}, and not missing: {stale}"


@pytest.mark.parametrize("page", PAGES)
def test_the_chinese_page_has_the_english_sections_and_examples(page: str) -> None:
    english = (DOCS / "walkthrough" / page).read_text(encoding="utf-8")
    chinese = (DOCS / "zh_CN" / "walkthrough" / page).read_text(encoding="utf-8")
    assert section_levels(chinese) == section_levels(english)
    ours, theirs = example_blocks(chinese), example_blocks(english)
    assert len(ours) == len(theirs), f"{len(ours)} example blocks in Chinese, {len(theirs)} in English"
    for n, (zh, en) in enumerate(zip(ours, theirs, strict=True)):
        assert zh == en, f"example block {n + 1} differs"


def test_every_english_walkthrough_has_a_chinese_twin() -> None:
    assert PAGES and sorted(p.name for p in (DOCS / "zh_CN" / "walkthrough").glob("*.rst")) == PAGES


def test_a_missing_example_or_section_is_seen() -> None:
    page = ("Title\n=====\n\nText.\n\nPart\n----\n\n.. doctest:: g-zh\n\n   >>> 1 + 1\n   2\n\n"
            "More text.\n")
    assert section_levels(page) == ["=", "-"]
    assert example_blocks(page) == [("doctest", "g", [">>> 1 + 1", "2"])]
    assert section_levels(page.replace("Part\n----\n\n", "")) == ["="]
    assert example_blocks(page.replace("   2\n", "   3\n")) != example_blocks(page)


def test_a_missing_cross_reference_is_seen() -> None:
    page = ("See :class:`~kafkalog.a.B`, :meth:`B.c(..., x=1)\n   <kafkalog.a.B.c>`, :py:func:`kafkalog.a.d`\n"
            "and :ref:`the part <part-label>`; :doc:`/walkthrough/log` is each page's own.\n")
    assert xref_targets(page) == {"kafkalog.a.B", "kafkalog.a.B.c", "kafkalog.a.d", "part-label"}
    assert xref_targets(page.replace(":meth:`B.c(..., x=1)\n   <kafkalog.a.B.c>`", "B.c")) == {
        "kafkalog.a.B", "kafkalog.a.d", "part-label"}
