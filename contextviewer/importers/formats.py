"""The registry of formats: which agent wrote a file, where its sessions are, how to read them.

Pure (no Django). A format is one package, ``importers/<format>/``: ``entry.py`` defines its light
``ENTRY = Entry(...)`` (name, label, storage, where, file endings, locations, ``sniff`` and its tool
vocabulary: what discovery, the upload page and the tool views need, without the parser),
``parser.py`` its ``FORMAT = ENTRY.format(...)``, ``tools.py`` its tool vocabulary; and one line in
``REGISTRY`` below names its entry. Nothing outside ``importers/`` names a format. Sniffing a path
imports the light entries only; a format's parser is imported when it claims a path or is asked
for by name (``get``, ``harness``), and ``registry()`` imports them all. A format says:

- ``sniff(path, head)``: how sure it is (0 to 1) that a file or folder is its own, from the name,
  the folder layout and ``head`` (the first ``SNIFF_BYTES`` of a file, decompressed; ``b""`` for a
  folder). 0 means "not mine". Where two formats claim a path, the higher score wins;
- ``group(paths)``: its claimed paths as sessions (a main file with its sub-agent files);
- ``parse(ParseInput)``: the records of ``core/records.py`` (see ``driver.py`` for the rules);
- per-format helpers the pages and exports use on stored raw records (``images``, ``enrich``),
  and ``fill_extras`` (what the importer now puts on a tool result's ``extra``, for rows stored
  before it did);
- ``harness``: the rules of the harness that wrote the logs (``core/harness.py``'s ``Harness``:
  window, auto-fold point, output reserve, estimator, own policy, captured prompt), declared on the
  format's module as ``HARNESS``; ``harness(name, spec)`` below finds them, and every caller hands
  them to the core (which never looks rules up by a format's name);
- ``export``: the agent's own session file as an export target (``core/export.py``'s ``Target``),
  offered only for the format's conversations under its name (builds/services.py lists the targets).

Records, per format (the ingest service relies on these):
- every ``MessageRecord`` has a ``uuid`` stable across re-imports (re-reading a file must give the
  same uuids: that is how nothing is stored twice) and ``session_id`` = the conversation's id; a
  format that ``rewrites`` records gives a changed message again under its uuid, and the stored
  copy is updated (usage too: a call the re-read message no longer has is dropped);
- a ``UsageRecord`` is one model call; ``message_uuid`` is the first message it wrote;
- a ``FoldRecord``'s ``boundary_uuid`` is a message (often a system marker the format emits) whose
  position closes the archived segment; ``summary_uuid`` the message holding the summary, if any;
- a file holding several sessions (``multi_session``) ends each session with its ``SessionInfo``;
- messages with an ``agent_id`` other than the file's own go to a sub-agent conversation
  ``<session>/<agent_id>``, linked by an ``AgentLink`` to the tool call that started it.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from contextviewer.core.harness import DEFAULT_RULES, Harness
from contextviewer.core.records import Record
from contextviewer.core.model_specs import ModelSpec
from contextviewer.importers.common import JSON_DEPTH, shorten_strings
from contextviewer.importers.tool_vocabulary import NO_TOOLS, ToolVocabulary
from contextviewer.importers.lines import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    GZIP_MAGIC,
    GzipStream,
    utf8_head,
)

if TYPE_CHECKING:  # the type of Format.export only: a format that declares one imports core/export.py itself
    from contextviewer.core.export import Target

SNIFF_BYTES = 64 * 1024

# How a format's data lies on disk, which decides how a changed source is read again:
LINES = "lines"  # append-only lines: a grown file is read from where the last import stopped
DOCUMENT = "document"  # one file read whole (a JSON document, a Markdown log): read again in full
DATABASE = "database"  # a SQLite file: read again in full (stable uuids keep what is stored)
FOLDER = "folder"  # a folder of files that is one session (or several): read again in full


@dataclass(frozen=True, slots=True)
class SubagentFile:
    path: Path
    agent_id: str
    agent_type: str | None = None
    is_compaction: bool = False  # the compaction call's own transcript (a summarizer run)


@dataclass
class SessionFiles:
    """One unit to import: a main file (or folder, or database) and its sub-agent files.

    ``main`` is None when only sub-agent files were found (or named); ``session_id`` then says
    which session they belong to."""

    format: str
    main: Path | None
    subagents: list[SubagentFile] = field(default_factory=list)
    session_id: str | None = None


@dataclass
class ParseInput:
    path: Path  # the file, folder or database being read
    stream: IO[bytes] | None = None  # LINES/DOCUMENT: the file's bytes from start_offset (gzip undone)
    start_offset: int = 0
    start_line: int = 0
    agent_id: str | None = None  # a sub-agent file: its agent id
    agent_type: str | None = None
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES


def _each_alone(fmt: str) -> Callable[[list[Path]], list[SessionFiles]]:
    def group(paths: list[Path]) -> list[SessionFiles]:
        return [SessionFiles(format=fmt, main=p) for p in sorted(paths)]

    return group


def no_images(raw: str) -> list[dict]:
    return []


def as_is(message: dict) -> dict:
    return message


def sqlite_companions(path: Path) -> list[Path]:
    """A SQLite database's write-ahead log: rows not yet checkpointed into the file live there."""
    return [path.with_name(path.name + "-wal")]


# The files SQLite keeps beside a database while it is open, each with what it is: the reader of
# the database reads them with it (sqlite_db.py), so they are not files of their own.
SQLITE_BESIDE = (("-wal", "its SQLite write-ahead log"), ("-shm", "its SQLite shared-memory index"),
                 ("-journal", "its SQLite rollback journal"))


def is_sqlite_file(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def sqlite_beside(path: Path) -> list[tuple[Path, str]]:
    """The -wal, -shm and -journal files beside a SQLite database ``path`` (those that exist),
    each with what it is; none for a file that is no SQLite database."""
    if path.is_dir() or not is_sqlite_file(path):
        return []
    found = [(path.with_name(path.name + end), what) for end, what in SQLITE_BESIDE]
    return [(p, what) for p, what in found if p.is_file()]


@dataclass(frozen=True)
class Format:
    name: str  # stored as Conversation.agent and Source.format: "claude-code", "codex", ...
    label: str  # what people call it: "Claude Code"
    storage: str  # LINES | DOCUMENT | DATABASE | FOLDER
    sniff: Callable[[Path, bytes], float]
    parse: Callable[[ParseInput], Iterator[Record]]
    group: Callable[[list[Path]], list[SessionFiles]] | None = None  # default: each path alone
    multi_session: bool = False  # one path may hold several sessions
    # A session id names a session of its store only (LangGraph's thread ids: "1" in many apps):
    # another store's session of that id is another conversation (ingest/row_maker.py).
    ids_per_store: bool = False
    # The agent rewrites records in place (a message's text, tool results or usage change after it
    # was first written): a message read again whose content changed updates the stored copy
    # (ingest), where other formats keep the copy first stored.
    rewrites: bool = False
    where: str = ""  # where the agent writes its logs (README, help texts, the upload page)
    # The file name endings the format reads, companions included (".jsonl", ".db-wal"): the upload
    # page's picker accepts these (``upload_extensions``); a folder-only format names its files'.
    extensions: tuple[str, ...] = ()
    locations: tuple[str, ...] = ()  # default folders to watch ("~/.codex/sessions")
    # The base64 image sources ({"media_type", "data"}) of a stored raw record, in block order.
    images: Callable[[str], list[dict]] = no_images
    # An exporter dict of one message with what the stored blocks leave in the raw record put
    # back (thinking signatures, image data); ``message["raw"]`` is the raw record.
    enrich: Callable[[dict], dict] = as_is
    # The stored blocks of a message imported before the format put an ``extra`` on its tool
    # results (a run's stdout and stderr apart, a clip's marker and original), with it re-derived
    # from the stored raw record and blocks; None when nothing changes. A data migration calls it
    # on the tool results of this format's conversations. None: the format has nothing to fill.
    fill_extras: Callable[[str, list], list | None] | None = None
    # Files beside a session that are part of it (a SQLite -wal, a .meta.json): a change to one of
    # them makes the session be read again. None: a DATABASE's -wal, nothing for the others.
    companions: Callable[[Path], list[Path]] | None = None
    # The rules of the harness that writes this format (core/harness.py): where it folds on its own,
    # the output it reserves, how it estimates tokens, its own policy in the policy lab. Default: no
    # automatic fold, the default reserve and estimator.
    harness: Harness = DEFAULT_RULES
    # The agent's own session file, as an export target (core/export.py's ``Target``, its writer
    # there): offered only for this format's conversations, under the format's name
    # (``?format=<name>``); builds/services.py lists it before the plain targets. None: no such file.
    export: Target | None = None
    # Which of the agent's tools is a shell, an edit, a read, a search, a sub-agent (tool_vocabulary.py)
    tools: ToolVocabulary = NO_TOOLS

    def companion_files(self, path: Path) -> list[Path]:
        if self.companions is not None:
            return self.companions(path)
        # A database, or a SQLite file a folder format reads (opencode.db): its -wal.
        return sqlite_companions(path) if self.storage == DATABASE or is_sqlite_file(path) else []

    def sessions(self, paths: list[Path]) -> list[SessionFiles]:
        return (self.group or _each_alone(self.name))(paths)


@dataclass(frozen=True)
class Entry:
    """What the registry knows of a format without importing its parser: its name, label, storage,
    where its logs are, the file endings it reads, and its ``sniff``. A format's entry is the
    ``ENTRY`` of its light module ``importers/<format>/entry.py`` (the sniff and the few constants it
    needs, nothing heavy); its full ``Format`` (parse, group, harness, export...) is the ``FORMAT``
    of ``module``, imported the first time the format claims a path or is asked for by name, and
    built from the entry (``entry.format(parse=..., ...)``) so the two always agree."""

    module: str  # the module whose FORMAT it is: "contextviewer.importers.claude_code.parser"
    name: str
    label: str
    storage: str
    sniff: Callable[[Path, bytes], float]
    where: str = ""
    extensions: tuple[str, ...] = ()
    locations: tuple[str, ...] = ()
    tools: ToolVocabulary = NO_TOOLS  # the format's tools.py: which tool is a shell, an edit, a read...

    def format(self, **parts: Any) -> Format:
        """The full Format: this entry's fields and ``parts`` (parse, group, harness, ...)."""
        return Format(name=self.name, label=self.label, storage=self.storage, sniff=self.sniff, where=self.where,
                      extensions=self.extensions, locations=self.locations, tools=self.tools, **parts)

    def load(self) -> Format:
        return _load(self)


# The registry: one line per format, its light module (importers/<format>/entry.py, whose ENTRY names the
# format's own module). Order breaks ties between equal claims. Sniffing imports only these; a
# format's module is imported when it claims a path (or is asked for by name).
REGISTRY = [
    "contextviewer.importers.claude_code.entry",
    "contextviewer.importers.picoclaw.entry",
    "contextviewer.importers.opencode.entry",
    "contextviewer.importers.kilo.entry",
    "contextviewer.importers.crush.entry",
    "contextviewer.importers.opencode_go.entry",
    "contextviewer.importers.messages.entry",
    "contextviewer.importers.openhands.entry",
    "contextviewer.importers.swe_agent.entry",
    "contextviewer.importers.mini_swe_agent.entry",
    "contextviewer.importers.cline.entry",
    "contextviewer.importers.roo_code.entry",
    "contextviewer.importers.kilo_code.entry",
    "contextviewer.importers.langgraph.entry",
    "contextviewer.importers.gemini.entry",
    "contextviewer.importers.qwen.entry",
    "contextviewer.importers.pi.entry",
    "contextviewer.importers.efferent.entry",
    "contextviewer.importers.aider.entry",
    "contextviewer.importers.codex.entry",
    "contextviewer.importers.vibe.entry",
    "contextviewer.importers.copilot.entry",
    "contextviewer.importers.gptme.entry",
    "contextviewer.importers.kimi.entry",
    "contextviewer.importers.goose.entry",
    "contextviewer.importers.droid.entry",
    "contextviewer.importers.hermes.entry",
    "contextviewer.importers.amp.entry",
    "contextviewer.importers.cursor.entry",
    "contextviewer.importers.iflow.entry",
    "contextviewer.importers.antigravity_cli.entry",
]

_ENTRIES: list[Entry] | None = None
_LOADED: dict[str, Format] = {}  # entry.module -> its FORMAT, as formats are asked for
_REGISTRY: list[Format] | None = None  # every format loaded (registry()); tests may set it


def entries() -> list[Entry]:
    """Every format's light entry, in registry order (no format module imported)."""
    global _ENTRIES
    if _ENTRIES is None:
        _ENTRIES = [importlib.import_module(name).ENTRY for name in REGISTRY]
    return _ENTRIES


def _load(entry: Entry) -> Format:
    fmt = _LOADED.get(entry.module)
    if fmt is None:
        fmt = _LOADED[entry.module] = importlib.import_module(entry.module).FORMAT
    return fmt


def _load_registry() -> list[Format]:
    return [_load(entry) for entry in entries()]


def registry() -> list[Format]:
    """Every format, loaded (each format's module imported)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _load_registry()
    return _REGISTRY


def _candidates() -> list[Entry] | list[Format]:
    """What sniffing and naming look through: the formats themselves once all are loaded (or a
    test set its own), else the light entries."""
    return _REGISTRY if _REGISTRY is not None else entries()


def _full(found: Entry | Format) -> Format:
    return found.load() if isinstance(found, Entry) else found


def get(name: str | None) -> Format | None:
    found = next((f for f in _candidates() if f.name == name), None)
    return _full(found) if found is not None else None


def label(name: str | None) -> str:
    found = next((f for f in _candidates() if f.name == name), None)
    return found.label if found else (name or "unknown")


def labels() -> str:
    return ", ".join(f.label for f in _candidates())


def tool_vocabulary() -> ToolVocabulary:
    """Every format's tool vocabulary together (the viewer reads a stored call's name in it)."""
    merged = NO_TOOLS
    for fmt in _candidates():
        merged = merged | fmt.tools
    return merged


def upload_extensions() -> list[str]:
    """Every file ending some format reads, and ``.zip`` (an upload unpacks a zip of a folder)."""
    found = {ext.lower() for fmt in _candidates() for ext in fmt.extensions}
    return sorted(found | {".zip"})


def default_name() -> str:
    """The format a row names when nothing else says (the first registered: the reference format)."""
    return _candidates()[0].name


# -- harness rules ------------------------------------------------------------------------------

_RULES: dict[int, tuple[Format, Harness]] = {}  # id(format) -> (format, its rules with name and label)


def _rules(fmt: Format) -> Harness:
    found = _RULES.get(id(fmt))
    if found is None or found[0] is not fmt:
        found = _RULES[id(fmt)] = (fmt, replace(fmt.harness, agent=fmt.name, label=fmt.harness.label or fmt.label))
    return found[1]


def harnesses() -> dict[str, Harness]:
    """Every format's harness rules by format name, with the format's name and label filled in."""
    return {f.name: _rules(f) for f in registry()}


def harness(name: str | None, spec: ModelSpec | None = None) -> Harness:
    """The rules of the harness that wrote format ``name`` (a conversation's agent); an unknown name
    gets the default rules. With no name at all (a bare model), the rules of the harness that
    usually runs ``spec``'s provider's models (``Harness.usual_for``), else the default."""
    if name is None:
        provider = spec.provider if spec is not None else ""
        return next((h for h in harnesses().values() if provider in h.usual_for), DEFAULT_RULES)
    fmt = get(name)
    return _rules(fmt) if fmt is not None else DEFAULT_RULES


# -- sniffing -----------------------------------------------------------------------------------


# A zip archive's first bytes (a local file header; an empty archive's end record). No format
# reads one, whatever its members are: a stored (uncompressed) member's JSON lines would otherwise
# be claimed, and read with the archive's headers as bad lines.
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def head_of(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first ``size`` bytes of a file, gzip undone, UTF-16 or UTF-32 text as UTF-8; b"" for a
    folder or an unreadable file. A first JSON line longer than ``size`` (a 100,000-character id, a
    large pasted prompt) is read to its end, up to ``SNIFF_LINE_BYTES``, with its long strings cut
    short (``shorten_strings``): the sniff sees its keys, as it sees a shorter line's."""
    if not path.is_file():
        return b""
    try:
        with open(path, "rb") as fh:
            stream: IO[bytes] = fh
            head = fh.read(size)
            if head[:2] == GZIP_MAGIC:
                fh.seek(0)
                stream = GzipStream(fh, max_decompressed_bytes=max(size, SNIFF_LINE_BYTES) * 64)
                head = _read_up_to(stream, size)
            if len(head) == size and b"\n" not in head and head.lstrip()[:1] == b"{":
                head = _first_line_shortened(head, stream, size)
    except Exception:  # a broken file: the format's parser says what is wrong with it
        return b""
    return utf8_head(head)


SNIFF_LINE_BYTES = 16 * 1024 * 1024  # how far a first line longer than the sniff window is read


def _read_up_to(stream: IO[bytes], size: int) -> bytes:
    chunks, total = [], 0
    while total < size:
        chunk = stream.read(size - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _first_line_shortened(head: bytes, stream: IO[bytes], size: int) -> bytes:
    """``head`` with its first line read to its end and its long strings shortened, then as much
    of what follows as fits in ``size``; ``head`` itself when the line ends past SNIFF_LINE_BYTES."""
    data = head
    while b"\n" not in data[-(1 << 20) - 1:] and len(data) < SNIFF_LINE_BYTES:
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        data += chunk
    end = data.find(b"\n")
    line, rest = (data, b"") if end < 0 else (data[:end], data[end:])
    if end < 0 and len(data) >= SNIFF_LINE_BYTES:
        return head
    short = shorten_strings(line)
    return (short + rest[: max(0, size - len(short))])[:size] if len(short) < size else short


def _scored(path: Path, head: bytes | None) -> list[tuple[float, Entry | Format]]:
    if head is None:
        head = head_of(path)
    if head.startswith(ZIP_MAGIC):
        return []
    out = []
    for fmt in _candidates():
        try:
            score = float(fmt.sniff(path, head) or 0.0)
        except Exception:  # a sniffer must never stop discovery
            score = 0.0
        if score > 0:
            out.append((score, fmt))
    out.sort(key=lambda pair: -pair[0])
    return out


def scores(path: Path, head: bytes | None = None) -> list[tuple[float, Format]]:
    """Every format's claim on ``path``, strongest first (claims of 0 left out)."""
    return [(score, _full(fmt)) for score, fmt in _scored(path, head)]


def claim(path: Path, head: bytes | None = None) -> Format | None:
    """The format whose claim on ``path`` is strongest (only its module is imported), or None."""
    found = _scored(path, head)
    return _full(found[0][1]) if found else None


# -- discovery ----------------------------------------------------------------------------------


@dataclass
class Discovery:
    sessions: list[SessionFiles] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # (path, what it looked like)
    # Links out of the chosen folder, never read: (path, why). A folder names what it holds, and a
    # link in it to ~/.ssh or /etc must not carry that file into the database.
    not_followed: list[tuple[Path, str]] = field(default_factory=list)


def _outside(path: Path, root: Path) -> bool:
    """Whether ``path``, its links resolved, leaves ``root`` (a resolved folder)."""
    try:
        return not path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a loop of links
        return True


def not_followed_reason(path: Path) -> str:
    what = "folder" if path.is_dir() else "file"
    return f"a link to a {what} outside the chosen folder: not followed"


def discover(path: str | Path) -> Discovery:
    """Sessions under ``path`` (a file, a folder of sessions, or a folder that is one session)."""
    path = Path(path).expanduser()
    found = Discovery()
    if path.is_file() or (path.is_dir() and claim(path) is not None):
        fmt = claim(path)
        if fmt is None:
            found.skipped.append((path, describe(path)))
        else:
            found.sessions.extend(fmt.sessions([path]))
        return found
    if not path.is_dir():
        return found
    root = path.resolve()
    claimed: dict[str, list[Path]] = {}
    # Links are not followed: one out of the folder is listed as such; one within it is left out,
    # since its target is found where it is (no file is read twice).
    for folder, dirnames, filenames in os.walk(path):
        base = Path(folder)
        dirnames.sort()
        for name in list(dirnames):
            sub = base / name
            if sub.is_symlink():
                if _outside(sub, root):
                    found.not_followed.append((sub, not_followed_reason(sub)))
                dirnames.remove(name)
                continue
            fmt = claim(sub, b"")
            if fmt is not None:
                claimed.setdefault(fmt.name, []).append(sub)
                dirnames.remove(name)  # the format reads the whole folder
        for name in sorted(filenames):
            file = base / name
            if file.is_symlink():
                if _outside(file, root):
                    found.not_followed.append((file, not_followed_reason(file)))
                continue
            if not file.is_file():
                continue
            fmt = claim(file)
            if fmt is None:
                found.skipped.append((file, ""))  # described only when nothing was found at all
            else:
                claimed.setdefault(fmt.name, []).append(file)
    for found_format in _candidates():
        if found_format.name in claimed:
            fmt = _full(found_format)
            for group in fmt.sessions(claimed[fmt.name]):
                # A format finds a session's sub-agent files itself (a folder beside the main file).
                outside = [s for s in group.subagents if _outside(s.path, root)]
                found.not_followed.extend((s.path, not_followed_reason(s.path)) for s in outside)
                group.subagents = [s for s in group.subagents if s not in outside]
                found.sessions.append(group)
    return found


# -- what a refused file looked like ------------------------------------------------------------


def describe(path: Path, head: bytes | None = None) -> str:
    """A short description of what a file looks like, for the refusal message."""
    if path.is_dir():
        try:
            names = sorted(p.name for p in path.iterdir())
        except OSError:
            names = []
        shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
        return f"a folder of {len(names)} entries ({shown})" if names else "an empty folder"
    if head is None:
        head = head_of(path)
    if not head:
        return "the file is empty"
    sample = head.removeprefix(b"\xef\xbb\xbf")
    if sample.startswith(ZIP_MAGIC):
        return ZIP_REFUSAL
    if b"\x00" in sample[:8192]:
        if sample.startswith(b"SQLite format 3\x00"):
            return _describe_sqlite(path, sample)
        return "a binary file"
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = sample[: exc.start].decode("utf-8")
        if len(sample) - exc.start > 4:
            return "a file that is not UTF-8 text"
    stripped = text.lstrip()
    lines = path.name.endswith((".jsonl", ".jsonl.gz", ".ndjson"))
    try:
        value = _first_json(stripped, complete=len(head) < SNIFF_BYTES, lines=lines)
    except RecursionError:
        return f"a JSON document nested deeper than {JSON_DEPTH} levels"
    if value is not _NOTHING:
        return _describe_json(value, stripped)
    first = stripped.split("\n", 1)[0][:60]
    return f"a text file starting {first!r}"


WAL_ALONE = "a SQLite database with no tables: it is in WAL mode"  # a refusal that says what to do


def _describe_sqlite(path: Path, head: bytes) -> str:
    """A SQLite file no format claimed. One with no table at all (its header: one page, whose
    b-tree holds no cell) in WAL mode (read and write versions 2) had its rows in its -wal file,
    which an app writes first: the file without it looks empty (Crush's store does)."""
    if len(head) >= 105 and int.from_bytes(head[28:32], "big") <= 1 and head[100] == 13 and not int.from_bytes(head[103:105], "big"):
        if head[18] == 2 and head[19] == 2 and not path.with_name(path.name + "-wal").exists():
            return (
                f"{WAL_ALONE}, so its rows are likely in {path.name}-wal, which was not given: import the file "
                "with its -wal beside it (its folder, or both files)"
            )
        return "a SQLite database with no tables"
    return "a SQLite database with no tables a format knows"


_NOTHING = object()
ZIP_REFUSAL = "a zip archive: unpack it or upload the folder"


def _first_json(text: str, complete: bool, lines: bool) -> Any:
    if not text or text[0] not in "[{":
        return _NOTHING
    first_line, _, rest = text.partition("\n")
    if lines or rest.strip():
        try:
            return ("lines", json.loads(first_line))
        except ValueError:
            pass
    try:
        return json.loads(text) if complete else json.JSONDecoder().raw_decode(text)[0]
    except ValueError:
        return {"…": None} if text[0] == "{" else ["…"]


def _keys(obj: dict) -> str:
    keys = list(obj)
    return ", ".join(str(k) for k in keys[:6]) + (", …" if len(keys) > 6 else "")


def _describe_json(value: Any, text: str) -> str:
    if isinstance(value, tuple) and value and value[0] == "lines":
        first = value[1]
        if isinstance(first, dict):
            return f"JSON lines whose first object has keys {_keys(first)}"
        return "JSON lines"
    if isinstance(value, list):
        objects = [v for v in value if isinstance(v, dict)]
        if value == ["…"]:
            return "a JSON array"
        if objects:
            keys: dict[str, None] = {}
            for obj in objects:
                keys.update(dict.fromkeys(map(str, obj)))
            return f"a JSON array of {len(value)} objects with keys {_keys(keys)}"
        return f"a JSON array of {len(value)} values"
    if isinstance(value, dict):
        if value == {"…": None}:
            return "a JSON object"
        return f"a JSON object with keys {_keys(value)}"
    return "a JSON value"


def refusal(path: Path, looked_like: str | None = None) -> str:
    """The sentence said when no format reads ``path``."""
    looked_like = looked_like or describe(path)
    if looked_like == "the file is empty":
        return "the file is empty: nothing to import"
    if looked_like == ZIP_REFUSAL or looked_like.startswith(WAL_ALONE):  # it says what to do instead
        return looked_like
    return f"{looked_like}: not a format contextviewer reads ({labels()})"
