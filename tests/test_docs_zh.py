"""The Chinese walkthroughs stay level with the English ones (issue 33): each ``docs/zh_CN/walkthrough/<page>.rst``
has its English twin's sections, at the same levels and in the same order, and its examples, block for block:
the same doctest code and the same expected output (a page's doctest group may carry a ``-zh`` suffix, and the
prose between the blocks is the translation's own).  A paragraph added to one page and not the other is not
caught here; a section or an example is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(p.name for p in (DOCS / "walkthrough").glob("*.rst"))
_UNDERLINE = re.compile(r"([-=~^\"'`#*+])\1{2,}")
_DIRECTIVE = re.compile(r"\.\. (doctest|testcode|testoutput)::\s*(\S*)")


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
