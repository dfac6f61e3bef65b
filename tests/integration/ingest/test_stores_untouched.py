"""An import never writes beside a user's log (issue 40, item 8): a SQLite store that its app left
with a ``-wal`` and a ``-shm`` (Crush, Go-era opencode, opencode >= 1.2, Kilo, efferent, LangGraph)
keeps every byte of all three files, and no file appears beside it, after an import of its folder
and after ``watch`` (its catch-up, and a change event on each store file). A running agent shares the
``-shm`` (SQLite's wal-index) with contextviewer's reader: a byte written there is a byte written
into the agent's working memory.

Every file of every folder is hashed before and after. The shared fixtures are first imported from
a writable copy (as a user's own files are writable); only when the copy was left as it was is the
folder imported in place, and the real fixtures are hashed before and after too.

Backend-independent: what is checked is the user's files on disk, which no database writes."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from contextviewer.importers.sqlite_db import SQLITE_MAGIC
from contextviewer.ingest import watch
from tests import charm_db
from tests.conftest import shared_fixtures_dir

pytestmark = [pytest.mark.django_db, pytest.mark.backend_independent]


def hashes(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256): a changed byte or a new file shows."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def writable_copy(src: Path, dest: Path) -> Path:
    """A copy the test user may write (a user's own logs are writable by their user)."""
    shutil.copytree(src, dest, symlinks=True)
    for p in [dest, *dest.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    return dest


def as_live(db: Path, dest: Path) -> Path:
    """``db`` as its app leaves it while running: WAL mode, every page rewritten into the ``-wal``
    (not checkpointed), and the ``-shm`` the writer built, the three copied while it holds them."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    build = dest.parent / ".build" / dest.name
    build.parent.mkdir(parents=True)
    for suffix in ("", "-wal"):
        if db.with_name(db.name + suffix).exists():
            shutil.copyfile(db.with_name(db.name + suffix), build.with_name(build.name + suffix))
    conn = sqlite3.connect(build)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("VACUUM")  # in WAL mode: every page goes to the -wal
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        for suffix in ("", "-wal", "-shm"):
            shutil.copyfile(build.with_name(build.name + suffix), dest.with_name(dest.name + suffix))
    finally:
        conn.close()
    shutil.rmtree(build.parent)
    return dest


def live_stores(root: Path) -> Path:
    """One folder per SQLite format, each store with its ``-wal`` and ``-shm``."""
    from tests.unit.test_efferent_importer import write_current_store
    from tests.unit.test_kilo_importer import _with_board
    from tests.unit.test_opencode_importer import write_database

    scratch = root.parent / "scratch"
    scratch.mkdir()
    as_live(charm_db.write_store(scratch / "crush" / "crush.db"), root / "crush" / "crush.db")
    as_live(charm_db.write_store(scratch / "go" / "opencode.db", crush=False), root / "opencode-go" / "opencode.db")
    (scratch / "oc").mkdir()
    as_live(write_database(scratch / "oc" / "opencode.db"), root / "opencode" / "opencode.db")
    (scratch / "kilo").mkdir()
    as_live(_with_board(write_database(scratch / "kilo" / "kilo.db")), root / "kilo" / "kilo.db")
    (scratch / "efferent").mkdir()
    as_live(write_current_store(scratch / "efferent" / "efferent.db"), root / "efferent" / "efferent.db")
    try:
        from tests import langgraph_db
    except pytest.skip.Exception:  # langgraph is a dev extra
        pass
    else:
        as_live(langgraph_db.build(scratch / "lg" / "checkpoints.db", threads=("alpha",)), root / "langgraph" / "checkpoints.db")
    shutil.rmtree(scratch)
    return root


def is_store_file(path: Path) -> bool:
    """A SQLite database or its ``-wal``/``-shm`` (the files a change event makes the watcher open
    as a database; a change to any other file reads it as the folder import did)."""
    if not path.is_file():
        return False
    if path.name.endswith(("-wal", "-shm", "-journal")):
        return True
    with open(path, "rb") as fh:
        return fh.read(16) == SQLITE_MAGIC


def import_and_watch(project, folder: Path) -> list[str]:
    """Import ``folder``, then watch it (catch-up, then a change event on each store file); the
    files whose bytes changed (or that appeared or went)."""
    before = hashes(folder)
    ingest.import_path(project, folder)
    after_import = hashes(folder)
    assert not changed(before, after_import), f"importing {folder.name} wrote {changed(before, after_import)}"
    watcher = watch.Watcher([folder], project)
    watcher.catch_up()
    for path in sorted(folder.rglob("*")):
        if is_store_file(path):
            watcher._import(str(path))  # what the runner does for a file's change event
    return changed(before, hashes(folder))


def test_every_sqlite_format_leaves_a_live_store_as_it_was(tmp_path, project):
    root = live_stores(tmp_path / "logs")
    assert {p.name for p in (root / "crush").iterdir()} == {"crush.db", "crush.db-wal", "crush.db-shm"}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        assert import_and_watch(project, folder) == [], f"{folder.name}: the import or watch wrote beside the store"
    # Each store was read (from its WAL: the file alone is the old pages), not skipped.
    agents = set(Conversation.objects.filter(project=project).values_list("agent", flat=True))
    assert {"crush", "opencode", "kilo", "efferent"} <= agents, agents


def _fixture_folders() -> list:
    root = shared_fixtures_dir()
    if root is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]
    return [pytest.param(p.name, marks=pytest.mark.fixtures) for p in sorted(root.iterdir()) if p.is_dir()]


@pytest.mark.parametrize("name", _fixture_folders())
def test_importing_and_watching_a_fixture_folder_writes_none_of_its_files(name, fixtures_dir, tmp_path, project):
    copy = writable_copy(fixtures_dir / name, tmp_path / name)
    assert import_and_watch(project, copy) == [], f"importing a copy of {name} wrote into it"
    # Only now (the copy stayed as it was) the real folder, in place.
    real = fixtures_dir / name
    before = hashes(real)
    ingest.import_path(project, real)
    watch.Watcher([real], project).catch_up()
    assert changed(before, hashes(real)) == [], f"importing {real} in place wrote into it"
