"""Safe rendering: markdown through nh3 only, ANSI as escaped text with classes, and no other way
for transcript text to become HTML (no |safe, mark_safe or format_html outside the audited spot)."""

import re
from pathlib import Path

import pytest
from django.template import Context, Template

from contextviewer.display import rendering

# Cannot differ between SQLite and PostgreSQL (Markdown, ANSI and template escaping: functions and templates, no query): bin/test runs it on SQLite only.
pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[x](https://ok.example/\" onmouseover=\"alert(1))",
        "```\n</code></pre><script>alert(1)</script>\n```",
        "`<b onclick=alert(1)>`",
        "**<svg/onload=alert(1)>**",
        "> <iframe src=javascript:alert(1)>",
        "# <style>body{display:none}</style>",
        "![img](https://evil.example/x.png)",
    ],
)
def test_markdown_never_lets_markup_through(source):
    html = str(rendering.markdown_html(source))
    assert not re.search(r"<(script|img|iframe|svg|style|object|embed)", html, re.I)
    assert not re.search(r"<[a-z][^<>]*\son\w+\s*=", html, re.I)
    assert not re.search(r"href\s*=\s*\"?\s*(javascript|data):", html, re.I)
    assert "style=" not in html


def test_markdown_keeps_the_harmless_subset():
    html = str(rendering.markdown_html("# Title\n\n**bold** *it* `code` [site](https://example.com)\n\n- a\n- b\n\n```\nx < y\n```"))
    assert "<strong>bold</strong>" in html and "<em>it</em>" in html and "<code>code</code>" in html
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow">site</a>' in html
    assert "<ul>" in html and "<pre><code>x &lt; y\n</code></pre>" in html


def test_numbered_lists_keep_their_numbers():
    html = str(rendering.markdown_html("Next steps:\n\n3. run the suite\n4. commit\n\nthen\n\n7. deploy"))
    assert '<ol start="3">' in html and '<ol start="7">' in html
    assert re.findall(r"<li>(.*?)</li>", html) == ["run the suite", "commit", "deploy"]


def test_nested_lists_are_nested():
    html = str(rendering.markdown_html("- outer\n  - inner one\n  - inner two\n    1. deepest\n- second"))
    assert re.sub(r"\s+", "", html) == (
        "<ul><li>outer<ul><li>innerone</li><li>innertwo<ol><li>deepest</li></ol></li></ul></li><li>second</li></ul>"
    )
    assert "<br>" not in html


def test_indented_fences_stay_code():
    source = "1. Run this:\n\n   ```bash\n   pytest -q <tests>\n   echo **not bold**\n   ```\n\n2. Then commit."
    html = str(rendering.markdown_html(source))
    assert "<pre><code>pytest -q &lt;tests&gt;\necho **not bold**\n</code></pre>" in html
    assert "```" not in html and "<strong>" not in html
    assert re.findall(r"<p>(.*?)</p>", html) == ["Run this:", "Then commit."]


def test_stars_inside_paths_survive():
    html = str(rendering.markdown_html("Matched assets/**/*.css and src/**/test_*.py, then **done**."))
    assert "assets/**/*.css" in html and "src/**/test_*.py" in html
    assert "<strong>done</strong>" in html and "<em>" not in html


def test_ansi_becomes_classes_and_escaped_text():
    segments = rendering.ansi_segments("\x1b[1;31m<b>err</b>\x1b[0m ok\x1b]0;title\x07\x1b[2J")
    assert segments[0].classes == "ansi-red ansi-bold" and segments[0].text == "<b>err</b>"
    assert "".join(s.text for s in segments) == "<b>err</b> ok"
    template = Template('{% for s in segs %}<span class="{{ s.classes }}">{{ s.text }}</span>{% endfor %}')
    html = template.render(Context({"segs": segments}))
    assert "&lt;b&gt;err&lt;/b&gt;" in html and "<b>" not in html


def test_clip_keeps_head_and_tail():
    text = "a" * 10_000 + "TAIL"
    clip = rendering.clip(text)
    assert clip.clipped and clip.head == "a" * rendering.HEAD_CHARS and clip.tail.endswith("TAIL")
    assert len(clip.head) + clip.hidden + len(clip.tail) == len(text)
    assert not rendering.clip("short").clipped


def test_no_other_path_marks_transcript_text_safe():
    """Only display/rendering.py marks HTML safe (right after nh3.clean): no other module of the
    product, and no template that shows transcript text, does."""
    sources = sorted((ROOT / "contextviewer").rglob("*.py"))
    assert ROOT / "contextviewer" / "display" / "rendering.py" in sources and len(sources) > 100
    for path in sources:
        text = path.read_text()
        if path.relative_to(ROOT).as_posix() == "contextviewer/display/rendering.py":
            assert text.count("mark_safe(") == 1  # the audited spot, right after nh3.clean
            continue
        assert "mark_safe" not in text and "format_html" not in text and "SafeString(" not in text, path
    templates = [p for p in (ROOT / "templates").rglob("*.html") if p.parent.name != "registration"]  # e-mails: text
    assert any(p.parent.name == "viewer" for p in templates)
    for path in templates:
        text = path.read_text()
        assert "|safe" not in text and "{% autoescape off" not in text, path
