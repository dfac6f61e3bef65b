"""Blind review shows two summaries of one segment without telling which harness wrote them: the
wording a harness wraps every summary in goes, and both sides get one neutral layout. Pure: no Django.

- Claude Code opens its summaries with "This session is being continued from a previous
  conversation that ran out of context. The summary below covers the earlier portion of the
  conversation." (older: "The conversation is summarized below:") and closes them with "If you
  need specific details from before compaction ..., read the full transcript at: <path>" and
  "Please continue the conversation from where we left off without asking the user any further
  questions. Continue with the last task that you were asked to work on." Its sections are label
  lines: "Analysis:" (opened by "Let me chronologically analyze the conversation:"), "Summary:",
  "1. Primary Request and Intent:" ... "9. Optional Next Step:".
- Codex opens a summary it hands on with "Another language model started to solve this problem ...".
- The builtin summarizer (providers/builtin.py through core/handoff.format_sections) writes
  Markdown sections: "## Goal", "## State and what is done", "## Next steps", "## Constraints and
  preferences".
- Gemini CLI and Qwen Code write XML sections: <overall_goal>, <key_knowledge>,
  <file_system_state>, <recent_actions>, <current_plan> inside <state_snapshot>.

The builtin summarizer also writes fixed phrases inside its sections ("Latest request (see Last state
for where it stands): ...", "Paths mentioned: ...", "Ran `...`", "Last state: ...", "None stated in
the transcript."). No other summarizer writes them, so blind review takes them out (_PHRASES): each
such line's words go under their neutral section, one bullet an item ("Files changed: `a`, `b`" is
"- `a`" and "- `b`" under Files, "Error seen: ..." a bullet under Errors), and a line that only says
there is nothing goes, as does "Resolve the error of ..." (its error is under Errors). The stored
summary keeps them.

The neutral layout: every section becomes "## <name>" with its name in one shared vocabulary
(NEUTRAL: "Primary Request and Intent", "Goal" and <overall_goal> are all "Goal"), sections of the
same name are one section, and the sections come in NEUTRAL's order (a name outside it keeps its
words and comes after them; Claude Code's analysis is "Notes", last). A heading with nothing under
it goes. Every other line is kept as it was written, less the indentation its section shares.
"""

from __future__ import annotations

import re
import textwrap

_PREAMBLE = re.compile(
    r"\A\s*This session is being continued from a previous conversation(?: that ran out of context)?\.?[ \t]*"
    r"(?:The conversation is summarized below:|The summary below covers the earlier portion of the conversation\.)?[ \t]*\n?",
    re.IGNORECASE,
)
_CODEX_PREFIX = re.compile(
    r"\A\s*Another language model started to solve this problem and produced a summary of its thinking process\.[^\n]*\n?",
    re.IGNORECASE,
)
_CLOSINGS = (
    re.compile(
        r"If you need specific details from before compaction[^\n]*?read the full transcript at:?[ \t]*\S*", re.IGNORECASE
    ),
    re.compile(r"Please continue the conversation from where we left (?:it )?off without asking the user any further questions\.?", re.IGNORECASE),
    re.compile(r"Continue with the last task that you were asked to work on\.?", re.IGNORECASE),
    re.compile(r"Recent messages are preserved verbatim\.?", re.IGNORECASE),
)
_ATX = re.compile(r"^#{1,6}[ \t]+(?P<name>.+?)[ \t]*#*[ \t]*$")
_BOLD_LINE = re.compile(r"^\*\*(?P<name>[^*\n]{1,80}?):?\*\*:?[ \t]*$")
# A label line at the start of a line: "Analysis:", "Summary:", "3. Files and Code Sections:".
_LABEL = re.compile(r"^(?P<number>\d{1,2}[.)][ \t]+)?(?P<name>[A-Z][A-Za-z/&' -]{0,58}?):[ \t]*$")
_LABEL_WORDS = 6
# Gemini CLI's and Qwen Code's sections: a tag alone on its line.
_TAG = re.compile(r"^[ \t]*<(?P<close>/?)(?P<name>[a-z][a-z_]{2,40})>[ \t]*$")
_TAGS = frozenset({"overall_goal", "key_knowledge", "file_system_state", "recent_actions", "current_plan"})
_WRAPPERS = frozenset({"state_snapshot", "summary", "analysis"})
# Claude Code's analysis opens with a sentence of its prompt's: "Let me chronologically analyze the conversation:".
_ANALYSIS_OPENING = re.compile(r"^Let me (?:\w+ ){0,3}analy[sz]e\b[^\n]{0,80}:[ \t]*$", re.IGNORECASE)

# The shared vocabulary, in the order the sections are shown; each name with the words that map to
# it, tried in this order ("Pending Tasks" is a next step, not a goal; "file_system_state" a file).
NEUTRAL = ("Goal", "Constraints", "Context", "Files", "Errors", "State", "User messages", "Next steps", "Notes")
_WORDS = (
    ("User messages", ("user message",)),
    ("Next steps", ("next", "pending", "plan", "todo", "to do", "remaining")),
    ("Files", ("file",)),
    ("Errors", ("error",)),
    ("Constraints", ("constraint", "preference", "instruction")),
    ("Goal", ("goal", "request", "intent", "task")),
    ("Context", ("concept", "knowledge", "discover", "context", "background")),
    ("State", ("state", "done", "current work", "problem solving", "accomplish", "progress", "action", "status", "work")),
    ("Notes", ("analysis", "note")),
)


# The builtin summarizer's fixed phrases (providers/builtin: _goal, _render, _next_steps), a line
# each, as (the line less its "- ", the neutral section its words go under, as what: a template of
# the match (m.expand), and the separator of its list, whose items are a bullet each); no section:
# the line goes.
_LIST = r"(?<=`), (?=`)"
_PHRASES = tuple(
    (re.compile(pattern), section, template, sep)
    for pattern, section, template, sep in (
        (r"Latest request: (.+)", "Goal", "\\1\n", None),  # a paragraph each
        (r"From the earlier summary: (.+)", "Goal", "\\1\n", None),
        (r"Files changed: (.+)|Files read: (.+)|Paths mentioned: (.+)", "Files", r"\1\2\3", _LIST),
        (r"Ran (`.+`)", "State", r"- \1", None),
        (r"Named by the earlier summary: (.+)", "State", r"\1", _LIST),
        (r"Searched: (.+)|Tasks done: (.+)", "State", r"\1\2", "; "),
        (r"Symbols: (.+)", "Context", r"\1", _LIST),
        (r"Error seen: ([\w.:-]+): (.*?) \(on (`[^`]+`)\)", "Errors", r"- \3: \2 (\1)", None),
        (r"Error seen: (.+)", "Errors", r"- \1", None),
        (r"(?:Last|Earlier) state: (.+)", "State", r"- \1", None),
        (r"(?:Answer the latest request|Latest request \(see Last state for where it stands\)|Open task): (.+)", "Next steps", r"- \1", None),
        (r"Resolve the error(?: of .+ on `.+`|: .+)", None, "", None),
        (r"Not stated in the transcript \(no user request in the loaded view\)\.|Nothing was done in the loaded view yet\.|"
         r"No open request, task or error in the transcript\.|None stated in the transcript\.|Earlier summary, carried whole:", None, "", None),
    )
)


def _without_phrases(sections: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """The sections without the builtin summarizer's fixed phrases (_PHRASES): a line that is one
    gives its words to its neutral section, added after the sections (disguise merges sections of
    one name), or goes. Every other line stays as it was written."""
    out: list[tuple[str, list[str]]] = []
    moved: dict[str, list[str]] = {}
    for name, lines in sections:
        kept = []
        for line in lines:
            body = line.strip().removeprefix("- ")
            found = next(((m, row) for row in _PHRASES if (m := row[0].fullmatch(body))), None)
            if found is None:
                kept.append(line)
                continue
            m, (_, section, template, sep) = found
            words = m.expand(template)
            if section is not None:
                moved.setdefault(section, []).extend([f"- {x}" for x in re.split(sep, words) if x.strip()] if sep else [words])
        out.append((name, kept))
    return out + list(moved.items())


def neutral_name(name: str) -> str:
    """A section's name in the shared vocabulary (NEUTRAL); a name it has no word for, as written."""
    low = name.lower().replace("_", " ")
    for neutral, words in _WORDS:
        if any(w in low for w in words):
            return neutral
    return name


def _heading(line: str) -> tuple[str, str] | None:
    """(form, section name) when `line` is a heading in one of the summarizers' forms, else None.
    Forms: "label" (Claude Code: "3. Files and Code Sections:", and its unnumbered "Analysis:" and
    "Summary:"), "tag" (<overall_goal>), "atx1".."atx6" (Markdown "## Goal"), "bold" ("**Goal:**")."""
    m = _ATX.match(line)
    if m:
        return f"atx{len(line) - len(line.lstrip('#'))}", m.group("name").strip().rstrip(":").strip("*_ ").strip()
    m = _LABEL.match(line)
    if m and len(m.group("name").split()) <= _LABEL_WORDS:
        name = m.group("name").strip()
        if m.group("number") or name.lower() in _WRAPPERS:  # "Still need to:" inside a section is text
            return "label", name
    m = _TAG.match(line)
    if m and not m.group("close") and m.group("name") in _TAGS:
        return "tag", m.group("name").replace("_", " ")
    m = _BOLD_LINE.match(line)
    if m:
        return "bold", m.group("name").strip().rstrip(":").strip("*_ ").strip()
    return None


def _section_form(found: list[tuple[str, str] | None]) -> str | None:
    """The form the summary writes its sections in: Claude Code's labels, else the tags, else the
    shallowest Markdown heading, else bold lines. Headings of another form are text of a section
    (a "### src/a.py" under "## Files", a bold "**Files modified:**" under a label)."""
    forms = {f[0] for f in found if f is not None}
    for form in ("label", "tag", *(f"atx{n}" for n in range(1, 7)), "bold"):
        if form in forms:
            return form
    return None


def strip_boilerplate(text: str) -> str:
    """The summary without the harness's opening and closing sentences."""
    out = _PREAMBLE.sub("", text or "", count=1)
    out = _CODEX_PREFIX.sub("", out, count=1)
    for pattern in _CLOSINGS:
        out = pattern.sub("", out)
    return out


def _sections(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The lines before the first heading, and each section as (neutral name, its lines)."""
    lines = strip_boilerplate(text).replace("\r\n", "\n").split("\n")
    in_code, code = False, []
    for line in lines:
        fence = line.lstrip().startswith("```")
        code.append(in_code or fence)
        in_code = in_code != fence
    found = [None if in_code else _heading(line) for line, in_code in zip(lines, code, strict=True)]
    form = _section_form(found)
    head: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line, heading, in_code in zip(lines, found, code, strict=True):
        if heading is not None and heading[0] == form:
            sections.append((neutral_name(heading[1]), []))
            continue
        tag = None if in_code else _TAG.match(line)
        if tag and (tag.group("name") in _TAGS or tag.group("name") in _WRAPPERS):
            continue  # a closing tag, or the wrapper around the sections
        body = sections[-1][1] if sections else head
        if not any(x.strip() for x in body) and _ANALYSIS_OPENING.match(line.strip()):
            continue
        body.append(line.rstrip())
    return head, sections


def _block(lines: list[str]) -> str:
    """A section's lines as one text, without the indentation they share (Claude Code indents its
    sections' lines, Gemini CLI its tags' contents; Markdown would read four spaces as code)."""
    return textwrap.dedent("\n".join(lines)).strip("\n")


def disguise(text: str) -> str:
    """`text` as blind review shows it: boilerplate stripped, the builtin's fixed phrases taken out,
    the sections in the neutral layout (see the module's docstring), runs of blank lines made one."""
    head, sections = _sections(text)
    sections = _without_phrases(sections)
    merged: dict[str, list[str]] = {}
    for name, lines in sections:
        body = _block(lines)
        if body.strip():
            merged.setdefault(name, []).append(body)
    order = {name: i for i, name in enumerate(NEUTRAL)}
    other = order["Notes"] - 0.5  # a name outside the vocabulary: after the others, before the notes
    names = sorted(merged, key=lambda n: order.get(n, other))  # stable: in the order they came
    parts = [_block(head)] if _block(head).strip() else []
    parts += [f"## {name}\n" + "\n\n".join(merged[name]) for name in names]
    out = re.sub(r"\n{3,}", "\n\n", "\n\n".join(parts)).strip()
    return out + "\n" if out else ""
