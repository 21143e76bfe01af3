"""HTML for a model: as Markdown, or as the text a reader would see (reference §6.10 step 7).

Markdown comes from ``html-to-markdown`` (Rust; about 5x faster than OpenCode's
Turndown on a 2.8 MB page, see ``bench/webfetch_big.py``) with Turndown's settings as
OpenCode sets them: ATX headings, fenced code (with the language from a ``language-*``
class), ``-`` bullets, ``---`` rules, ``*`` emphasis, and script/style/meta/link (plus
noscript and template) dropped with their content. Its parser gives up on absurdly
deep nesting; such a page comes back as its visible text.

Visible text is collected in one pass of the standard library's streaming
``HTMLParser`` (no tree, so no depth limit and linear time): skipped elements are
dropped with their content, block elements start new lines or paragraphs.
"""

from __future__ import annotations

import re
from functools import cache
from html.parser import HTMLParser
from typing import Any

MARKDOWN_DROPPED = ("script", "style", "meta", "link", "noscript", "template")
# embed is void (no content to skip); the others hold content a reader does not see.
TEXT_SKIPPED = frozenset(("script", "style", "noscript", "iframe", "object", "template"))

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
_SPACE = re.compile(r"\s+")


@cache
def _markdown_options() -> Any:
    # Imported on first use: the Rust extension costs ~10 ms to load, which a sidecar
    # that never fetches a page should not pay at startup.
    import html_to_markdown

    return html_to_markdown.ConversionOptions(
        heading_style="atx",
        bullets="-",
        strong_em_symbol="*",
        code_block_style="backticks",
        newline_style="spaces",
        autolinks=False,
        extract_metadata=False,
        # Keep navigation and forms: Turndown does, and links are what a model follows.
        preprocessing=html_to_markdown.PreprocessingOptions(enabled=False),
        exclude_selectors=list(MARKDOWN_DROPPED),
    )


def html_to_markdown(html: str) -> str:
    import html_to_markdown as converter

    options = _markdown_options()
    try:
        markdown = (converter.convert(html, options).content or "").strip()
    except converter.ConversionError:
        return html_to_text(html)
    if not markdown:  # nothing, or nesting past the parser's depth limit
        return html_to_text(html)
    return markdown


def html_to_text(html: str) -> str:
    """The visible text: skipped elements removed, whitespace tidied, trimmed."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    return parser.out.result()


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


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = _Text()
        self.skipping = 0  # depth inside elements whose content is not shown
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in TEXT_SKIPPED:
            self.skipping += 1
        elif not self.skipping:
            if tag == "pre":
                self.pre += 1
            self._block(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.skipping:
            self._block(tag)  # <br/>, <hr/>; a self-closed element has no content

    def handle_endtag(self, tag: str) -> None:
        if tag in TEXT_SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif not self.skipping:
            if tag == "pre":
                self.pre = max(0, self.pre - 1)
            if tag != "br":  # </br> is read as <br> by browsers; once is enough here
                self._block(tag)

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if self.pre:
            self.out.raw(data)
        else:
            self.out.words(data)

    def _block(self, tag: str) -> None:
        if tag == "br":
            self.out.break_line(forced=True)
        elif tag in _PARAGRAPH:
            self.out.paragraph()
        elif tag in _LINE:
            self.out.break_line()
        elif tag in _CELL:
            self.out.cell()
