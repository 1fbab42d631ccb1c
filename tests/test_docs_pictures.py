"""The reference's pictures, its tour page and its Chinese navigation (``docs/_ext``).

The pictures are drawn from logs kafkalog writes and checked against kafkalog's own reading of them; these
tests check what they show (the numbers a learner reads off them) and that a picture which would
disagree with kafkalog stops the build.  The tour directive is checked on the real ``kafkalog demo``
output, and the Chinese navigation by building a small two-language project with the same extension and
theme.  The whole reference is built, with these in it, by ``make docs``.
"""

from __future__ import annotations

import re
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kafkalog.record import MemoryRecords

EXT = Path(__file__).resolve().parent.parent / "docs" / "_ext"
sys.path.insert(0, str(EXT))

import kafkalog_pictures  # noqa: E402
import kafkalog_svg  # noqa: E402
import kafkalog_tour  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def _texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return [t.text or "" for t in root.iter(f"{SVG}text")]


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pictures")
    with kafkalog_pictures.quiet_kafkalog():
        for name, draw in kafkalog_pictures.PICTURES.items():
            draw(out / name)
    return {name: out / name for name in kafkalog_pictures.PICTURES}


def misplaced_texts(path: Path) -> list[str]:
    """The texts of an SVG picture that do not fit where they are drawn: past the picture's left edge or
    within :data:`kafkalog_svg.MARGIN` of its right one, or closer than :data:`kafkalog_svg.PADDING` to a side
    of the box (a ``rect``) their anchor point is in.  Widths are measured as the drawing measures them
    (:func:`kafkalog_svg.text_width`)."""
    root = ET.parse(path).getroot()
    width = float(root.attrib["width"])
    boxes = [tuple(float(r.attrib[k]) for k in ("x", "y", "width", "height")) for r in root.iter(f"{SVG}rect")
             if r.attrib.get("width") != "100%"]
    wrong = []
    for t in root.iter(f"{SVG}text"):
        if "transform" in t.attrib:  # turned a quarter: its width runs up the picture
            continue
        x, y, size = float(t.attrib["x"]), float(t.attrib["y"]), float(t.attrib["font-size"])
        text, anchor = t.text or "", t.attrib.get("text-anchor", "start")
        left, right = kafkalog_svg.extent(x, text, size, anchor, mono=t.attrib["font-family"] == kafkalog_svg.MONO,
                                          bold=t.attrib.get("font-weight") == "bold")
        if left < 0 or right > width - kafkalog_svg.MARGIN:
            wrong.append(f"{path.name}: {text!r} spans {left:.1f}..{right:.1f} of a picture {width:.0f} wide")
        inside = [b for b in boxes if b[0] <= x <= b[0] + b[2] and b[1] <= y <= b[1] + b[3]]
        if inside:
            bx, _by, bw, _bh = min(inside, key=lambda b: b[2] * b[3])  # the innermost box
            room = kafkalog_svg.PADDING - 0.1  # coordinates are written to a tenth of a pixel
            if left < bx + room or right > bx + bw - room:
                wrong.append(f"{path.name}: {text!r} spans {left:.1f}..{right:.1f}, its box {bx:.1f}..{bx + bw:.1f}")
    return wrong


def test_every_text_fits_its_box_and_the_picture(drawn: dict[str, Path]) -> None:
    assert [t for path in drawn.values() for t in misplaced_texts(path)] == []


def test_a_text_wider_than_its_box_or_at_the_edge_is_seen(tmp_path: Path) -> None:
    """The two faults of the transactions picture before its boxes were measured: a marker's name as wide
    as its box, and the log end's label at the picture's right edge."""
    font = f'font-family="{kafkalog_svg.SANS}"'
    (tmp_path / "t.svg").write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">'
        f'<rect x="10" y="10" width="40" height="20"/>'
        f'<text x="30" y="25" font-size="9" text-anchor="middle" {font}>COMMIT</text>'
        f'<text x="60" y="25" font-size="9" text-anchor="middle" {font}>fits</text>'
        f'<text x="170" y="80" font-size="12" text-anchor="middle" font-weight="bold" {font}>LEO = 14</text>'
        "</svg>")
    wrong = misplaced_texts(tmp_path / "t.svg")
    assert len(wrong) == 2 and "'COMMIT'" in wrong[0] and "its box 10.0..50.0" in wrong[0]
    assert "'LEO = 14'" in wrong[1] and "of a picture 200 wide" in wrong[1]


@pytest.fixture(scope="module")
def pictures(drawn: dict[str, Path]) -> dict[str, list[str]]:
    return {name: _texts(path) for name, path in drawn.items()}


def test_batch_fields_decode_every_byte_of_a_batch_kafkalog_built() -> None:
    data = bytes(MemoryRecords.with_records([(b"key", b"value", 1000, [("h", b"x")]), (None, None, 1001)],
                                            base_offset=40, producer_id=9, base_sequence=3).buffer)
    fields = kafkalog_pictures.batch_fields(data)
    # Contiguous: each field starts where the last ended, and together they are the batch.
    assert [f.start for f in fields[1:]] == [f.start + len(f.raw) for f in fields[:-1]]
    assert b"".join(f.raw for f in fields) == data
    by_name = {f.name: f for f in fields if f.group.startswith("batch")}
    assert by_name["baseOffset"].meaning.startswith("40:")
    assert by_name["producerId"].meaning.startswith("9:")
    assert by_name["crc"].meaning.startswith(f"0x{struct.unpack_from('>I', data, 17)[0]:08x}")
    assert [f.raw for f in fields if f.name in ("key", "value", "header key", "header value")] == \
        [b"key", b"value", b"h", b"x"]
    # The second record's null key and value are -1 lengths and no bytes.
    second = [f for f in fields if f.group == "record 1"]
    assert [f.meaning.split()[0] for f in second if f.name in ("keyLength", "valueLength")] == ["-1", "-1"]


def test_batch_fields_refuse_a_batch_whose_length_is_wrong() -> None:
    data = bytearray(MemoryRecords.with_records([(b"k", b"v", 1)]).buffer)
    data += b"\x00"  # one byte more than batchLength says
    with pytest.raises(RuntimeError, match="batchLength"):
        kafkalog_pictures.batch_fields(bytes(data))


def test_the_pictures_show_what_kafkalog_did(pictures: dict[str, list[str]]) -> None:
    layout = " ".join(pictures["batch-layout.svg"])
    assert "4001: an idempotent producer" in layout and "'order-7'" in layout and "'t-42'" in layout
    read = pictures["read-path.svg"]
    title = next(t for t in read if t.startswith("Log.read("))
    target = int(re.match(r"Log\.read\((\d+)\)", title).group(1))  # type: ignore[union-attr]
    assert any(t.startswith(f"Log.read({target}) starts at byte") for t in read)
    recovery = " ".join(pictures["recovery.svg"])
    assert "deleted: it follows a truncated segment" in recovery
    assert re.search(r"segment \d+ truncated by \d+ bytes at the first bad batch", recovery)
    txn = pictures["transactions.svg"]
    # P7 aborted at 2-7, P9 open from 9, the last batch (13) past the high watermark.
    assert {"LSO = 9", "HW = 13", "LEO = 14"} <= set(txn)
    assert "P7's transaction: aborted" in txn and "P9's transaction: still open" in txn
    offsets = pictures["offsets.svg"]
    # Log start raised to 4, P5's open transaction from 6, the smaller follower at 13, 17 records written.
    assert {"log start = 4", "LSO = 6", "HW = 13", "LEO = 17"} <= set(offsets)
    assert "follower B: 13" in offsets and "follower A: 15" in offsets


def test_a_picture_that_disagrees_with_kafkalog_stops_the_build() -> None:
    with pytest.raises(RuntimeError, match="kafkalog_pictures: the picture says so"):
        kafkalog_pictures.check(False, "the picture says so")


def test_the_tour_directive_cuts_the_real_demo_output_into_its_steps() -> None:
    steps = kafkalog_tour.tour_steps(kafkalog_tour.tour_output())
    assert sorted(steps) == list(range(1, 8))
    for number, text in steps.items():
        assert text.startswith(f"== {number}. ")
        assert f"== {number + 1}. " not in text
    assert "truncated" in steps[6] and "Dumping" in steps[7]


def test_the_chinese_pages_get_a_chinese_navigation_and_a_language_switch(tmp_path: Path) -> None:
    sphinx_app = pytest.importorskip("sphinx.application")
    pytest.importorskip("furo")
    src = tmp_path / "src"
    (src / "zh_CN").mkdir(parents=True)
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = ['kafkalog_i18n']\nhtml_theme = 'furo'\n"
        f"templates_path = [{str(EXT.parent / '_templates')!r}]\n"
        "html_sidebars = {'**': ['sidebar/brand.html', 'sidebar/language.html', 'sidebar/search.html',"
        " 'sidebar/navigation.html']}\n", encoding="utf-8")
    (src / "index.rst").write_text("Home\n====\n\n.. toctree::\n   :caption: English\n\n   guide\n   zh_CN/index\n",
                                   encoding="utf-8")
    (src / "guide.rst").write_text("Guide\n=====\n\nText.\n", encoding="utf-8")
    (src / "other.rst").write_text(":orphan:\n\nOther\n=====\n", encoding="utf-8")
    (src / "zh_CN" / "index.rst").write_text("中文\n====\n\n.. toctree::\n   :caption: 导读\n\n   guide\n",
                                             encoding="utf-8")
    (src / "zh_CN" / "guide.rst").write_text("指南\n====\n\n正文分成\n两行，``代码\n不变``。\n", encoding="utf-8")  # noqa: RUF001
    out = tmp_path / "html"
    app = sphinx_app.Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html",
                            status=None, warning=None, freshenv=True)
    app.build()
    zh = (out / "zh_CN" / "guide.html").read_text(encoding="utf-8")
    en = (out / "guide.html").read_text(encoding="utf-8")
    assert '<html class="no-js" lang="zh-CN"' in zh
    # A line break between two Chinese characters would show as a space: it is gone, but not inside a literal.
    assert "正文分成两行，" in zh and "代码不变" not in zh  # noqa: RUF001
    assert '<span class="caption-text">导读</span>' in zh and "English</span>" not in zh
    assert 'placeholder="搜索"' in zh
    assert 'href="../guide.html" hreflang="en"' in zh
    # Previous and next stay among the Chinese pages: the Chinese start page has no English "previous".
    assert "上一页" in zh and "Guide" not in (out / "zh_CN" / "index.html").read_text(encoding="utf-8")
    assert 'href="zh_CN/guide.html" hreflang="zh-CN"' in en and 'lang="en"' in en
    # A page without a Chinese twin links to the Chinese start page.
    assert 'href="zh_CN/index.html" hreflang="zh-CN"' in (out / "other.html").read_text(encoding="utf-8")
