"""The Chinese pages' navigation: one build, two languages.

The reference is built once, in English (``language = "en"``); the pages under ``zh_CN/`` are Chinese.
For those pages this extension changes what the theme (Furo) draws around the text, at
``html-page-context``, after Furo has filled in its own values:

- the sidebar lists the Chinese pages, by the captions of ``zh_CN/index``'s toctrees, instead of the
  English tree, and the project name in it leads to ``zh_CN/index``;
- the theme's words (Search, Next, Previous, On this page, ...) come from Sphinx's ``zh_CN`` catalog,
  and for Furo's own words, which Furo does not translate, from :data:`THEME_WORDS`;
- ``<html lang>`` says ``zh-CN``, so a browser picks Chinese fonts and a reader Chinese voices;
- the previous and next links at the bottom stay among the Chinese pages;
- a line break in the source between two Chinese characters is removed from the text (:func:`join_cjk_lines`):
  reStructuredText keeps it, and a browser shows a line break inside a paragraph as a space, which Chinese text
  does not have.  Code, literals and raw markup keep their line breaks.

Every page, in either language, gets a language switch in the sidebar (``_templates/sidebar/language.html``):
the same page in the other language where it exists, else the other language's start page.
"""

from __future__ import annotations

import gettext
import re
from html import escape
from pathlib import Path
from typing import Any

import sphinx.locale
from docutils import nodes
from furo.navigation import get_navigation_tree
from sphinx import addnodes
from sphinx.application import Sphinx

ZH = "zh_CN/"
ZH_INDEX = "zh_CN/index"

#: Furo's words that Sphinx's catalog does not have.
THEME_WORDS = {
    "Back to top": "回到顶部", "Made with ": "使用 ", "On this page": "本页目录", "Contents": "目录",
    "Hide navigation sidebar": "隐藏导航栏", "Hide table of contents sidebar": "隐藏目录栏",
    "Toggle site navigation sidebar": "显示或隐藏导航栏", "Toggle table of contents sidebar": "显示或隐藏目录栏",
    "Toggle Light / Dark / Auto color theme": "切换浅色 / 深色 / 自动配色",
    "Toggle navigation menu": "显示或隐藏导航菜单",
    "Skip to content": "跳到正文", "Auto light/dark, in light mode": "自动配色，当前为浅色",  # noqa: RUF001
    "Light mode": "浅色", "Dark mode": "深色",
    "Auto light/dark, in dark mode": "自动配色，当前为深色",  # noqa: RUF001
    "Copyright": "版权所有", "Search": "搜索", "Next": "下一页", "Previous": "上一页", "Home": "首页",
    "Index": "索引", "View this page": "查看本页", "Edit this page": "编辑本页",
    '<a href="https://www.sphinx-doc.org/">Sphinx</a> and ': '<a href="https://www.sphinx-doc.org/">Sphinx</a> 和 ',
    "Copyright &#169; %(copyright)s": "版权所有 &#169; %(copyright)s",
}


class _Chinese(gettext.NullTranslations):
    """Sphinx's zh_CN catalog, with :data:`THEME_WORDS` first."""

    def __init__(self) -> None:
        super().__init__()
        locale_dir = Path(sphinx.locale.__file__).parent
        self.catalog = gettext.translation("sphinx", str(locale_dir), ["zh_CN"], fallback=True)

    def gettext(self, message: str) -> str:
        return THEME_WORDS.get(message) or self.catalog.gettext(message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return self.catalog.ngettext(singular, plural, n)


def counterpart(docname: str, found: set[str]) -> str:
    """The same page in the other language, or the other language's start page."""
    if docname.startswith(ZH):
        english = docname[len(ZH):]
        return english if english in found else "index"
    return ZH + docname if ZH + docname in found else ZH_INDEX


def _zh_navigation(app: Sphinx, pagename: str) -> str:
    """The sidebar tree of a Chinese page: ``zh_CN/index``'s toctrees, each under its caption, as the
    HTML Furo turns into its collapsible navigation."""
    env = app.env
    builder = app.builder
    parts = []
    for toctree in env.get_doctree(ZH_INDEX).findall(addnodes.toctree):
        caption = toctree.get("caption")
        if caption:
            parts.append(f'<p class="caption" role="heading"><span class="caption-text">{escape(caption)}</span></p>')
        parts.append("<ul>")
        for title, ref in toctree["entries"]:
            text = title or (env.titles[ref].astext() if ref in env.titles else ref)
            current = ' current current-page' if ref == pagename else ""
            href = "#" if ref == pagename else builder.get_relative_uri(pagename, ref)
            parts.append(f'<li class="toctree-l1{current}"><a class="reference internal{current}" '
                         f'href="{href}">{escape(text)}</a></li>')
        parts.append("</ul>")
    return str(get_navigation_tree("\n".join(parts)))


def _on_page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                     doctree: Any) -> None:
    found = set(app.env.found_docs)
    if ZH_INDEX not in found:
        return
    other = counterpart(pagename, found)
    chinese = pagename.startswith(ZH)
    context["kafkalog_other_language"] = {
        "href": app.builder.get_relative_uri(pagename, other),
        "lang": "en" if chinese else "zh-CN",
        "label": "English" if chinese else ("中文" if other != ZH_INDEX else "中文导读"),
    }
    if not chinese:
        return
    translations = _Chinese()
    context["language"] = "zh-CN"
    context["gettext"] = translations.gettext
    context["_"] = translations.gettext
    context["ngettext"] = translations.ngettext
    context["master_doc"] = context["root_doc"] = ZH_INDEX
    context["docstitle"] = "kafkalog 中文导读"
    context["furo_navigation_tree"] = _zh_navigation(app, pagename)
    # Previous and next stay among the Chinese pages: the first one's "previous" in the global order is
    # the last English page.
    _parent, previous, following = app.env.collect_relations().get(pagename, [None, None, None])
    for key, docname in (("prev", previous), ("next", following)):
        if docname is not None and not docname.startswith(ZH):
            context[key] = None


#: A line break (with the spaces around it) between two characters of the CJK ideographs, CJK punctuation or
#: full-width forms: Chinese text has no space there.
_CJK = r"\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_LINE_BREAK = re.compile(rf"(?<=[{_CJK}])[ \t]*\n[ \t]*(?=[{_CJK}])")


def join_cjk_lines(text: str) -> str:
    """``text`` with every line break between two Chinese characters removed."""
    return _CJK_LINE_BREAK.sub("", text)


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    if not app.env.docname.startswith(ZH):
        return
    for text in list(doctree.findall(nodes.Text)):
        parent = text.parent
        if parent is None or isinstance(parent, (nodes.literal_block, nodes.literal, nodes.raw,
                                                 nodes.doctest_block, nodes.comment)):
            continue
        joined = join_cjk_lines(str(text))
        if joined != str(text):
            parent.replace(text, nodes.Text(joined))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", _on_doctree_read)
    # After Furo's own handler (priority 500), which computes the navigation this replaces.
    app.connect("html-page-context", _on_page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
