"""Safe rendering of transcript text: every piece of it is hostile.

- Markdown (assistant text, fold summaries): markdown-it-py (CommonMark + tables, strikethrough,
  linkify) with raw HTML turned off, so HTML in the source is escaped text; the result then goes
  through nh3 with a short allow-list and http/https/mailto links only. `markdown_html()` is the one place in the project that marks
  transcript-derived HTML safe.
- ANSI output (tool results): parsed into (css classes, text) segments; the template prints the
  text with autoescaping, so nothing here produces HTML.
- Long blocks: a head and a tail, the rest loaded on request.
"""

from __future__ import annotations

import functools
import json
import re
import threading
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
    "h3", "h4", "h5", "h6", "hr", "del", "s", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}


# Highlighted code (pygments, classes only): an ordered list of lines of spans; the browser numbers
# the lines (`start`, and `value` where the file's own numbers jump), so a line costs `<li>` and
# `</li>`, not a table row with a number cell (issue 23: 2,800 rows made a 900 KB fragment).
CODE_TAGS = {"ol", "li", "span"}
CODE_ATTRIBUTES = {"ol": {"class", "start"}, "li": {"value"}, "span": {"class"}}
_WHITESPACE_SPAN = re.compile(r'<span class="w">([^<]*)</span>')


def _sanitize(html: str, tags: set[str] = ALLOWED_TAGS, attributes: dict = ALLOWED_ATTRIBUTES) -> SafeString:
    # AUDITED: the only mark_safe on transcript-derived HTML. Its input was built by markdown-it
    # (raw HTML off) or pygments (which escapes every token), and nh3 (allow-listed tags, no
    # style/event attributes, http/https/mailto only) has the last word. Do not call mark_safe on
    # transcript content anywhere else.
    cleaned = nh3.clean(
        html,
        tags=tags,
        attributes=attributes,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # noqa: S308 - see the comment above


# --- markdown (markdown-it-py with raw HTML off, then nh3) ------------------------------------


def _heading_open(self, tokens, idx, options, env):
    # Headings inside a transcript sit under the page's own h1/h2: # -> h3 ... #### -> h6.
    token = tokens[idx]
    token.tag = f"h{min(6, int(token.tag[1]) + 2)}"
    return self.renderToken(tokens, idx, options, env)


def _heading_close(self, tokens, idx, options, env):
    token = tokens[idx]
    token.tag = f"h{min(6, int(token.tag[1]) + 2)}"
    return self.renderToken(tokens, idx, options, env)


def _glob_star(state, silent: bool) -> bool:
    """A run of `*` inside a path or glob (assets/**/*.css, *.py, src/*/x) is text, not emphasis."""
    src, pos = state.src, state.pos
    if src[pos] != "*":
        return False
    end = pos
    while end < state.posMax and src[end] == "*":
        end += 1
    before = src[pos - 1] if pos > 0 else " "
    after = src[end : end + 2]
    slash_before = before == "/"
    path_after = after[:1] == "/" or (after[:1] == "." and after[1:2].isalnum())
    if not (slash_before or path_after):
        return False
    if not silent:
        state.push("text", "", 0).content = src[pos:end]
    state.pos = end
    return True


def _parser():
    from markdown_it import MarkdownIt

    # html=False: raw HTML in the source is text, never markup. breaks=True: a single newline in
    # chat text is a line break, as the agents mean it. Images are not rendered (no remote fetch).
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": True, "typographer": False})
    md.enable(["table", "strikethrough", "linkify"])
    md.disable("image")
    md.inline.ruler.before("emphasis", "glob_star", _glob_star)
    md.add_render_rule("heading_open", _heading_open)
    md.add_render_rule("heading_close", _heading_close)
    return md


_MD = None


def _markdown_to_html(source: str) -> str:
    global _MD
    if _MD is None:
        _MD = _parser()
    return _MD.render(source.replace("\r\n", "\n").replace("\x00", ""))


def markdown_html(source: str) -> SafeString:
    """Markdown -> sanitized HTML. Raw HTML in the source is shown as text, never interpreted."""
    if len(source) > MARKDOWN_LIMIT:
        return _sanitize("<pre>" + escape(source) + "</pre>")
    if len(source) <= MARKDOWN_KEPT_CHARS:
        return _kept_markdown_html(source)
    return _sanitize(_markdown_to_html(source))


# A fold's summary is rendered on every conversation page (2 ms for 6,000 characters): the HTML of
# the texts rendered last is kept in this process's memory, by their text (a re-masked summary is
# another text; the old one drops out as others come).
MARKDOWN_KEPT_CHARS = 20_000


@functools.lru_cache(maxsize=256)
def _kept_markdown_html(source: str) -> SafeString:
    return _sanitize(_markdown_to_html(source))


# --- highlighted code (pygments, server-side, CSS classes from static/contextviewer/pygments.css) --

HIGHLIGHT_LIMIT = 60_000  # characters; larger code is shown plain


_PYGMENTS_LOCK = threading.Lock()
_pygments_names: dict[str, Any] = {}


def _pygments() -> dict[str, Any]:
    """pygments' names, imported once under a lock and from their own modules. Its packages
    `pygments.formatters` and `pygments.lexers` swap themselves in sys.modules while they load, so
    a second thread importing them at the same moment got the half-made module and failed with
    "cannot import name 'HtmlFormatter'" (issue 40: the first renders after a restart)."""
    if not _pygments_names:
        with _PYGMENTS_LOCK:
            if not _pygments_names:
                from pygments import highlight
                from pygments.formatters.html import HtmlFormatter
                from pygments.lexers import find_lexer_class_for_filename
                from pygments.lexers.special import TextLexer

                _pygments_names.update(
                    highlight=highlight,
                    formatter=HtmlFormatter(nowrap=True),  # format() keeps no state between calls
                    find=find_lexer_class_for_filename,
                    text=TextLexer,
                )
    return _pygments_names


@functools.lru_cache(maxsize=512)
def _lexer_class(name: str):
    """The lexer class of a file name (pygments matches it against every lexer's patterns: about
    1 ms a block, so kept per name), TextLexer when none claims it."""
    names = _pygments()
    return (names["find"](name) if name else None) or names["text"]


def _lexer(filename: str, code: str):
    name = filename.rsplit("/", 1)[-1] if filename else ""
    cls = _lexer_class(name) if len(code) <= HIGHLIGHT_LIMIT else _pygments()["text"]
    return cls(stripnl=False, ensurenl=False)


def highlight_lines(code: str, filename: str = "", numbers: list[int] | None = None) -> SafeString:
    """Code as an ordered list of highlighted lines. `numbers` are the line numbers to show (a
    Read of lines 120-160 starts at 120); by default 1, 2, 3 ... Only span classes come out, and
    no span around whitespace (it has no colour)."""
    names = _pygments()
    code = code.replace("\r\n", "\n").replace("\x00", "")
    count = code.count("\n") + 1
    # HtmlFormatter closes and reopens its spans at every newline, so the output splits by line.
    html = _WHITESPACE_SPAN.sub(r"\1", names["highlight"](code, _lexer(filename, code), names["formatter"]))
    lines = (html.split("\n") + [""] * count)[:count]
    shown = [
        numbers[i] if numbers and i < len(numbers) else (numbers[-1] + i - len(numbers) + 1 if numbers else i + 1)
        for i in range(count)
    ]
    items = []
    for i, line in enumerate(lines):
        jump = i > 0 and shown[i] != shown[i - 1] + 1
        items.append(f'<li value="{shown[i]}">{line}</li>' if jump else f"<li>{line}</li>")
    width = min(7, max(2, len(str(max(shown, default=1)))))
    start = f' start="{shown[0]}"' if shown and shown[0] != 1 else ""
    return _sanitize(
        f'<ol class="hl code-lines w{width}"{start}>' + "".join(items) + "</ol>",
        tags=CODE_TAGS,
        attributes=CODE_ATTRIBUTES,
    )


# --- ANSI ------------------------------------------------------------------------------------

# An escape sequence (CSI, OSC, two-byte), else a lone ESC (a sequence cut short), else another
# control character a terminal would not print (the browser would draw it as a box).
_ANSI = re.compile(
    r"\x1b\[([0-9;?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\x1b\[[0-9;?]*|\x1b"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]"
)
_BASIC = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]


@dataclass(frozen=True, slots=True)
class Segment:
    classes: str
    text: str


def has_ansi(text: str) -> bool:
    return "\x1b" in text


def strip_ansi(text: str) -> str:
    """The text without escape sequences (nor the other control characters _ANSI drops)."""
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
    """A head and a tail of a long text. Terminal output is never cut inside an escape sequence:
    the head ends before one cut in two, the tail starts with the whole of it (so no half of one
    shows, and the tail's first colour is kept)."""
    if len(text) <= limit:
        return Clip(text, "", 0)
    head_end, tail_start = HEAD_CHARS, len(text) - TAIL_CHARS
    if "\x1b" in text:
        head_end = _before_cut_escape(text, head_end)
        tail_start = _before_cut_escape(text, tail_start)
    return Clip(text[:head_end], text[tail_start:], tail_start - head_end)


_LONGEST_ESCAPE = 64  # longer OSC sequences cut in two are dropped as text (their ESC still goes)


def _cut_escape(text: str, at: int) -> re.Match | None:
    j = text.rfind("\x1b", max(0, at - _LONGEST_ESCAPE), at)
    if j < 0:
        return None
    m = _ANSI.match(text, j)
    return m if m is not None and m.end() > at else None


def _before_cut_escape(text: str, at: int) -> int:
    m = _cut_escape(text, at)
    return m.start() if m is not None else at


def tool_input_text(tool_input: Any, fallback: str = "") -> str:
    if tool_input is None:
        return fallback
    if isinstance(tool_input, str):
        return tool_input
    try:
        return json.dumps(tool_input, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(tool_input)


# Lines that only wrap a prompt (an agent's envelope around what the user typed: a time stamp, the
# query's own tags), passed over when a prompt is named by its first line.
_ENVELOPE = re.compile(r"<timestamp>[^<]*</timestamp>|</?user_query>")


def first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not _ENVELOPE.fullmatch(line):
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
