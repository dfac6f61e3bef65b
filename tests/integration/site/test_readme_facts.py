"""What the README and docs/ tell a new user holds (issue 22, item 9; issue 32, item 4): the README
stays short and every relative link in it and in docs/ leads somewhere, `--samples` imports what
docs/configuration.md says, the login page says where the first password is, the roles' table in
docs/teams-and-api.md is the code's, and the environment variables docs/ names are the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import override_settings
from django.urls import reverse

# Cannot differ between SQLite and PostgreSQL (what the docs say against the code: files read, one page rendered): bin/test runs it on SQLite only.
pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[3]
README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
DOCS = {p: p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}
MARKDOWN = {README_PATH: README, **DOCS}
README_MAX_BYTES = 12 * 1024


def _doc(name: str) -> str:
    return DOCS[ROOT / "docs" / name]


def _section(text: str, heading: str) -> str:
    """The text under `heading` (a whole heading line), up to the next heading of its level or higher."""
    level = len(heading) - len(heading.lstrip("#"))
    body = text.split(f"\n{heading}\n", 1)[1]
    return re.split(rf"\n#{{1,{level}}} ", body, maxsplit=1)[0]


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (code blocks left out)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    seen: dict[str, int] = {}
    anchors = set()
    for title in re.findall(r"^#{1,6} +(.+?) *#*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_the_readme_is_at_most_12_kb():
    size = len(README_PATH.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/ (at most {README_MAX_BYTES})"


def test_every_relative_link_in_the_readme_and_the_docs_leads_to_a_file_and_heading_that_exist():
    broken = []
    for path, text in MARKDOWN.items():
        prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
        for target in re.findall(r"\]\((?!https?:|mailto:)([^)\s]+)\)", prose):
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text(encoding="utf-8")):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []
    # The README links every page of docs/, and names no docs/ path that is missing.
    linked = set(re.findall(r"\]\((docs/[\w./-]+\.md)", README))
    assert linked == {str(p.relative_to(ROOT)) for p in DOCS}
    named = re.findall(r"(?<![\w./])(docs/[\w./-]+\.(?:md|png))", README)
    assert named and sorted({p for p in named if not (ROOT / p).exists()}) == []


def test_samples_import_what_the_configuration_page_says(tmp_path):
    from ops.management.commands import serve

    with override_settings(SAMPLES_DIR="", FIXTURES_DIR=str(tmp_path)):
        assert serve.samples_dir() == tmp_path  # the whole fixtures folder, every format
    running = " ".join(_section(_doc("configuration.md"), "## Running").split())
    assert "all of `../shared/fixtures`" in running
    assert "./bin/run --samples" in README


@pytest.mark.django_db
def test_the_login_page_says_where_the_first_password_is_until_someone_logs_in(client):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("admin", password="pw-admin-123456")
    page = client.get(reverse("login")).content.decode()
    assert 'id="first-start"' in page and "./bin/run" in page and "changepassword admin" in page
    assert client.post(reverse("login"), {"username": "admin", "password": "pw-admin-123456"}).status_code == 302
    client.logout()
    user.refresh_from_db()
    assert user.last_login is not None
    assert 'id="first-start"' not in client.get(reverse("login")).content.decode()


def test_the_roles_table_is_the_code_s():
    from contextviewer.accounts.models import ROLE_PERMISSIONS, Role

    table = _section(_doc("teams-and-api.md"), "## Projects, roles and tokens")
    rows = dict(re.findall(r"^\| `(\w+)` \| (.+?) \|$", table, flags=re.M))
    stated = {role: set(re.findall(r"`(\w+)`", cell)) for role, cell in rows.items()}
    assert stated == {str(role): set(perms) for role, perms in ROLE_PERMISSIONS.items()}
    assert set(stated) == {r.value for r in Role}


def _code_variables() -> set[str]:
    names = set()
    for folder in ("contextviewer", "ops", "bin", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and (path.suffix == ".py" or path.parent.name == "bin"):
                names |= set(re.findall(r"CONTEXTVIEWER_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8", errors="replace")))
    # A name that only starts longer ones (a prefix the code filters by) is not a variable.
    return {n for n in names if not any(o != n and o.startswith(n + "_") for o in names)}


def test_every_environment_variable_is_on_the_configuration_page_and_every_one_named_exists():
    code = _code_variables()
    config = _doc("configuration.md")
    listed = set(re.findall(r"CONTEXTVIEWER_[A-Z0-9_]*[A-Z0-9]", config))
    families = set(re.findall(r"(CONTEXTVIEWER_[A-Z0-9_]+_)\*", config))  # `CONTEXTVIEWER_EMAIL_*`
    undocumented = sorted(n for n in code - listed if not n.startswith(tuple(families)))
    assert undocumented == [], "document each in docs/configuration.md"
    named = set()
    for text in MARKDOWN.values():
        named |= set(re.findall(r"CONTEXTVIEWER_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_]*\*)", text))
    assert sorted(named - code) == [], "docs name a variable the code does not read"
    assert all(any(n.startswith(f) for n in code) for f in families)
