"""Safe rendering of transcript text: every piece of it is hostile.

- Markdown (assistant text, fold summaries): the text is HTML-escaped FIRST, then a small subset
  of markdown is turned into tags, then the result goes through nh3 with a short allow-list and
  http/https/mailto links only. `markdown_html()` is the one place in the project that marks
  transcript-derived HTML safe.
- ANSI output (tool results): parsed into (css classes, text) segments; the template prints the
  text with autoescaping, so nothing here produces HTML.
- Long blocks: a head and a tail, the rest loaded on request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Blocks longer than this show a head and a tail; the rest is loaded on request.
BLOCK_LIMIT = 3000
HEAD_CHARS = 2000
TAIL_CHARS = 600
# Markdown is rendered for text up to this size; above it the text is shown verbatim.
MARKDOWN_LIMIT = 200_000

ALLOWED_TAGS = {
    "p", "br", "strong", "em", "code", "pre", "a", "ul", "ol", "li", "blockquote",
    "h3", "h4", "h5", "h6", "hr", "del",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}}
URL_SCHEMES = {"http", "https", "mailto"}
_SAFE_URL = re.compile(r"^(https?://|mailto:)[^\s]*$", re.IGNORECASE)


def _sanitize(html: str) -> SafeString:
    # AUDITED: the only mark_safe on transcript-derived HTML. Its input was built from escaped
    # text, and nh3 (allow-listed tags, no style/event attributes, http/https/mailto only) has the
    # last word. Do not call mark_safe on transcript content anywhere else.
    cleaned = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # noqa: S308 - see the comment above


# --- markdown (escape first, then a small subset) -------------------------------------------

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ULIST = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_OLIST = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}&gt;\s?(.*)$")
_HR = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_LINK = re.compile(r"\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_AUTOLINK = re.compile(r"(?<![\"'=\w/])(https?://[^\s<>&\"']{1,2000}[^\s<>&\"'.,;:!?)\]])")


def _inline(text: str) -> str:
    """Inline markdown over already-escaped text. Code spans are protected from the rest."""
    stash: list[str] = []

    def keep(html: str) -> str:
        stash.append(html)
        return f"\x00{len(stash) - 1}\x00"

    text = _CODE_SPAN.sub(lambda m: keep(f"<code>{m.group(2).strip()}</code>"), text)

    def link(m: re.Match) -> str:
        label, url = m.group(1), m.group(2)
        if not _SAFE_URL.match(url):
            return m.group(0)  # javascript:, data:, relative tricks: left as plain text
        return keep(f'<a href="{url}">{label}</a>')

    text = _LINK.sub(link, text)
    text = _AUTOLINK.sub(lambda m: keep(f'<a href="{m.group(1)}">{m.group(1)}</a>'), text)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    text = _ITALIC.sub(r"<em>\1</em>", text)
    text = _STRIKE.sub(r"<del>\1</del>", text)
    return re.sub(r"\x00(\d+)\x00", lambda m: stash[int(m.group(1))], text)


def _markdown_to_html(source: str) -> str:
    lines = escape(source.replace("\r\n", "\n").replace("\x00", "")).split("\n")
    out: list[str] = []
    para: list[str] = []
    list_tag: str | None = None
    quote: list[str] = []

    def flush_para() -> None:
        if para:
            out.append("<p>" + "<br>".join(_inline(p) for p in para) + "</p>")
            para.clear()

    def close_list() -> None:
        nonlocal list_tag
        if list_tag:
            out.append(f"</{list_tag}>")
            list_tag = None

    def flush_quote() -> None:
        if quote:
            out.append("<blockquote>" + "<br>".join(_inline(q) for q in quote) + "</blockquote>")
            quote.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush_para(), close_list(), flush_quote()
            marker = fence.group(1)
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(marker):
                body.append(lines[i])
                i += 1
            out.append("<pre><code>" + "\n".join(body) + "</code></pre>")
            i += 1
            continue
        if not line.strip():
            flush_para(), close_list(), flush_quote()
            i += 1
            continue
        if m := _QUOTE.match(line):
            flush_para(), close_list()
            quote.append(m.group(1))
            i += 1
            continue
        flush_quote()
        if _HR.match(line):
            flush_para(), close_list()
            out.append("<hr>")
        elif m := _HEADING.match(line):
            flush_para(), close_list()
            level = min(6, len(m.group(1)) + 2)
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif (m := _ULIST.match(line)) or (m2 := _OLIST.match(line)):
            flush_para()
            tag = "ul" if m else "ol"
            if list_tag != tag:
                close_list()
                out.append(f"<{tag}>")
                list_tag = tag
            out.append(f"<li>{_inline((m or m2).group(1))}</li>")
        elif list_tag and line.startswith(("  ", "\t")):
            out.append(f"<br>{_inline(line.strip())}")  # continuation of a list item
        else:
            close_list()
            para.append(line)
        i += 1
    flush_para(), close_list(), flush_quote()
    return "\n".join(out)


def markdown_html(source: str) -> SafeString:
    """Markdown -> sanitized HTML. Raw HTML in the source is shown as text, never interpreted."""
    if len(source) > MARKDOWN_LIMIT:
        return _sanitize("<pre>" + escape(source) + "</pre>")
    return _sanitize(_markdown_to_html(source))


# --- ANSI ------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_BASIC = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]


@dataclass(frozen=True, slots=True)
class Segment:
    classes: str
    text: str


def has_ansi(text: str) -> bool:
    return "\x1b" in text


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def ansi_segments(text: str) -> list[Segment]:
    """Split terminal output into styled runs. Only SGR colours/weights are kept, as CSS classes
    from a fixed set; every other escape sequence is dropped. The text stays text."""
    segments: list[Segment] = []
    fg: str | None = None
    bg: str | None = None
    bold = dim = italic = underline = False
    pos = 0

    def emit(chunk: str) -> None:
        if not chunk:
            return
        classes = []
        if fg:
            classes.append(f"ansi-{fg}")
        if bg:
            classes.append(f"ansi-bg-{bg}")
        if bold:
            classes.append("ansi-bold")
        if dim:
            classes.append("ansi-dim")
        if italic:
            classes.append("ansi-italic")
        if underline:
            classes.append("ansi-underline")
        segments.append(Segment(" ".join(classes), chunk))

    for m in _ANSI.finditer(text):
        emit(text[pos : m.start()])
        pos = m.end()
        if m.group(2) != "m":
            continue
        codes = [int(c) if c.isdigit() else 0 for c in (m.group(1) or "0").split(";")]
        k = 0
        while k < len(codes):
            c = codes[k]
            if c == 0:
                fg = bg = None
                bold = dim = italic = underline = False
            elif c == 1:
                bold = True
            elif c == 2:
                dim = True
            elif c == 3:
                italic = True
            elif c == 4:
                underline = True
            elif c == 22:
                bold = dim = False
            elif c == 23:
                italic = False
            elif c == 24:
                underline = False
            elif 30 <= c <= 37:
                fg = _BASIC[c - 30]
            elif 90 <= c <= 97:
                fg = "bright-" + _BASIC[c - 90]
            elif c == 39:
                fg = None
            elif 40 <= c <= 47:
                bg = _BASIC[c - 40]
            elif 100 <= c <= 107:
                bg = _BASIC[c - 100]
            elif c == 49:
                bg = None
            elif c in (38, 48):  # 256-colour / truecolour: skip the parameters, keep no colour
                if k + 1 < len(codes) and codes[k + 1] == 5:
                    k += 2
                elif k + 1 < len(codes) and codes[k + 1] == 2:
                    k += 4
            k += 1
    emit(text[pos:])
    return segments


# --- long blocks -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Clip:
    head: str
    tail: str
    hidden: int  # characters left out between head and tail (0: the whole text is in head)

    @property
    def clipped(self) -> bool:
        return self.hidden > 0


def clip(text: str, limit: int = BLOCK_LIMIT) -> Clip:
    if len(text) <= limit:
        return Clip(text, "", 0)
    return Clip(text[:HEAD_CHARS], text[-TAIL_CHARS:], len(text) - HEAD_CHARS - TAIL_CHARS)


def tool_input_text(tool_input: Any, fallback: str = "") -> str:
    if tool_input is None:
        return fallback
    if isinstance(tool_input, str):
        return tool_input
    try:
        return json.dumps(tool_input, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(tool_input)


def first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
