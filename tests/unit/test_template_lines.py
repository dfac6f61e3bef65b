"""Template lines stay readable (issue 32): no line of a template under templates/ is longer than
MAX_LINE characters. A long line is split between elements or blocks (one element or block per
line, nested blocks indented), or the decision it holds moves to the Python that prepares the
page's context, which hands the template a value to print. A line that cannot be split without
changing what the page shows is listed in ALLOWED with why.

The rule is checked on the templates and on a planted long line, so a rule that cannot fail is seen."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
MAX_LINE = 250

# "path under templates/:the start of the line (its indentation left out)" -> why it stays long.
ALLOWED: dict[str, str] = {}


def _allowed(rel: str, line: str, allowed: dict[str, str]) -> bool:
    text = line.strip()
    return any(key.startswith(f"{rel}:") and text.startswith(key[len(rel) + 1:]) for key in allowed)


def long_lines(root: Path, allowed: dict[str, str] = ALLOWED) -> list[str]:
    """Every line over MAX_LINE characters of the templates under `root` that `allowed` does not name."""
    found = []
    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if len(line) > MAX_LINE and not _allowed(rel, line, allowed):
                found.append(f"{rel}:{number}: {len(line)} characters")
    return found


def stale_allowances(root: Path, allowed: dict[str, str] = ALLOWED) -> list[str]:
    """Entries of `allowed` that name no long line any more (the line was split or is gone)."""
    lines = {
        (path.relative_to(root).as_posix(), line)
        for path in root.rglob("*.html")
        for line in path.read_text(encoding="utf-8").splitlines()
        if len(line) > MAX_LINE
    }
    return [key for key in allowed if not any(_allowed(rel, line, {key: ""}) for rel, line in lines)]


def test_no_template_line_is_longer_than_the_limit():
    assert long_lines(TEMPLATES) == [], f"split these lines (or list one in ALLOWED, with why) at {MAX_LINE} characters"


def test_every_allowance_still_names_a_long_line():
    assert stale_allowances(TEMPLATES) == []


def test_the_rule_catches_a_planted_long_line(tmp_path):
    page = tmp_path / "app" / "page.html"
    page.parent.mkdir()
    long = "  <p class=\"note\">" + "word " * 50 + "</p>"
    page.write_text(f"<section>\n  <p>short</p>\n{long}\n</section>\n", encoding="utf-8")
    assert len(long) > MAX_LINE
    assert long_lines(tmp_path) == [f"app/page.html:3: {len(long)} characters"]
    # A line exactly at the limit passes; an allowance by path and line start lets the long one pass.
    page.write_text("x" * MAX_LINE + "\n", encoding="utf-8")
    assert long_lines(tmp_path) == []
    page.write_text(f"{long}\n", encoding="utf-8")
    assert long_lines(tmp_path, {'app/page.html:<p class="note">word': "planted"}) == []
    assert long_lines(tmp_path, {'other/page.html:<p class="note">word': "planted"}) != []
    assert stale_allowances(tmp_path, {"app/page.html:<div>": "planted"}) == ["app/page.html:<div>"]
