"""Secrets in transcripts (API keys, tokens, private keys, passwords): found and masked.

Pure. `mask()` is the one masking function: the importer's raw lines and blocks, fold summaries,
titles, job results, the search index and every prompt sent to a provider go through it (or
through `mask_value()`/`mask_text()`, which call it). The masked form keeps the kind and stays
valid inside a JSON string (no quotes or backslashes), so the same function masks the raw line and
the decoded blocks; masking masked text changes nothing.

Where a secret is known by its context (an AWS secret access key after its name or next to its
access key id, the password of a URL), only the secret is replaced and the context is kept:
`aws_secret_access_key = [masked aws_secret_key]`, `postgres://app:[masked url_password]@db`.
Such a rule names the secret's part `v`.

Masking by value (ValueMasker, at the end): a value found once is masked wherever else it stands,
bare, as a JSON key or JSON-escaped; `mask_raw()` also finds secrets whose characters a raw line
writes as `\\u` escapes."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
import urllib.parse
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
_AWS_ID = r"(?:AKIA|ASIA)(?<![A-Za-z0-9]....)[0-9A-Z]{16}(?![A-Za-z0-9])"
_AWS_NAME = r"(?i:aws[ _.-]?secret(?:[ _.-]?access)?[ _.-]?key|secret[ _.-]?access[ _.-]?key)"
# Between a name or an access key id and the secret: `=`, `": "`, ` [None]: `, `,`, a space.
_BETWEEN = r"(?:\s*\[[^\]\r\n]{0,40}\])?[^A-Za-z0-9/+\r\n]{1,16}"


def _after(prefix: str) -> str:
    """`prefix` not inside a run of letters and digits, the prefix first (a literal start makes the
    search fast). An underscore may stand before it: a tool's name (`mcp__vault__ghp_...`), an
    identifier or a file name joins words with it."""
    return re.escape(prefix) + f"(?<![A-Za-z0-9]{'.' * len(prefix)})"


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
        r"(?:gh[pousr]_(?<![A-Za-z0-9]....)[A-Za-z0-9]{36,}|" + _after("github_pat_") + r"[A-Za-z0-9_]{50,})",
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
    _rule("slack_token", ("xox",), r"xox(?<![A-Za-z0-9]...)[abprs]-[A-Za-z0-9-]{10,}"),
    _rule("google_api_key", ("AIza",), _after("AIza") + r"[0-9A-Za-z_-]{35}"),
    _rule("stripe_key", ("_live_",), r"(?:sk|rk)_live_(?<![A-Za-z0-9]........)[0-9A-Za-z]{20,}"),
    # header.payload.signature, both JSON objects in base64url ("eyJ" is `{"`); the signature may
    # be empty (alg none), or cut off with the text.
    _rule("jwt", ("eyJ",), rf"eyJ(?<![A-Za-z0-9]...)[A-Za-z0-9_-]{{5,}}\.eyJ[A-Za-z0-9_-]{{5,}}(?:\.[A-Za-z0-9_-]*|{_CUT})"),
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


def _finds(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret the rules find in `text`, sorted, overlaps kept."""
    found: list[tuple[int, int, str]] = []
    for rule in _RULES:
        if not _hinted(rule, text):
            continue
        has_value = "v" in rule.pattern.groupindex
        for match in rule.pattern.finditer(text):
            start, end = match.span("v") if has_value else match.span()
            if end > start:
                found.append((start, end, rule.kind))
    found.sort(key=lambda f: (f[0], -f[1]))
    return found


def _masked(text: str, found: list[tuple[int, int, str]]) -> tuple[str, list[str]]:
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


def mask(text: str) -> tuple[str, list[str]]:
    """(text with every secret replaced by "[masked <kind>]", kinds found in order, no repeats).

    The one masking function: every other place masks through it. Every rule whose cheap hint the
    text holds finds its secrets in the original text; overlapping finds are masked as one; copies
    written with percent escapes are masked too (mask_found)."""
    return mask_found(text)


def mask_found(text: str, values: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """mask(text), and the clear values it masked added to `values` (value -> kind) for masking by
    value (see ValueMasker). A value found in a raw JSON line is added decoded.

    Percent-encoded copies too (`aws_secret_access_key%3D...`, a URL's password in a query string, a
    PEM block `-----BEGIN%20RSA%20PRIVATE%20KEY-----%0A...`): the secrets found in the text with its
    `%XX` escapes decoded are masked where they stand, in whatever mix of escapes they are written."""
    found = _finds(text)
    masked, kinds = _masked(text, found) if found else (text, [])
    if values is not None:
        for start, end, kind in found:
            _learn(values, _decoded(text[start:end]), kind)
    decoded: dict[str, str] = {}
    for view in _percent_views(masked):
        if _may_hold(view):
            for start, end, kind in _finds(view):
                _learn(decoded, _decoded(view[start:end]), kind)
    if decoded:
        masked, more = ValueMasker(decoded, every=True).mask(masked)
        kinds += [k for k in more if k not in kinds]
        if values is not None:
            for value, kind in decoded.items():
                values.setdefault(value, kind)
    return masked, kinds


def _mask_key(key, values):
    return mask_found(key, values)[0] if isinstance(key, str) and may_hold_secret(key) else key


def mask_value(value, values: dict[str, str] | None = None):
    """mask() through nested lists and dicts (decoded blocks, tool inputs, job results), the keys of
    dicts too (a secret used as a header name). Found values are added to `values` when given."""
    if isinstance(value, str):
        return mask_found(value, values)[0] if may_hold_secret(value) else value
    if isinstance(value, list):
        return [mask_value(v, values) for v in value]
    if isinstance(value, dict):
        out: dict = {}
        for k, v in value.items():
            key = _mask_key(k, values)
            while key in out and key != k:  # two secrets as keys of one object: both kept, apart
                key = f"{key}'"
            out[key] = mask_value(v, values)
        return out
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


def _may_hold(text: str) -> bool:
    return any(hint in text for hint in _HINTS) or any(p.search(text) for p in _HINT_PATTERNS)


def may_hold_secret(text: str) -> bool:
    """False when `text` cannot hold a secret mask() would find (most text: fast)."""
    return _may_hold(text) or any(_may_hold(view) for view in _percent_views(text))


# A percent escape (`%2F`): a text holding one is also read decoded.
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


def _percent_views(text: str) -> list[str]:
    """`text` with its `%XX` escapes decoded (as UTF-8), and also with `+` as a space where it has
    one (a form's encoding); none when it has no escape."""
    if "%" not in text or not _PERCENT.search(text):
        return []
    views = [urllib.parse.unquote(text, errors="surrogateescape")]
    if "+" in text:
        views.append(urllib.parse.unquote_plus(text, errors="surrogateescape"))
    return views


def mask_id(value: str | None, key) -> str | None:
    """An id or a name read from a log (a session, message, tool call or agent id, a model's name)
    with its secrets masked. Two ids that differ only in their secret stay two: a masked id ends
    with "~" and 16 hex digits of a keyed hash of the whole id (`key`: the key's bytes, or a
    function giving them, called only when there is a secret). The same id always gives the same."""
    if not value or not may_hold_secret(value):
        return value
    masked = mask(value)[0]
    if masked == value:
        return value
    key = key() if callable(key) else key
    digest = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]
    return f"{masked}~{digest}"


# -- masking by value -------------------------------------------------------------------------------
# A secret found once (by its pattern, or by its context: `aws_secret_access_key = ...`, a URL's
# password) is a known value: it is masked wherever else the same characters stand in the same
# conversation, bare, in a JSON key, or written with JSON escapes (`\u0041`, `\/`, `\n`) in a raw line.
# ValueMasker does that with one compiled alternation of the known values (one scan of a text,
# whatever their number; nothing at all when a conversation has none). Short or plain values are
# not masked by value: a URL's password "postgres" would otherwise mask every word "postgres".
# Clear values only live in memory for the length of an import; what is kept across imports is a
# keyed fingerprint (fingerprints() / recognise()), see contextviewer/ingest/remask.py.

BY_VALUE_MIN = 8
# The kinds known only by their context: a fingerprint lets a later import recognise them bare.
CONTEXT_KINDS = frozenset(r.kind for r in _RULES if "v" in r.pattern.groupindex)
_SHORT_ESCAPES = {"\n": r"\\n", "\r": r"\\r", "\t": r"\\t", "/": r"\\/", '"': r'\\"', "\\": r"\\\\"}
# A value starts after a character that cannot continue it, or after a JSON escape (`\n`).
_BEFORE = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{2}))"
_AFTER = r"(?![A-Za-z0-9])"
# A printable ASCII character written as a JSON escape (`\u0041`): decoded before finding secrets.
_ASCII_ESCAPE = re.compile(r"\\u00([2-7][0-9a-fA-F])")
_JSON_UNSAFE = frozenset('"\\')


def _decoded(value: str) -> str:
    """A value found in a raw JSON line, with its JSON escapes decoded (as it is in the blocks)."""
    if "\\" not in value:
        return value
    try:
        decoded = json.loads(f'"{value}"')
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else value


# A line of a PEM block's base64 body: learned with the block, so that one line quoted alone
# (`head -3 key.pem`, a diff) is masked by value too.
_PEM_LINE = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/=]{16,}(?![A-Za-z0-9+/=])")
_PEM_SPLIT = re.compile(r"(?:\\+[nrt]|\s|>)+")


def _learn(values: dict[str, str], value: str, kind: str) -> None:
    if value and not value.startswith("[masked "):
        values.setdefault(value, kind)
        if kind == "private_key":
            for part in _PEM_SPLIT.split(value):
                if _PEM_LINE.fullmatch(part) and by_value(part, kind):
                    values.setdefault(part, kind)


def by_value(value: str, kind: str) -> bool:
    """Whether a found value is masked wherever it stands (long enough, and not a plain word)."""
    if len(value) < BY_VALUE_MIN:
        return False
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value),
                   any(c.isdigit() for c in value), any(not c.isalnum() for c in value)))
    return classes >= 2


def _hex_either(code: str) -> str:
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in code)


def _escaped_char(c: str) -> str:
    """A character as it may be written in a JSON string: itself, `\\uXXXX` (either case), `\\n`..."""
    code = "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{ord(c):04x}")
    alternatives = [re.escape(c), r"\\u" + code]
    if c in _SHORT_ESCAPES:
        alternatives.append(_SHORT_ESCAPES[c])
    # Percent-encoded (`%2F`, either case; a space also as `+`).
    alternatives.append("".join(_hex_either(f"%{b:02x}") for b in c.encode("utf-8", "surrogatepass")))
    if c == " ":
        alternatives.append(r"\+")
    return "(?:" + "|".join(alternatives) + ")"


class ValueMasker:
    """Masks known secret values (value -> kind) wherever they stand. With every=False (a
    conversation's values) only values by_value() keeps; with every=True all (one raw line's)."""

    def __init__(self, values: dict[str, str], *, every: bool = False):
        self.values = {v: k for v, k in values.items() if v and (every or by_value(v, k))}
        self._order = sorted(self.values, key=len, reverse=True)  # the longest first: a value inside another
        self._plain = self._compile(re.escape) if self._order else None
        self._escaped: re.Pattern | None = None
        # Cheap substring checks first (a text holding no form of any value is left alone): each
        # value as written, JSON-encoded, and with JSON's escaped slashes.
        forms = {f for v in self._order for f in (v, json.dumps(v, ensure_ascii=False)[1:-1])}
        self._forms = tuple(forms | {f.replace("/", "\\/") for f in forms})

    def may_hold(self, text: str | None) -> bool:
        """False when `text` holds none of the values in any form (most texts: a few substring scans)."""
        if not text or not self._order:
            return False
        return (
            any(form in text for form in self._forms)
            or _ASCII_ESCAPE.search(text) is not None
            or ("%" in text and _PERCENT.search(text) is not None)
        )

    def __bool__(self) -> bool:
        return bool(self.values)

    def _compile(self, encode) -> re.Pattern:
        return re.compile(_BEFORE + "(?:" + "|".join(f"({encode(v)})" for v in self._order) + ")" + _AFTER)

    def mask(self, text: str | None) -> tuple[str, list[str]]:
        """(text with every known value masked, kinds masked)."""
        if not text or self._plain is None or not self.may_hold(text):
            return text or "", []
        pattern = self._plain
        if "\\" in text or "%" in text:  # maybe JSON- or percent-escaped: every character in any of its forms
            if self._escaped is None:
                self._escaped = self._compile(lambda v: "".join(_escaped_char(c) for c in v))
            pattern = self._escaped
        kinds: list[str] = []

        def masked(match: re.Match) -> str:
            kind = self.values[self._order[match.lastindex - 1]]
            if kind not in kinds:
                kinds.append(kind)
            return f"[masked {kind}]"

        return pattern.sub(masked, text), kinds

    def mask_text(self, text: str | None) -> str:
        return self.mask(text)[0]

    def mask_value(self, value):
        """mask() through nested lists and dicts, keys too."""
        if isinstance(value, str):
            return self.mask(value)[0]
        if isinstance(value, list):
            return [self.mask_value(v) for v in value]
        if isinstance(value, dict):
            out: dict = {}
            for k, v in value.items():
                key = self.mask(k)[0] if isinstance(k, str) else k
                while key in out and key != k:
                    key = f"{key}'"
                out[key] = self.mask_value(v)
            return out
        return value


def _ascii_view(raw: str) -> str | None:
    """`raw` with printable ASCII characters written as `\\u00XX` decoded (quotes and backslashes
    stay escaped, so the text stays a JSON line), or None when it has none."""
    if "\\u00" not in raw or not _ASCII_ESCAPE.search(raw):
        return None

    def decode(match: re.Match) -> str:
        c = chr(int(match.group(1), 16))
        return match.group(0) if c in _JSON_UNSAFE else c

    return _ASCII_ESCAPE.sub(decode, raw)


def mask_raw(raw: str, values: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """mask() of a raw JSON line, also where a secret's characters are written as JSON escapes
    (`sk-ant-...\\u0041...`): found in the line with those escapes decoded, masked in the line as
    written. The clear values found are added to `values`."""
    found: dict[str, str] = {}
    masked, kinds = mask_found(raw, found) if may_hold_secret(raw) else (raw, [])
    view = _ascii_view(masked)
    if view is not None and may_hold_secret(view):
        for start, end, kind in _finds(view):
            _learn(found, _decoded(view[start:end]), kind)
        masked, more = ValueMasker(found, every=True).mask(masked)
        kinds += [k for k in more if k not in kinds]
    if values is not None:
        for value, kind in found.items():
            values.setdefault(value, kind)
    return masked, kinds


def fingerprint(value: str, key: bytes) -> str:
    """A keyed hash of a secret value (never the value): kept to recognise it in later imports."""
    return hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:32]


def fingerprints(values: dict[str, str], key: bytes) -> list[list]:
    """[kind, length, fingerprint] of the values a later import could only recognise by value
    (those of CONTEXT_KINDS, and the lines of a PEM block's body: every other kind is found by its
    own pattern wherever it stands)."""
    return sorted(
        [kind, len(value), fingerprint(value, key)]
        for value, kind in values.items()
        if by_value(value, kind) and "\n" not in value
        and (kind in CONTEXT_KINDS or (kind == "private_key" and _PEM_LINE.fullmatch(value)))
    )


@functools.lru_cache(maxsize=64)
def _candidates(length: int) -> re.Pattern:
    return re.compile(rf"{_BEFORE}(?=([^\s\"'<>\\@]{{{length}}}){_AFTER})")


def recognise(text: str | None, prints, key: bytes) -> dict[str, str]:
    """The clear values (value -> kind) in `text` whose fingerprint is one of `prints`."""
    if not text or not prints:
        return {}
    by_length: dict[int, dict[str, str]] = {}
    for kind, length, digest in prints:
        by_length.setdefault(int(length), {})[digest] = kind
    found: dict[str, str] = {}
    for length, digests in by_length.items():
        for match in _candidates(length).finditer(text):
            value = match.group(1)
            kind = digests.get(fingerprint(value, key))
            if kind:
                found[value] = kind
    return found
