"""Every registered format, fuzzed: files that look like the format (its sample from
test_every_format.py) with Hypothesis-drawn values put in: nesting up to 5,000 levels, strings of
megabytes, wrong types, NaN and Infinity, huge integers, NUL and lone surrogates, invalid UTF-8,
truncated and cut lines, SQLite columns holding the wrong type (or text that is not UTF-8), and
msgpack extension types nested past the limit for LangGraph.

Each example is read as an import reads it (formats.discover, then each session's files parsed with
the limits ingest passes), in a forked process: it must end with exit status 0 (no signal, no
exception left unhandled), and every line or file it rejects must say why in words (a BadLine reason,
a refusal), never a Python exception's repr such as "KeyError: 'x'". Derandomized: the same examples
on every run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import traceback
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from contextviewer.core.records import BadLine, ImportProgress
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.lines import open_stream
from tests.integration.ingest.test_every_format import SAMPLES

MAX_LINE_BYTES = 1 << 20  # small, so the long strings drawn go over it
EXAMPLES = 25  # per format; CONTEXTVIEWER_FUZZ_EXAMPLES=N runs N (and N/4 imports) for a deeper local run
EXAMPLES = int(os.environ.get("CONTEXTVIEWER_FUZZ_EXAMPLES", EXAMPLES))
CHILD_SECONDS = 60

SYNTHETIC = [s for s in SAMPLES if not s.fixture]


def test_every_registered_format_is_fuzzed():
    assert {s.agent for s in SYNTHETIC} == {f.name for f in formats.registry()}


# -- what a hostile file holds ---------------------------------------------------------------------


class Deep:
    """A value nested `depth` levels (written as text: json.dumps itself stops near 1,000)."""

    def __init__(self, depth: int, kind: str):
        self.depth, self.kind = depth, kind

    def text(self) -> str:
        if self.kind == "[":
            return "[" * self.depth + "0" + "]" * self.depth
        return '{"a":' * self.depth + "0" + "}" * self.depth

    def msgpack(self) -> bytes:
        return b"\x91" * self.depth + b"\x00"  # fixarray of one, nested


huge_text = st.builds(lambda n, c: c * n, st.sampled_from([1_000, 70_000, 1_200_000, 3_000_000]), st.sampled_from(["a", "é", "\ud83d", "\x00", "\\"]))
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, float("nan"), float("inf"), float("-inf"), -0.0, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["", "\x00", "\ud800", "\udfff lone", "\u202e\ufeff", "null", "[]", "{}", "user", "assistant", "tool"]),
    huge_text,
    st.builds(Deep, st.sampled_from([2, 200, 999, 1001, 5000]), st.sampled_from(["[", "{"])),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=4),
    st.dictionaries(st.text(max_size=6), st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=3),
)
edits = st.lists(
    st.tuples(st.integers(min_value=0, max_value=10**6), st.sampled_from(["replace", "replace", "delete", "wrap", "key"]), values),
    min_size=1,
    max_size=6,
)
cuts = st.lists(
    st.tuples(st.sampled_from(["truncate", "bad-utf8", "newline", "repeat-line", "nothing"]), st.integers(min_value=0, max_value=10**6)),
    max_size=2,
)


def _places(value, out=None) -> list:
    """Every (container, key) in a JSON value."""
    out = [] if out is None else out
    if isinstance(value, dict):
        for key in list(value):
            out.append((value, key))
            _places(value[key], out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.append((value, i))
            _places(item, out)
    return out


def _edit(tree, plan) -> None:
    for index, how, value in plan:
        places = _places(tree)
        if how in ("leaf", "leaf-key"):  # a value that is no object or array (or, leaf-key, its key)
            places = [(c, k) for c, k in places if not isinstance(c[k], (dict, list)) and (how == "leaf" or isinstance(c, dict))]
            how = "key" if how == "leaf-key" else "replace"
        if not places:
            return
        container, key = places[index % len(places)]
        if how == "delete" and isinstance(container, dict):
            del container[key]
        elif how == "wrap":
            container[key] = [container[key], value] if index % 2 else {"x": container[key]}
        elif how == "key" and isinstance(container, dict):
            container[value if isinstance(value, str) else str(value)[:50]] = container.pop(key)
        else:
            container[key] = value


def _dumps(value, ascii: bool = False) -> str:
    deep: list[Deep] = []

    def default(obj):
        if isinstance(obj, Deep):
            deep.append(obj)
            return f"__deep_{len(deep) - 1}__"
        raise TypeError(type(obj))

    text = json.dumps(value, default=default, allow_nan=True, ensure_ascii=ascii)
    for i, d in enumerate(deep):
        text = text.replace(f'"__deep_{i}__"', d.text())
    return text


def _cut(data: bytes, plan) -> bytes:
    for how, at in plan:
        at = at % (len(data) + 1)
        if how == "truncate":
            data = data[: max(at, len(data) // 2)]
        elif how == "bad-utf8":
            data = data[:at] + b"\xff\xc0\xed\xa0\x80" + data[at:]
        elif how == "newline":
            data = data[:at] + b"\n" + data[at:]
        elif how == "repeat-line":
            lines = data.split(b"\n")
            data = b"\n".join(lines + [lines[at % len(lines)]])
    return data


# -- a hostile copy of a sample, per kind of file ---------------------------------------------------


def _json_file(path: Path, plan, cut, ascii: bool = False) -> None:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
        if path.suffix in (".jsonl",) or text.lstrip().startswith("{") and "\n{" in text.strip():
            trees = [json.loads(line) for line in text.splitlines() if line.strip()]
            _edit(trees, plan)
            out = "\n".join(_dumps(t, ascii) for t in trees) + "\n"
        else:
            tree = json.loads(text)
            holder = [tree]
            _edit(holder, plan)
            out = _dumps(holder[0], ascii)
    except (UnicodeDecodeError, ValueError):
        return
    path.write_bytes(_cut(out.encode("utf-8", "surrogatepass"), cut))


def _text_file(path: Path, plan, cut) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    markers = ["#### ", "> ", "```", "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "# aider chat started at 2024-13-45 99:99:99", ""]
    for index, how, value in plan:
        text = value.text() if isinstance(value, Deep) else value if isinstance(value, str) else _dumps(value)
        at = index % (len(lines) + 1)
        lines.insert(at, markers[index % len(markers)] + text)
        if how == "delete" and lines:
            del lines[(index // 7) % len(lines)]
    path.write_bytes(_cut("\n".join(lines).encode("utf-8", "surrogatepass"), cut))


def _sql_value(value, old):
    """What a column gets: the value in SQLite's own types (a wrong one for the column, often)."""
    if isinstance(value, Deep):
        return value.msgpack() if isinstance(old, bytes) else value.text()
    if isinstance(value, (list, dict)):
        return _dumps(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")  # stored as TEXT that may not be UTF-8 (see the CAST)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        return str(value)
    return value


def _nested_ext(depth: int) -> bytes:
    value = msgpack.packb(["end"])
    for _ in range(depth):
        value = msgpack.packb(msgpack.ExtType(5, value))
    return value


def _database(path: Path, plan, cut) -> None:
    db = sqlite3.connect(path)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        for index, how, value in plan:
            table = tables[index % len(tables)]
            columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
            rowids = [r[0] for r in db.execute(f'SELECT rowid FROM "{table}"')]
            if not rowids or not columns:
                continue
            rowid, column = rowids[index % len(rowids)], columns[(index // 3) % len(columns)]
            if how == "delete":
                db.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
                continue
            (old,) = db.execute(f'SELECT "{column}" FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()
            new = _sql_value(value, old)
            if isinstance(old, bytes) and how == "wrap":  # a msgpack value with extension types nested past the limit
                new = _nested_ext([1, 50, 150, 400][index % 4])
            elif isinstance(old, str) and how == "wrap" and old[:1] in "[{":
                try:
                    holder = [json.loads(old)]
                except ValueError:
                    holder = None
                if holder is not None:
                    _edit(holder, [(index // 5, "replace", value)])
                    new = _dumps(holder[0])
            as_text = isinstance(new, str) or (isinstance(new, bytes) and isinstance(value, str))
            if isinstance(new, str):
                new = new.encode("utf-8", "surrogatepass")
            cast = "CAST(? AS TEXT)" if as_text else "?"
            db.execute(f'UPDATE "{table}" SET "{column}" = {cast} WHERE rowid = ?', (new, rowid))
        db.commit()
    except sqlite3.Error:
        pass  # a constraint said no: the store keeps that row as it was
    finally:
        db.close()


def _hostile_copy(tmp: Path, sample_root: Path, sample: Path, plan, cut, ascii: bool = False) -> Path:
    """A copy of the sample's folder with one of its files made hostile; the path to read. ``ascii``:
    a JSON file is written as a JSON writer writes it (a lone surrogate as its escape, not as bytes
    that are not UTF-8)."""
    copy = tmp / "copy"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(sample_root, copy)
    target = copy / sample.relative_to(sample_root)
    files = sorted(p for p in ([target] if target.is_file() else target.rglob("*")) if p.is_file())
    files = [p for p in files if not p.name.endswith(("-wal", "-shm"))] or files
    victim = files[plan[0][0] % len(files)]
    head = victim.read_bytes()[:16]
    if head.startswith(b"SQLite format 3"):
        _database(victim, plan, cut)
    elif victim.suffix in (".md", ".markdown"):
        _text_file(victim, plan, cut)
    else:
        _json_file(victim, plan, cut, ascii)
    return target


# -- read it as an import does, in a forked process --------------------------------------------------

_EXCEPTION_REPR = re.compile(r"^\s*[A-Z]\w*(Error|Exception|Warning|Interrupt)\b|Traceback \(most recent call last\)")


def _human(reason) -> bool:
    return (
        isinstance(reason, str)
        and len(re.findall(r"[A-Za-z]{2,}", reason)) >= 3
        and not _EXCEPTION_REPR.search(reason)
        and not re.fullmatch(r"\s*['\"(\[{<].*", reason, re.S)
    )


def _read_as_an_import(path: Path) -> dict:
    found = formats.discover(path)
    said = {"records": 0, "bad": [], "refused": []}
    for skipped, looked_like in found.skipped:  # what an import says of a file no format reads
        said["refused"].append(formats.refusal(skipped, looked_like or None))
    for group in found.sessions:
        fmt = formats.get(group.format)
        files = [(group.main, None, None)] if group.main else []
        files += [(s.path, s.agent_id, s.agent_type) for s in group.subagents]
        for file, agent_id, agent_type in files:
            stream = None
            if fmt.storage in (formats.LINES, formats.DOCUMENT) and not file.is_dir():
                stream, _ = open_stream(file, max_decompressed_bytes=64 << 20)
            try:
                source = ParseInput(path=file, stream=stream, agent_id=agent_id, agent_type=agent_type,
                                    max_line_bytes=MAX_LINE_BYTES, max_decompressed_bytes=64 << 20)
                for record in fmt.parse(source):
                    if isinstance(record, BadLine):
                        said["bad"].append(record.reason)
                    elif not isinstance(record, ImportProgress):
                        said["records"] += 1
            finally:
                if stream is not None:
                    stream.close()
    return said


def _in_a_child(path: Path) -> tuple[int, dict]:
    """Exit status of a forked process that reads `path`, and what it said."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_fd)
            signal.alarm(CHILD_SECONDS)  # a hang ends it (SIGALRM): a failure too
            try:
                said = _read_as_an_import(path)
            except BaseException:
                said, code = {"exception": traceback.format_exc()[-3000:]}, 3
            with open(write_fd, "w", encoding="utf-8") as out:
                json.dump(said, out)
        finally:
            os._exit(code)
    os.close(write_fd)
    with open(read_fd, encoding="utf-8") as answers:
        data = answers.read()
    _, status = os.waitpid(pid, 0)
    return status, json.loads(data) if data else {}


_ROOTS: dict[str, tuple[Path, Path]] = {}


def _sample(sample, tmp_path_factory) -> tuple[Path, Path]:
    if sample.id not in _ROOTS:
        root = tmp_path_factory.mktemp(f"fuzz-{sample.id}")
        path = sample.write(root, None)
        if not path.is_relative_to(root):
            # A sample built once for the whole session (LangGraph runs real graphs) lives in the
            # folder of the test that built it first: copied here with its companions (-wal, -shm).
            if path.is_dir():
                shutil.copytree(path, root / path.name)
            else:
                for part in path.parent.glob(path.name + "*"):
                    shutil.copy2(part, root / part.name)
            path = root / path.name
        _ROOTS[sample.id] = (root, path)
    return _ROOTS[sample.id]


@pytest.mark.backend_independent  # the parsers alone, in a forked child: no database (the import half below runs on both)
@pytest.mark.parametrize("sample", SYNTHETIC, ids=[s.id for s in SYNTHETIC])
def test_a_hostile_file_of_each_format_ends_with_a_message_never_a_crash(sample, tmp_path_factory):
    root, path = _sample(sample, tmp_path_factory)
    work = tmp_path_factory.mktemp(f"work-{sample.id}")
    seen = {"bad": 0, "refused": 0, "records": set()}

    @hsettings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
               suppress_health_check=list(HealthCheck))
    @given(plan=edits, cut=cuts)
    def read(plan, cut):
        target = _hostile_copy(work, root, path, plan, cut)
        status, said = _in_a_child(target)
        assert not os.WIFSIGNALED(status), f"the importer crashed: signal {signal.Signals(os.WTERMSIG(status)).name}"
        assert os.WEXITSTATUS(status) == 0, said.get("exception", said)
        for reason in said["bad"] + said["refused"]:
            assert _human(reason), f"not a message a person can read: {reason[:300]!r}"
        seen["bad"] += len(said["bad"])
        seen["refused"] += len(said["refused"])
        seen["records"].add(said["records"])

    read()
    # The hostile values reached the parser: lines or files rejected (each with its reason), or at
    # least records read differently from one example to the next.
    assert seen["bad"] + seen["refused"] > 0 or len(seen["records"]) > 1


# -- and stored: the same hostile files imported whole (parse, writer, database) --------------------

IMPORT_EXAMPLES = max(6, EXAMPLES // 4)


@pytest.mark.django_db
@pytest.mark.parametrize("sample", SYNTHETIC, ids=[s.id for s in SYNTHETIC])
def test_a_hostile_file_of_each_format_imports_or_says_why(sample, tmp_path_factory):
    # import_path parses in its own parsing process (ingest/child.py); what it stores goes through the
    # writer into this test's database (SQLite, or PostgreSQL with DATABASE_URL), where a value a
    # column cannot hold would raise.
    from contextviewer.ingest import files as ingest
    from tests.factories import make_project

    root, path = _sample(sample, tmp_path_factory)
    work = tmp_path_factory.mktemp(f"import-{sample.id}")
    runs = []

    @hsettings(max_examples=IMPORT_EXAMPLES, deadline=None, derandomize=True, database=None,
               suppress_health_check=list(HealthCheck))
    @given(plan=edits, cut=cuts)
    def imports(plan, cut):
        target = _hostile_copy(work, root, path, plan, cut)
        runs.append(target)
        report = ingest.import_path(make_project(f"fuzz-{len(runs)}"), target)
        for error in report.errors:
            assert _human(error["reason"]), f"not a message a person can read: {error['reason'][:300]!r}"
        for file in report.files:
            assert file.status in ("imported", "unchanged", "refused") or file.errors, file

    imports()


# -- the values of issue 40 (item 2), planted in every format at a few places -----------------------

PLANTED = {
    "nul": "user\x00",
    "surrogate": "user\ud800",
    "nan": float("nan"),
    "long-id": "i" * 100_000,
    "surrogate-key": "\udfffkey",  # planted as a key (the "key" edit)
}


# Formats not yet hardened here (none today): (agent, case) pairs expected to fail.
NOT_YET: set[tuple[str, str]] = set()


@pytest.mark.backend_independent  # the parsers alone, in a forked child
@pytest.mark.parametrize("case", list(PLANTED))
@pytest.mark.parametrize("sample", SYNTHETIC, ids=[s.id for s in SYNTHETIC])
def test_a_nul_a_surrogate_a_nan_or_a_long_id_in_each_format_is_read_or_said(sample, case, tmp_path_factory):
    if (sample.agent, case) in NOT_YET:
        pytest.xfail("not yet hardened")
    root, path = _sample(sample, tmp_path_factory)
    work = tmp_path_factory.mktemp(f"planted-{sample.id}-{case}")
    how = "leaf-key" if case == "surrogate-key" else "leaf"
    for index in (1, 2, 5, 9):  # a few places of the sample's first file (ids and kinds among them)
        target = _hostile_copy(work, root, path, [(index, how, PLANTED[case])], [], ascii=True)
        status, said = _in_a_child(target)
        assert not os.WIFSIGNALED(status) and os.WEXITSTATUS(status) == 0, said.get("exception", said)
        for reason in said["bad"] + said["refused"]:
            assert _human(reason), f"not a message a person can read: {reason[:300]!r}"
        # One bad value is one bad record: the file is still read.
        assert said["records"] > 0, said
