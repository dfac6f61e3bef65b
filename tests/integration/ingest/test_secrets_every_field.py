"""A secret in any field of any format is stored masked (issue 40, item 1).

Each format's synthetic sample (the per-format writers of test_every_format.py) is rewritten with a
secret planted in its names, ids and paths: every string under a key such as `id`, `uuid`,
`sessionId`, `cwd`, `gitBranch`, `name` (a tool's name), `model`, `call_id`, `agentId`, `path`, in
JSON and JSONL files and in the JSON and the text columns of SQLite stores, gets a secret of one
of the ten prefixed kinds appended after `__` (as an MCP tool's name holds one:
`mcp__vault__ghp_...`); every other copy of the same value in the sample gets the same one, so ids
still refer to each other. The sample is imported, and then every text and JSON field of every
stored row (conversations, messages with their blocks, raw lines, flags and tokens, model calls,
folds, sources with their names, paths and errors, agent links, jobs, fingerprints) and the words
of the search index are looked through: no planted secret, and no run of 12 of its characters,
may be found.

Uploads: a file's name and a folder's path holding a secret are stored masked (on disk, in the
Source, in the job).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
import string
from pathlib import Path

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from contextviewer.builds import services as builds
from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Message, Source
from contextviewer.ingest import files as ingest
from tests.integration.ingest import test_every_format as every

pytestmark = pytest.mark.django_db

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def _run(rng: random.Random, chars: str, n: int) -> str:
    return "".join(rng.choice(chars) for _ in range(n))


# The ten prefixed kinds (github's four prefixes count as one kind each where the scanners do).
KINDS = {
    "github_token": lambda r: "ghp_" + _run(r, ALNUM, 36),
    "github_oauth": lambda r: "gho_" + _run(r, ALNUM, 36),
    "github_pat": lambda r: "github_pat_" + _run(r, ALNUM, 22) + "_" + _run(r, ALNUM, 59),
    "anthropic_key": lambda r: "sk-ant-api03-" + _run(r, ALNUM, 40),
    "openai_key": lambda r: "sk-proj-" + _run(r, ALNUM, 40),
    "aws_access_key": lambda r: "AKIA" + _run(r, UPPER, 16),
    "slack_token": lambda r: "xoxb-" + _run(r, string.digits, 12) + "-" + _run(r, ALNUM, 24),
    "google_api_key": lambda r: "AIza" + _run(r, ALNUM, 35),
    "stripe_key": lambda r: "sk_live_" + _run(r, ALNUM, 24),
    "jwt": lambda r: "eyJhbGciOiJIUzI1NiJ9.eyJ" + _run(r, ALNUM, 30) + "." + _run(r, ALNUM, 43),
}
_KIND_NAMES = list(KINDS)

# Where a log keeps a name, an id or a path.
PLANT_KEYS = {
    "id", "uuid", "parentUuid", "leafUuid", "sessionId", "session_id", "sessionID", "cwd", "gitBranch", "name",
    "model", "modelID", "call_id", "tool_call_id", "tool_use_id", "toolCallID", "toolCallId", "agentId", "requestId",
    "thread_id", "path", "workdir", "directory", "parentID", "messageID", "branch", "git_branch", "title", "tool",
    "toolName", "tool_name", "function", "slug", "projectHash", "working_dir", "repo", "repository", "model_name",
}
PLANT_COLUMNS = {
    "id", "session_id", "parent_session_id", "message_id", "name", "model", "cwd", "path", "title", "tool_call_id",
    "conversation_id", "branch", "working_directory", "thread_id", "checkpoint_id", "parent_checkpoint_id",
}


def secret_for(value: str) -> str:
    """The secret planted after `value` (the same for every copy of the value)."""
    n = int(hashlib.sha256(value.encode()).hexdigest(), 16)
    return KINDS[_KIND_NAMES[n % len(KINDS)]](random.Random(n))


class _Line(str):
    """A line of a JSONL file that is not JSON: written back as it was."""


class Planter:
    """Plants secrets in the ids, names and paths of a sample's files (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = root
        self.files = [p for p in sorted(root.rglob("*")) if p.is_file()] if root.is_dir() else [root]
        self.names = " ".join(p.relative_to(root if root.is_dir() else root.parent).as_posix() for p in self.files)
        self.plants: dict[str, str] = {}  # original -> planted

    def _wanted(self, value) -> bool:
        return (
            isinstance(value, str) and 3 <= len(value) <= 300 and "\n" not in value
            and value not in self.names and not value.isdigit() and value not in ("user", "assistant", "system", "tool")
        )

    def _collect(self, value, key=None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                self._collect(v, k)
        elif isinstance(value, list):
            for v in value:
                self._collect(v, key)
        elif key in PLANT_KEYS and self._wanted(value):
            self.plants.setdefault(value, f"{value}__{secret_for(value)}")

    def _replace(self, value):
        if isinstance(value, dict):
            return {self.plants.get(k, k): self._replace(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._replace(v) for v in value]
        if isinstance(value, str) and not isinstance(value, _Line):
            return self.plants.get(value, value)
        return value

    # -- JSON files

    @staticmethod
    def _json_docs(text: str):
        try:
            return "json", json.loads(text)
        except ValueError:
            pass
        docs = []
        for line in text.splitlines():
            try:
                docs.append(json.loads(line))
            except ValueError:
                docs.append(_Line(line))  # kept as written
        return ("jsonl", docs) if any(not isinstance(d, _Line) for d in docs) else (None, None)

    def _texts(self):
        for path in self.files:
            if path.suffix in (".db", ".sqlite") or path.name.endswith(("-wal", "-shm")):
                continue
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            kind, doc = self._json_docs(text)
            if kind:
                yield path, kind, doc

    # -- SQLite stores

    def _stores(self):
        for path in self.files:
            if path.suffix in (".db", ".sqlite") and path.read_bytes()[:15] == b"SQLite format 3":
                yield path

    def _cells(self, db: sqlite3.Connection):
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"):
            columns = [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]
            for row in db.execute(f'SELECT rowid, * FROM "{table}"'):
                for column, value in zip(columns, row[1:]):
                    if isinstance(value, str):
                        yield table, column, row[0], value

    def _sqlite_value(self, column: str, value: str, collect: bool):
        if value[:1] in "{[":
            try:
                doc = json.loads(value)
            except ValueError:
                doc = None
            if doc is not None:
                if collect:
                    self._collect(doc)
                    return None
                new = self._replace(doc)
                return json.dumps(new) if new != doc else None
        if collect:
            if column in PLANT_COLUMNS and self._wanted(value):
                self.plants.setdefault(value, f"{value}__{secret_for(value)}")
            return None
        return self.plants.get(value)

    def plant(self) -> dict[str, str]:
        texts = list(self._texts())
        for _, _, doc in texts:
            self._collect(doc)
        for path in self._stores():
            with sqlite3.connect(path) as db:
                for _, column, _, value in list(self._cells(db)):
                    self._sqlite_value(column, value, collect=True)
        for path, kind, doc in texts:
            new = self._replace(doc)
            if kind == "json":
                path.write_text(json.dumps(new, indent=1))
            else:
                path.write_text("\n".join(d if isinstance(d, _Line) else json.dumps(d) for d in new) + "\n")
        for path in self._stores():
            db = sqlite3.connect(path)
            with db:
                for table, column, rowid, value in list(self._cells(db)):
                    new = self._sqlite_value(column, value, collect=False)
                    if new is not None:
                        db.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (new, rowid))
            db.close()
        return self.plants


def pieces(plants: dict[str, str]) -> list[str]:
    """Each planted secret, and every run of 12 of its letters and digits past its prefix."""
    out = set()
    for planted in plants.values():
        secret = planted.rsplit("__", 1)[1]
        out.add(secret)
        for run in re.findall(r"[A-Za-z0-9]{12,}", secret):
            out.update(run[i : i + 12] for i in range(0, len(run) - 11))
    out.discard("eyJhbGciOiJI")
    return sorted(out)


def stored_texts() -> list[tuple[str, str]]:
    """(table.pk, the row as JSON) of every row of the apps that store what an import reads, and the
    words of the search index."""
    rows = []
    for label in ("conversations", "ingest", "jobs"):
        for model in apps.get_app_config(label).get_models():
            for row in model.objects.values():
                rows.append((f"{model._meta.db_table}.{row.get('id')}", json.dumps(row, default=str, ensure_ascii=False)))
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.planted_vocab USING fts5vocab(main, {search.FTS_TABLE}, row)")
            cursor.execute("SELECT term FROM temp.planted_vocab")
            rows.append(("search index", " ".join(r[0] for r in cursor.fetchall())))
            cursor.execute("DROP TABLE temp.planted_vocab")
    return rows


def leaks(plants: dict[str, str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    looked_for = pieces(plants)
    for where, text in stored_texts():
        lower = text.lower()
        hits = [p for p in looked_for if p in text or (where == "search index" and p.lower() in lower)]
        if hits:
            found[where] = hits[:3]
    return found


SYNTHETIC = [s for s in every.SAMPLES if not s.fixture]


@pytest.mark.parametrize("sample", [pytest.param(s, id=s.id) for s in SYNTHETIC])
def test_a_secret_planted_in_any_name_id_or_path_is_stored_masked(sample, project, tmp_path):
    path = _write(sample, tmp_path / "sample")
    plants = Planter(path).plant()
    if not plants:  # aider's chat history has no ids or names: its text is masked as every text is
        assert sample.agent == "aider"
        pytest.skip("no id, name or path to plant a secret in")
    report = ingest.import_path(project, path)
    assert not report.refused, report.errors
    assert Message.objects.filter(conversation__project=project).exists()
    assert leaks(plants) == {}
    stored = "".join(text for _, text in stored_texts())
    assert "[masked " in stored  # the planted secrets reached the store, masked


def _write(sample, folder: Path) -> Path:
    folder.mkdir(parents=True)
    return sample.write(folder, None) if sample.id != "langgraph" else _langgraph_copy(folder)


def _langgraph_copy(tmp_path: Path) -> Path:
    """The LangGraph store built once for test_every_format, copied (planting rewrites it)."""
    original = every._langgraph(tmp_path, None)
    copy = tmp_path / "checkpoints.sqlite"
    copy.write_bytes(original.read_bytes())
    return copy


def test_the_planter_plants_in_every_format_it_can(tmp_path):
    # What the test above is worth: for each format, how many values got a secret.
    planted = {}
    for sample in SYNTHETIC:
        path = _write(sample, tmp_path / sample.id)
        planted[sample.id] = len(Planter(path).plant())
    assert {s for s, n in planted.items() if n == 0} <= {"aider"}, planted


def test_a_tool_name_holding_any_prefixed_kind_shows_masked(project, user, client, tmp_path):
    from tests.sessions import SessionBuilder, write_lines

    b = SessionBuilder(session_id="bbbbbbbb-0000-4000-8000-000000000001")
    secrets_by_kind = {kind: make(random.Random(kind)) for kind, make in KINDS.items()}
    lines = [b.user("Use the vault tools")]
    for n, secret in enumerate(secrets_by_kind.values()):
        lines.append(json.dumps(b._envelope("assistant", requestId=f"req_{n}", message={
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": f"mcp__vault__{secret}", "input": {}}],
            "usage": {"input_tokens": 3, "output_tokens": 5}})))
        lines.append(json.dumps(b._envelope("user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "ok"}]})))
    path = tmp_path / "vault.jsonl"
    write_lines(path, lines)
    assert ingest.import_file(project, path).status == "imported"
    conv = Conversation.objects.get(external_id=b.session_id)
    names = [blk["tool_name"] for m in conv.messages.all() for blk in m.blocks if blk.get("kind") == "tool_call"]
    assert len(names) == 10 and all(n.startswith("mcp__vault__[masked ") for n in names), names
    client.force_login(user)
    seen = client.get(reverse("conversation", args=[conv.pk]), {"all": 1}).content.decode()
    seen += client.get(f"/api/conversations/{conv.pk}/messages").content.decode()
    seen += "".join(str(m.raw) for m in conv.messages.all())
    for kind, secret in secrets_by_kind.items():
        assert secret not in seen and secret[-12:] not in seen, kind


def test_an_uploads_file_and_folder_names_are_stored_masked(project, user, client, tmp_path, settings):
    from tests.sessions import session_lines

    settings.MEDIA_ROOT = str(tmp_path / "media")
    token = KINDS["github_token"](random.Random("upload"))
    body = ("\n".join(session_lines(2)) + "\n").encode()
    client.force_login(user)
    single = SimpleUploadedFile(f"notes-{token}.jsonl", body, content_type="application/octet-stream")
    response = client.post(reverse("upload"), {"files": [single]})
    assert response.status_code in (200, 302), response.status_code
    folder = [SimpleUploadedFile("a.jsonl", body.replace(b"-4000-", b"-4001-")),
              SimpleUploadedFile("b.txt", b"notes")]
    paths = [f"proj-{token}/a.jsonl", f"proj-{token}/b.txt"]
    client.post(reverse("upload"), {"files": folder, "paths": paths})
    from contextviewer.jobs import queue as jobs
    from contextviewer.jobs.models import Job

    for job in Job.objects.filter(kind="import"):
        jobs.run(job.pk)
    sources = list(Source.objects.filter(project=project))
    assert len(sources) >= 2, [(s.name, s.path) for s in sources]
    assert any("[masked github_token]" in s.name for s in sources)
    on_disk = " ".join(p.as_posix() for p in (tmp_path / "media").rglob("*"))
    assert token not in on_disk and "masked_github_token" in on_disk, on_disk
    assert leaks({"x": f"x__{token}"}) == {}  # sources, jobs (their parameters and results), messages


def test_a_cwd_a_branch_and_a_function_name_holding_secrets_show_masked_on_the_pages(project, user, client, tmp_path):
    from tests.sessions import SessionBuilder, write_lines
    from tests.unit import test_codex_importer as cx

    token, key, pat = (KINDS[k](random.Random(k)) for k in ("github_token", "openai_key", "github_pat"))
    codex_call = cx.call("call_1")
    codex_call["payload"]["name"] = f"mcp__vault__{key}"
    codex = cx.write(tmp_path / f"rollout-2026-02-23T12-00-00-{cx.SID}.jsonl", [
        cx.meta(cwd=f"/home/dev/{token}/app"), cx.turn_context(), cx.user("List the files"), codex_call,
        cx.output("call_1"), cx.assistant("Done."), cx.usage(10_000, 200, 10_000, 0, 200),
    ])
    b = SessionBuilder(session_id="bbbbbbbb-0000-4000-8000-000000000002")
    lines = [json.loads(line) for line in [b.user("Hello"), *b.assistant("Hi.")]]
    for line in lines:
        line.update(cwd=f"/srv/{pat}", gitBranch=f"fix/{token}")
    claude = tmp_path / f"{b.session_id}.jsonl"
    write_lines(claude, [json.dumps(line) for line in lines])
    for path in (codex, claude):
        assert ingest.import_file(project, path).status == "imported"
    client.force_login(user)
    seen = client.get(reverse("index")).content.decode()
    for conv in Conversation.objects.filter(project=project):
        seen += client.get(reverse("conversation", args=[conv.pk]), {"all": 1}).content.decode()
        seen += client.get(f"/api/conversations/{conv.pk}").content.decode()
        seen += client.get(f"/api/conversations/{conv.pk}/messages").content.decode()
        for fmt in builds.CONTENT_TYPES:  # an agent's own format: refused for another agent's conversation
            seen += client.get(f"/api/conversations/{conv.pk}/export", {"format": fmt}).content.decode()
    for secret in (token, key, pat):
        assert secret not in seen and secret[-12:] not in seen
    assert "/home/dev/[masked github_token]/app" in seen  # the index's and the page's cwd, masked
    assert "mcp__vault__[masked openai_key]" in seen
