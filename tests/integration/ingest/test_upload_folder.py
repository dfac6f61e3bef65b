"""Uploading a folder, several files or a zip of a folder (issue 20, item 6): the relative layout is
kept, so a session's sub-agent files and meta files are read with it; unsafe paths and zip bombs
are refused with a clear message and nothing else is lost."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.html import escape

from contextviewer.conversations.models import Conversation, Source
from contextviewer.importers import formats
from contextviewer.jobs import queue as jobs
from tests.module_worlds import project_and_user
from tests.sessions import session_lines
from tests.upload_folders import PICOCLAW_SUMMARY, write_upload_folder, zip_of

pytestmark = pytest.mark.django_db


# tests/integration/conftest.py's project and user, made once for the module (tests/module_worlds.py).
_module_world, project, user = project_and_user()


@pytest.fixture
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


def _post(client, parts: list[tuple[str, bytes]], paths: list[str] | None = None, url: str = "/api/imports"):
    files = [SimpleUploadedFile(name.rsplit("/", 1)[-1], data) for name, data in parts]
    data = {"files": files}
    if paths is not None:
        data["paths"] = paths
    return client.post(url, data)


def _run(response):
    assert response.status_code == 202, response.content
    done = jobs.run(response.json()["id"])
    assert done is not None
    return done


def _folder_parts(folder) -> tuple[list[tuple[str, bytes]], list[str]]:
    rels = folder.relative()
    return [(rel, p.read_bytes()) for rel, p in zip(rels, folder.files())], rels


def _assert_read_together(folder, done) -> None:
    """The Claude Code session has its sub-agents linked (their agent type from the .meta.json
    beside them) and the picoclaw session its fold (the summary of its meta file)."""
    assert done.status == "succeeded", done.error
    main = Conversation.objects.get(agent="claude-code", parent=None)
    children = list(main.children.all())
    # Independent count: the agent-*.jsonl files the generator wrote under <session>/subagents/.
    assert len(children) == len(folder.claude_subagents) == 2
    (meta,) = folder.claude_meta
    agent_type = json.loads(meta.read_text())["agentType"]
    agent_id = meta.name.removeprefix("agent-").removesuffix(".meta.json")
    assert [c.agent_type for c in children if c.external_id.endswith(agent_id)] == [agent_type]
    pico = Conversation.objects.get(agent="picoclaw")
    assert [f.summary_text for f in pico.folds.all()] == [PICOCLAW_SUMMARY]
    # Nothing of the folder is left unread: the meta files are companions, not skipped.
    assert done.result["skipped"] == []


def test_a_folder_upload_keeps_its_layout_and_reads_companions_together(client, user, media, tmp_path):
    folder = write_upload_folder(tmp_path)
    client.force_login(user)
    parts, rels = _folder_parts(folder)
    done = _run(_post(client, parts, rels))
    _assert_read_together(folder, done)
    # Every file stored at its relative path, in the upload's own folder; sources named by it.
    (stored,) = [p for p in (media / "uploads").iterdir() if not p.name.startswith(".")]
    assert sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*") if p.is_file()) == sorted(rels)
    keys = set(Source.objects.values_list("path", flat=True))
    assert f"upload:{stored.name}/{folder.claude_main.relative_to(tmp_path).as_posix()}" in keys
    assert {f["path"] for f in done.result["files"]} >= {folder.picoclaw_session.relative_to(tmp_path).as_posix()}

    # The same folder again: the stored copy is read again, nothing added.
    again = _run(_post(client, parts, rels))
    assert again.status == "succeeded" and {f["status"] for f in again.result["files"]} == {"unchanged"}


def test_the_same_files_stored_apart_lose_the_picoclaw_session(client, user, media, tmp_path):
    """The defect this fixes: a session file alone (no meta file beside it, not in a sessions
    folder) is refused, and no fold is made."""
    folder = write_upload_folder(tmp_path)
    client.force_login(user)
    done = _run(_post(client, [(folder.picoclaw_session.name, folder.picoclaw_session.read_bytes())]))
    assert done.status == "failed" and not Conversation.objects.filter(agent="picoclaw").exists()


def test_unsafe_paths_are_refused_by_name_and_the_rest_is_imported(client, user, media, tmp_path):
    folder = write_upload_folder(tmp_path)
    client.force_login(user)
    parts, rels = _folder_parts(folder)
    evil = b"".join(line.encode() + b"\n" for line in session_lines(1))
    parts += [("x", evil), ("x", evil), ("x", evil)]
    rels += ["../../outside.jsonl", "/etc/cron.d/outside.jsonl", "agent-logs/a\\..\\..\\outside2.jsonl"]
    done = _run(_post(client, parts, rels))
    _assert_read_together(folder, done)
    errors = {e["path"]: e["reason"] for e in done.result["errors"]}
    assert "'..'" in errors["../../outside.jsonl"] and "not stored" in errors["../../outside.jsonl"]
    assert "absolute path" in errors["/etc/cron.d/outside.jsonl"]
    assert "'..'" in errors["agent-logs/a\\..\\..\\outside2.jsonl"]
    # Nothing written outside the upload's folder.
    assert not [p for p in tmp_path.rglob("outside*.jsonl")]
    # The page says the same on the job page.
    page = client.get(f"/jobs/{done.pk}/").content.decode().replace("&#x27;", "'")
    assert "../../outside.jsonl" in page and "a path with '..'" in page


def test_an_upload_of_only_unsafe_paths_is_refused_and_nothing_stored(client, user, media):
    client.force_login(user)
    data = b"".join(line.encode() + b"\n" for line in session_lines(1))
    response = _post(client, [("x", data)], ["../escape.jsonl"])
    assert response.status_code == 400
    assert "../escape.jsonl" in response.json()["detail"] and "'..'" in response.json()["detail"]
    page = _post(client, [("x", data), ("y", data)], ["a/../../escape.jsonl", "/abs.jsonl"], url="/import/")
    assert page.status_code == 400
    assert "Nothing was stored" in page.content.decode()
    assert not [p for p in (media / "uploads").rglob("*") if p.is_file()] if (media / "uploads").exists() else True


def test_paths_must_match_files(client, user, media):
    client.force_login(user)
    data = b"".join(line.encode() + b"\n" for line in session_lines(1))
    response = _post(client, [("x", data), ("y", data)], ["a/x.jsonl"])
    assert response.status_code == 400 and "one 'paths' value per file" in response.json()["detail"]


def test_a_zip_of_a_folder_is_imported_as_the_folder(client, user, media, tmp_path):
    folder = write_upload_folder(tmp_path)
    client.force_login(user)
    done = _run(_post(client, [("agent-logs.zip", zip_of(folder))]))
    _assert_read_together(folder, done)
    (stored,) = [p for p in (media / "uploads").iterdir() if not p.name.startswith(".")]
    assert sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*") if p.is_file()) == sorted(folder.relative())


def test_a_zip_member_that_would_leave_the_folder_or_is_a_link_is_refused(client, user, media, tmp_path):
    folder = write_upload_folder(tmp_path)
    client.force_login(user)
    buf = io.BytesIO(zip_of(folder, {"../../slipped.jsonl": b"{}\n", "/abs/slipped.jsonl": b"{}\n"}))
    with zipfile.ZipFile(buf, "a") as archive:
        link = zipfile.ZipInfo("agent-logs/link-to-passwd")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    done = _run(_post(client, [("agent-logs.zip", buf.getvalue())]))
    _assert_read_together(folder, done)
    errors = {e["path"]: e["reason"] for e in done.result["errors"]}
    assert "'..'" in errors["agent-logs.zip: ../../slipped.jsonl"]
    assert "absolute path" in errors["agent-logs.zip: /abs/slipped.jsonl"]
    assert "a link in the zip" in errors["agent-logs.zip: agent-logs/link-to-passwd"]
    assert not [p for p in tmp_path.rglob("slipped.jsonl")]
    assert not [p for p in media.rglob("link-to-passwd")]


def test_a_zip_bomb_is_refused_with_a_message_and_nothing_of_it_kept(client, user, media, settings, tmp_path):
    settings.MAX_UNZIPPED_BYTES = 5_000_000
    client.force_login(user)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb/zeros.jsonl", b"\0" * 50_000_000)  # 50 MB of zeros: about 50 kB zipped
    assert len(buf.getvalue()) < 200_000
    response = _post(client, [("bomb.zip", buf.getvalue())])
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "bomb.zip" in detail and "50 MB" in detail and "over the 5 MB a zip upload may unpack to" in detail
    assert not [p for p in (media / "uploads").rglob("*") if p.is_file()]

    # Beside a good folder: the bomb is refused by name, the folder imported.
    folder = write_upload_folder(tmp_path)
    parts, rels = _folder_parts(folder)
    done = _run(_post(client, [*parts, ("bomb.zip", buf.getvalue())], [*rels, "agent-logs/bomb.zip"]))
    _assert_read_together(folder, done)
    errors = {e["path"]: e["reason"] for e in done.result["errors"]}
    assert "over the 5 MB a zip upload may unpack to" in errors["agent-logs/bomb.zip"]
    assert not [p for p in media.rglob("zeros.jsonl")]


def test_a_zip_whose_sizes_lie_is_stopped_at_the_limit(client, user, media, settings):
    """A member whose header says it is small: no more than it declares is read (zipfile stops
    there and the checksum then fails), so the declared total the limit checks holds; refused."""
    settings.MAX_UNZIPPED_BYTES = 1_000_000
    client.force_login(user)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("x/big.jsonl", b"a" * 3_000_000)
    data = bytearray(buf.getvalue())
    # The central directory's uncompressed size (offset 24 in its record) says 10 bytes.
    central = data.rfind(b"PK\x01\x02")
    data[central + 24:central + 28] = (10).to_bytes(4, "little")
    response = _post(client, [("lie.zip", bytes(data))])
    assert response.status_code == 400
    assert "lie.zip: not a readable zip archive" in response.json()["detail"]
    assert not [p for p in (media / "uploads").rglob("*") if p.is_file()]


def test_a_zip_of_too_many_files_is_refused(client, user, media, settings):
    settings.MAX_UNZIPPED_FILES = 3
    client.force_login(user)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for i in range(5):
            archive.writestr(f"many/{i}.jsonl", b"{}\n")
    response = _post(client, [("many.zip", buf.getvalue())])
    assert response.status_code == 400
    assert "a zip of 5 files, over the 3 a zip upload may hold" in response.json()["detail"]


def test_the_import_page_lists_every_format_and_accepts_every_extension(client, user):
    client.force_login(user)
    page = client.get("/import/").content.decode()
    for fmt in formats.registry():
        assert f"<td>{escape(fmt.label)}</td><td><code>{escape(fmt.where)}</code></td>" in page, fmt.name
    accept = page.split('id="files"', 1)[1].split('accept="', 1)[1].split('"', 1)[0].split(",")
    # The endings the issue names (a real picker hides files without them), and a zip of a folder.
    for ext in (".jsonl", ".jsonl.gz", ".json", ".traj", ".db", ".db-wal", ".sqlite", ".md", ".zip"):
        assert ext in accept, ext
    assert "webkitdirectory" in page and 'id="folder"' in page
    assert "Claude Code session logs" not in page


def test_a_folder_upload_is_removed_once_its_last_conversation_is_deleted(client, user, media, tmp_path,
                                                                          django_capture_on_commit_callbacks):
    from contextviewer.conversations.deletion import delete_conversation

    folder = write_upload_folder(tmp_path)
    client.force_login(user)
    parts, rels = _folder_parts(folder)
    _assert_read_together(folder, _run(_post(client, parts, rels)))
    (stored,) = [p for p in (media / "uploads").iterdir() if not p.name.startswith(".")]
    with django_capture_on_commit_callbacks(execute=True):
        delete_conversation(Conversation.objects.get(agent="claude-code", parent=None))
    # The picoclaw session and its meta file are still needed: kept.
    assert (stored / folder.picoclaw_session.relative_to(tmp_path)).exists()
    assert (stored / folder.picoclaw_meta.relative_to(tmp_path)).exists()
    with django_capture_on_commit_callbacks(execute=True):
        delete_conversation(Conversation.objects.get(agent="picoclaw"))
    assert not stored.exists()
