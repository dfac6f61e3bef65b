"""Secrets in transcripts (API keys, tokens, private keys, passwords): found and masked.

Pure. `mask()` is the one masking function: the importer's raw lines and blocks, fold summaries,
titles, job results, the search index and every prompt sent to a provider go through it (or
through `mask_value()`/`mask_text()`, which call it). The masked form keeps the kind and stays
valid inside a JSON string (no quotes or backslashes), so the same function masks the raw line and
the decoded blocks; masking masked text changes nothing.

Where a secret is known by its context (an AWS secret access key after its name or next to its
access key id, the password of a URL), only the secret is replaced and the context is kept:
`aws_secret_access_key = [masked aws_secret_key]`, `postgres://app:[masked url_password]@db`.
Such a rule names the secret's part `v`."""

from __future__ import annotations

import re
from typing import NamedTuple

# Text may be a decoded string or a raw JSON line: a line break is a real one or a JSON escape
# (`\n`, or `\\n` inside a JSON string inside a JSON string).
_NL = r"(?:\r?\n|(?:\\+r)?\\+n)"
_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
# What may follow a base64 line of a PEM block: the end of the line (or of a JSON string), or an
# ellipsis where the text was cut; in a block flattened onto one line, a space.
_LINE_END = r"""(?![^\r\n\\"'….])"""
_CHUNK_END = r"""(?![^\r\n\\"'…. \t])"""
# A PEM block with no END line (cut off, pasted in part): its header lines ("Proc-Type: ...") and
# base64 lines, up to the first line that is neither. Base64 joined by spaces (a block flattened
# onto one line) counts only in long runs, so the words after it stay. A block quoted line by line
# (`> `, as a summary carries an earlier one) is one block.
_PEM_BODY = (
    rf"(?:{_NL}+[ \t]*(?:>[ \t]*)*(?:[A-Za-z][A-Za-z-]*: [^\r\n\\]{{0,200}}|[A-Za-z0-9+/=]{{16,200}}{_CHUNK_END}|[A-Za-z0-9+/=]{{1,200}}{_LINE_END})"
    rf"|[ \t]+[A-Za-z0-9+/=]{{16,200}}{_CHUNK_END})*"
)
# An AWS secret access key: 40 characters of base64 with both cases (so never a git SHA or other
# hex string), standing alone.
_AWS_SECRET = (
    r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
# Where a text was cut short: an ellipsis (also as a JSON escape).
_CUT = r"(?=…|\\+u2026)"
_AWS_ID = r"(?:AKIA|ASIA)(?<![A-Za-z0-9_]....)[0-9A-Z]{16}(?![A-Za-z0-9_])"
_AWS_NAME = r"(?i:aws[ _.-]?secret(?:[ _.-]?access)?[ _.-]?key|secret[ _.-]?access[ _.-]?key)"
# Between a name or an access key id and the secret: `=`, `": "`, ` [None]: `, `,`, a space.
_BETWEEN = r"(?:\s*\[[^\]\r\n]{0,40}\])?[^A-Za-z0-9/+\r\n]{1,16}"


def _after(prefix: str) -> str:
    """`prefix` at the start of a word, the prefix first (a literal start makes the search fast)."""
    return re.escape(prefix) + f"(?<![A-Za-z0-9_]{'.' * len(prefix)})"


class _Rule(NamedTuple):
    kind: str
    hints: tuple[str, ...] | re.Pattern  # substrings one of which the text must hold, or a pattern
    pattern: re.Pattern


_AWS_ID_HINT = re.compile("A[KS]IA")  # one scan for both prefixes (a regex with a literal start is fast)


def _rule(kind: str, hints, pattern: str) -> _Rule:
    return _Rule(kind, hints, re.compile(pattern))


_RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        ("PRIVATE KEY",),
        rf"-----BEGIN {_PEM_LABEL}(?:[\s\S]{{0,32768}}?-----END {_PEM_LABEL}|{_PEM_BODY})",
    ),
    _rule("anthropic_key", ("sk-ant-",), _after("sk-ant-") + r"[A-Za-z0-9_-]{20,}"),
    _rule("openai_key", ("sk-",), _after("sk-") + r"(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}"),
    _rule(
        "github_token",
        re.compile("gh[pousr]_|github_pat_"),
        r"(?:gh[pousr]_(?<![A-Za-z0-9_]....)[A-Za-z0-9]{36,}|" + _after("github_pat_") + r"[A-Za-z0-9_]{50,})",
    ),
    # An AWS secret key after its name (also cut short by an ellipsis), or next to its access key
    # id (either side): only then is a 40-character string known to be one.
    _rule(
        "aws_secret_key",
        ("ecret", "ECRET"),
        rf"{_AWS_NAME}{_BETWEEN}(?P<v>{_AWS_SECRET}|(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{{8,39}}{_CUT})",
    ),
    _rule("aws_secret_key", _AWS_ID_HINT, rf"{_AWS_ID}{_BETWEEN}(?P<v>{_AWS_SECRET})"),
    _rule("aws_secret_key", _AWS_ID_HINT, rf"(?P<v>{_AWS_SECRET})[^A-Za-z0-9/+\r\n]{{1,16}}(?={_AWS_ID})"),
    _rule("aws_access_key", _AWS_ID_HINT, _AWS_ID),
    _rule("slack_token", ("xox",), r"xox(?<![A-Za-z0-9_]...)[abprs]-[A-Za-z0-9-]{10,}"),
    _rule("google_api_key", ("AIza",), _after("AIza") + r"[0-9A-Za-z_-]{35}"),
    _rule("stripe_key", ("_live_",), r"(?:sk|rk)_live_(?<![A-Za-z0-9_]........)[0-9A-Za-z]{20,}"),
    # header.payload.signature, both JSON objects in base64url ("eyJ" is `{"`); the signature may
    # be empty (alg none), or cut off with the text.
    _rule("jwt", ("eyJ",), rf"eyJ(?<![A-Za-z0-9_-]...)[A-Za-z0-9_-]{{5,}}\.eyJ[A-Za-z0-9_-]{{5,}}(?:\.[A-Za-z0-9_-]*|{_CUT})"),
    # scheme://user:password@host (also with JSON's escaped slashes): the password only; a
    # placeholder (${VAR}, $VAR, <password>, ***) is not a password. A URL cut short with an
    # ellipsis after the password (a one-line summary) still has it.
    _rule(
        "url_password",
        ("://", r":\/\/"),
        r""":(?<=[A-Za-z0-9]:)(?:\\?/){2}[^\s/:@"'<>\\]{0,256}:"""
        r"""(?P<v>(?![$*{<])[^\s/@"'<>\\]{1,256})(?:@(?=[A-Za-z0-9\[])|"""
        rf"""{_CUT})""",
    ),
)
# Every kind and its pattern(s), for reference and tests.
PATTERNS: dict[str, str] = {}
for _r in _RULES:
    PATTERNS[_r.kind] = PATTERNS[_r.kind] + "|" + _r.pattern.pattern if _r.kind in PATTERNS else _r.pattern.pattern
KINDS: tuple[str, ...] = tuple(PATTERNS)


def _hinted(rule: _Rule, text: str) -> bool:
    if isinstance(rule.hints, re.Pattern):
        return rule.hints.search(text) is not None
    return any(hint in text for hint in rule.hints)


def mask(text: str) -> tuple[str, list[str]]:
    """(text with every secret replaced by "[masked <kind>]", kinds found in order, no repeats).

    The one masking function: every other place masks through it. Every rule whose cheap hint the
    text holds finds its secrets in the original text; overlapping finds are masked as one."""
    found: list[tuple[int, int, str]] = []
    for rule in _RULES:
        if not _hinted(rule, text):
            continue
        has_value = "v" in rule.pattern.groupindex
        for match in rule.pattern.finditer(text):
            start, end = match.span("v") if has_value else match.span()
            if end > start:
                found.append((start, end, rule.kind))
    if not found:
        return text, []
    found.sort(key=lambda f: (f[0], -f[1]))
    kinds: list[str] = []
    parts: list[str] = []
    at = 0  # end of the text already copied or masked
    for start, end, kind in found:
        if start < at:  # inside or across the previous secret (the same key found twice): masked with it
            at = max(at, end)
            continue
        if kind not in kinds:
            kinds.append(kind)
        parts.append(text[at:start])
        parts.append(f"[masked {kind}]")
        at = end
    parts.append(text[at:])
    return "".join(parts), kinds


def mask_value(value):
    """mask() through nested lists and dicts (decoded blocks, tool inputs, job results)."""
    if isinstance(value, str):
        return mask(value)[0] if may_hold_secret(value) else value
    if isinstance(value, list):
        return [mask_value(v) for v in value]
    if isinstance(value, dict):
        return {k: mask_value(v) for k, v in value.items()}
    return value


def mask_text(text: str | None) -> str:
    """mask() of one text field (a title, a summary, a prompt); None is ""."""
    if not text:
        return text or ""
    return mask(text)[0] if may_hold_secret(text) else text


# Every hint once: one scan each over every imported line.
_HINTS = tuple(dict.fromkeys(h for r in _RULES if not isinstance(r.hints, re.Pattern) for h in r.hints))
_HINTS = tuple(h for h in _HINTS if not any(other != h and other in h for other in _HINTS))  # "sk-" covers "sk-ant-"
_HINT_PATTERNS = tuple(dict.fromkeys(r.hints for r in _RULES if isinstance(r.hints, re.Pattern)))


def may_hold_secret(text: str) -> bool:
    """False when `text` cannot hold a secret mask() would find (most text: fast)."""
    return any(hint in text for hint in _HINTS) or any(p.search(text) for p in _HINT_PATTERNS)
