"""Paths matched the way a reviewer reads them: one file however it is written. Pure, no Django.

One matcher for the fact probes (core/facts.py: is a path the summary kept), the continuation
(core/continuation.py: used_after, reread_after) and the policy lab's facts at risk (they all call
facts.is_kept, which calls `match`).

A path's key (`path_key`) is the form every spelling of one file shares:

- backslashes read as slashes (`src\\app.py`), a Windows drive lower-cased (`C:\\Users` -> `c:/users`);
- `~` and `~user` read as the home directory the working directory lies under (`/home/u/...`,
  `/Users/u/...`, `/root/...`, `C:\\Users\\u\\...`);
- relative to the working directory when it lies under it (`/repo/src/a.py` and `./src/a.py` are
  `src/a.py`);
- case folded when the path or the working directory is a Windows one (its file system ignores case).

What a text names (`named`): every path-shaped word (POSIX, Windows, `~`), every quoted or
backticked path (spaces allowed: `"docs/Deep Dive Man.md"`), and apart from them the globs
(`src/**/*.py`, `Screenshot_*-18*.png`) and the folders written with a closing slash (`lib/web/`)
or named as one ("the `lib/web` folder"). A file is matched ("exact", "normalized") when the text
names its key, or its tail (down to its base name) when no other path of the segment ends so,
or the text holds its whole path written with spaces; it is "pattern" when only a glob or a folder
the text names covers it (a reviewer reads "all of `lib/web/`" as naming its files).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

EXACT, NORMALIZED, PATTERN = "exact", "normalized", "pattern"

_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")
_HOME_RE = re.compile(r"^(/home/[^/]+|/Users/[^/]+|/root|[a-z]:/users/[^/]+)(?=/|$)", re.I)
_GLOB_RE = re.compile(r"[*?]|\[[^\]/]+\]|\{[^}/]*,[^}]*\}")

# A path-shaped word: POSIX or relative (`a/b.py`, `/a/b`, `~/a`, `./a`), a Windows path
# (`C:\a\b.py`, `C:/a`, `a\b.py`), a bare name with a dot; glob characters are kept (a pattern).
_WORD = r"[\w.@+\-*?\[\]{},~]"
WORD_RE = re.compile(
    r"(?<![\w.@+~/\\:-])("
    r"[A-Za-z]:[\\/](?:" + _WORD + r"+[\\/]?)*"  # C:\Users\x, C:/Users/x
    r"|(?:~[\w.-]*|\.{1,2})?[\\/]?" + _WORD + r"+(?:[\\/]" + _WORD + r"*)*"  # a/b, /a/b, ~/a, a\b
    r")"
)
# A quoted or backticked span: a path written with spaces is read whole from it.
QUOTED_RE = re.compile(r"`([^`\n]{3,300})`|\"([^\"\n]{3,300})\"|'([^'\n]{3,300})'|\*\*([^*\n]{3,300})\*\*")


def is_windows(path: str) -> bool:
    return bool(_DRIVE_RE.match(path or "")) or ("\\" in (path or "") and "/" not in (path or ""))


def _slashes(path: str) -> str:
    p = path.replace("\\", "/")
    p = re.sub(r"(?<!^)/{2,}", "/", p)
    if _DRIVE_RE.match(p):
        p = p[0].lower() + p[1:]
    return p


def home_of(cwd: str) -> str:
    """The home directory the working directory lies under, as a key ("" when none shows)."""
    m = _HOME_RE.match(_slashes(cwd or ""))
    return m.group(1) if m else ""


@lru_cache(maxsize=65536)
def path_key(path: str, cwd: str = "") -> str:
    """The form every spelling of one file shares (module docstring)."""
    p = (path or "").strip().strip("\"'`").rstrip(".,:;")
    windows = is_windows(p) or is_windows(cwd)
    p = _slashes(p)
    base = _slashes(cwd or "").rstrip("/")
    if p.startswith("~"):
        home = home_of(cwd)
        head, _, rest = p.partition("/")
        if home and (head == "~" or head == "~" + home.rsplit("/", 1)[-1]):
            p = f"{home}/{rest}" if rest else home
    if windows:
        p, base = p.lower(), base.lower()
    if base and p.startswith(base + "/"):
        p = p[len(base) + 1 :]
    while p.startswith("./"):
        p = p[2:]
    return p


def suffixes(key: str) -> list[str]:
    """`a/b/c.py` -> [`a/b/c.py`, `b/c.py`, `c.py`]."""
    parts = [p for p in key.split("/") if p]
    return ["/".join(parts[i:]) for i in range(len(parts))]


def tail_counts(keys: Iterable[str]) -> dict[str, int]:
    """How many of the segment's paths (keys) end with each tail: `c.py` -> 2 when two dirs hold one."""
    counts: dict[str, int] = {}
    for key in set(keys):
        for tail in suffixes(key)[1:] if key.startswith("/") else suffixes(key):
            counts[tail] = counts.get(tail, 0) + 1
    return counts


def _valid(regex: str) -> bool:
    try:
        re.compile(regex)
    except re.error:  # a class no regex takes (`[z-a]`): read as plain text
        return False
    return True


def _glob_regex(pattern: str) -> re.Pattern:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append(r"(?:[^/]+/)*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(r".*")
            i += 2
            continue
        if c == "*":
            out.append(r"[^/]*")
        elif c == "?":
            out.append(r"[^/]")
        elif c == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            inner = pattern[i + 1 : end]
            negate = inner.startswith(("!", "^"))
            body = "".join(c if c.isalnum() or c == "-" else re.escape(c) for c in inner[negate:])
            cls = "[" + "^" * negate + body + "]"
            out.append(cls if body and "--" not in body and not body.startswith("-") and _valid(cls) else re.escape(pattern[i : end + 1]))
            i = end
        elif c == "{" and "}" in pattern[i + 1 :]:
            end = pattern.index("}", i + 1)
            out.append("(?:" + "|".join(re.escape(a) for a in pattern[i + 1 : end].split(",")) + ")")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out) + r"\Z")
    except re.error:  # a class no regex takes (`[z-a]`): the pattern as plain text
        return re.compile(re.escape(pattern) + r"\Z")


def is_glob(word: str) -> bool:
    return bool(_GLOB_RE.search(word))


@dataclass
class Named:
    """The paths a text names, read once (`named`); keyed per working directory on demand."""

    text: str = ""
    words: set[str] = field(default_factory=set)  # path-shaped words and quoted paths, as written
    globs: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    _keys: dict[str, tuple] = field(default_factory=dict, repr=False)

    def keyed(self, cwd: str) -> tuple[set[str], list[tuple[str, re.Pattern]], set[str], str]:
        """(keys of the words, (glob key, regex) pairs, folder keys, the text with slashes) for `cwd`."""
        found = self._keys.get(cwd)
        if found is None:
            windows = is_windows(cwd)
            keys = {path_key(w, cwd) for w in self.words}
            globs = [(k, _glob_regex(k)) for k in (path_key(g, cwd) for g in self.globs) if k.strip("*/?.")]
            folders = {k for k in (path_key(f, cwd) for f in self.folders) if k and not k.startswith("/") or _deep(k)}
            text = _slashes(self.text)
            found = self._keys[cwd] = (keys, globs, folders, text.lower() if windows else text)
        return found


def _deep(key: str) -> bool:
    """An absolute folder deep enough to name files (not `/`, `/home`, `/home/u`)."""
    return key.count("/") >= 3 and not _HOME_RE.fullmatch(key)


_FOLDER_WORD_RE = re.compile(r"\b(?:folder|folders|directory|directories|dir|tree)\b", re.I)


def named(text: str) -> Named:
    """The paths, globs and folders a text names (module docstring)."""
    out = Named(text or "")
    found = [(m.group(1), m.start(1), m.end(1)) for m in WORD_RE.finditer(out.text)]
    for m in QUOTED_RE.finditer(out.text):
        span = next(g for g in m.groups() if g is not None).strip()
        if re.search(r"[/\\]", span):
            found.append((span, m.start(), m.end()))
    for raw, start, end in found:
        word = raw.rstrip(".,:;)")
        if len(word) < 2 or word.startswith(("http:", "https:")) or "://" in word:
            continue
        if is_glob(word):
            word = re.sub(r"\*{3,}", "**", word)
            # A glob names files when it has a word in it; a run of wildcards is no name (and a
            # regex of hundreds of them would take forever to fail).
            if re.search(r"\w", word) and not re.fullmatch(r"[*?./\\]+", word) and len(word) <= 300 and len(re.findall(r"[*?]", word)) <= 12:
                out.globs.add(word)
            continue
        if word.endswith(("/", "\\")):
            out.folders.add(word.rstrip("/\\"))
            continue
        out.words.add(word)
        # A folder written without its closing slash: "the lib/web folder", "directory src/app".
        around = out.text[max(0, start - 24) : end + 24]
        if re.search(r"[/\\]", word) and _FOLDER_WORD_RE.search(around):
            out.folders.add(word)
    return out


def merge(parts: Iterable[Named]) -> Named:
    parts = [p for p in parts if p.text]
    if len(parts) == 1:
        return parts[0]
    out = Named("\n".join(p.text for p in parts))
    for p in parts:
        out.words |= p.words
        out.globs |= p.globs
        out.folders |= p.folders
    return out


def _in_text(key: str, full: str, text: str, unique: bool) -> bool:
    """The text holds the path whole (spaces and all): its full form, or its key (after a longer
    directory only where no other path of the segment ends so)."""
    for needle, lone in ((full, True), (key, unique)):
        if "/" not in needle:
            continue
        for m in re.finditer(re.escape(needle), text):
            before = text[m.start() - 1] if m.start() else " "
            after = text[m.end()] if m.end() < len(text) else " "
            if re.match(r"[\w.@+-]", before) or (before == "/" and not lone) or re.match(r"[\w/@+-]", after):
                continue
            if after == "." and re.match(r"\.\w", text[m.end() : m.end() + 2]):
                continue
            return True
    return False


def match(path: str, names: Named, cwd: str = "", tails: Mapping[str, int] | None = None) -> str:
    """How `names` names the file `path`: "exact" (as written), "normalized" (another spelling of the
    same file, or a tail no other path of the segment has), "pattern" (a glob or a folder it
    names covers it), or "" (not named)."""
    if path in names.words:
        return EXACT
    key = path_key(path, cwd)
    keys, globs, folders, text = names.keyed(cwd)
    if key in keys:
        return NORMALIZED
    counts = tails if tails is not None else tail_counts([key])
    for tail in suffixes(key)[1:]:
        if tail in keys and counts.get(tail, 0) <= 1:
            return NORMALIZED
    windows = is_windows(cwd) or is_windows(path)
    full = _slashes(path.strip())
    if windows:
        full = full.lower()
    if _in_text(key, full, text, counts.get(key, 0) <= 1):
        return NORMALIZED
    if any(k.endswith("/" + key) for k in keys if "/" in key and counts.get(key, 0) <= 1):
        return NORMALIZED  # the text names it under a longer directory (another checkout)
    base = key.rsplit("/", 1)[-1]
    for glob, regex in globs:
        if regex.match(key) or ("/" not in glob and regex.match(base)) or any(regex.match(t) for t in suffixes(key)[1:] if "/" in glob):
            return PATTERN
    for folder in folders:
        if key.startswith(folder + "/") and key != folder:
            return PATTERN
    return ""
