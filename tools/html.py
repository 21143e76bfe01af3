"""HTML for a model: as Markdown, or as the text a reader would see (reference §6.10 step 7).

Markdown follows OpenCode's Turndown settings: ATX headings, fenced code (with the
language from a ``language-*`` class), ``-`` bullets, ``---`` rules, ``*`` emphasis,
and script/style/meta/link (plus noscript) dropped with their content.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from bs4.element import (
    CData,
    Comment,
    Declaration,
    Doctype,
    NavigableString,
    PageElement,
    ProcessingInstruction,
    Tag,
)
from markdownify import ATX, MarkdownConverter

MARKDOWN_DROPPED = ("script", "style", "meta", "link", "noscript")
TEXT_SKIPPED = ("script", "style", "noscript", "iframe", "object", "embed")

# Elements that start a new paragraph (blank line) or a new line in visible text.
_HEADINGS = {f"h{level}" for level in range(1, 7)}
_SECTIONS = {"header", "footer", "main", "article", "section", "aside", "nav", "address"}
_BLOCKS = {"p", "pre", "blockquote", "table", "hr", "figure", "form", "fieldset", "details"}
_PARAGRAPH = frozenset(_HEADINGS | _SECTIONS | _BLOCKS)
# Lists are lines, not paragraphs, so nested lists stay tight.
_LISTS = {"ul", "ol", "dl", "li", "dt", "dd"}
_OTHER_LINES = {"div", "tr", "caption", "figcaption", "summary", "title", "option", "legend"}
_LINE = frozenset(_LISTS | _OTHER_LINES)
_CELL = frozenset(("td", "th"))
_NOT_TEXT = (Comment, Doctype, Declaration, ProcessingInstruction, CData)
_SPACE = re.compile(r"\s+")


def _code_language(pre: Tag) -> str:
    code = pre.find("code")
    for node in (code, pre):
        if isinstance(node, Tag):
            for name in node.get_attribute_list("class"):
                if name and name.startswith("language-"):
                    return name.removeprefix("language-")
    return ""


class _Converter(MarkdownConverter):
    def __init__(self) -> None:
        super().__init__(
            heading_style=ATX,
            bullets="-",
            strong_em_symbol="*",
            code_language_callback=_code_language,
            # Collapse source line breaks inside text, as Turndown does; no re-wrapping.
            wrap=True,
            wrap_width=None,
        )


def html_to_markdown(html: str) -> str:
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(MARKDOWN_DROPPED):
        tag.decompose()
    try:
        markdown = _Converter().convert_soup(soup)
    except RecursionError:
        # markdownify recurses per nesting level; absurdly deep pages still get
        # their words through, just without the Markdown structure.
        return _visible_text(soup)
    return markdown.strip()


def html_to_text(html: str) -> str:
    """The visible text: skipped elements removed, whitespace tidied, trimmed."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(TEXT_SKIPPED):
        tag.decompose()
    return _visible_text(soup)


class _Text:
    """Collects words into lines, with at most one blank line between blocks."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.line: list[str] = []
        self.space = False
        self.want_blank = False

    def words(self, text: str) -> None:
        if not text:
            return
        if text[0].isspace() and self.line:
            self.space = True
        collapsed = _SPACE.sub(" ", text).strip()
        if collapsed:
            self._put(collapsed)
            self.space = text[-1].isspace()

    def raw(self, text: str) -> None:
        """Preformatted text keeps its spaces and line breaks."""
        first, *rest = text.split("\n")
        self._put(first)
        for line in rest:
            self.break_line()
            self._put(line)

    def _put(self, text: str) -> None:
        if not text:
            return
        if not self.line:
            if self.lines and self.want_blank and self.lines[-1] != "":
                self.lines.append("")
            self.want_blank = False
        elif self.space:
            self.line.append(" ")
        self.line.append(text)
        self.space = False

    def break_line(self, forced: bool = False) -> None:
        if self.line:
            self.lines.append("".join(self.line).rstrip())
        elif forced and self.lines and self.lines[-1] != "":
            self.lines.append("")  # <br><br> leaves one blank line, never more
        self.line = []
        self.space = False

    def paragraph(self) -> None:
        self.break_line()
        self.want_blank = True

    def cell(self) -> None:
        if self.line:
            self.space = True

    def result(self) -> str:
        self.break_line()
        return "\n".join(self.lines).strip()


def _visible_text(soup: BeautifulSoup) -> str:
    # Walked iteratively (no recursion), so nesting depth does not matter.
    out = _Text()
    stack: list[tuple[PageElement, bool]] = [(soup, False)]
    while stack:
        node, leaving = stack.pop()
        if isinstance(node, NavigableString):
            if isinstance(node, _NOT_TEXT):
                continue
            if node.find_parent("pre") is not None:
                out.raw(str(node))
            else:
                out.words(str(node))
            continue
        if not isinstance(node, Tag):
            continue
        name = node.name
        if name == "br":
            out.break_line(forced=True)
            continue
        if name in _PARAGRAPH:
            out.paragraph()
        elif name in _LINE:
            out.break_line()
        elif name in _CELL:
            out.cell()
        if not leaving:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.contents))
    return out.result()
