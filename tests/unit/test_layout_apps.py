"""The apps keep to their layers where import-linter cannot look (docs/architecture.md):

- the store (`conversations`) imports no page machinery: no django.shortcuts, django.template,
  django_htmx, ninja or viewer, not even inside a function (import-linter forbids the last three,
  but cannot name part of an external package);
- each app renders only its own templates (templates/<its app>/);
- a template loads tag libraries, and includes or extends templates, only of its own app or of apps
  below it (the layers of pyproject.toml's first import-linter contract).

Each rule is checked on the code and on a planted violation, so a rule that cannot fail is seen."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "contextviewer"
TEMPLATES = ROOT / "templates"
STORE_FORBIDDEN = ("django.shortcuts", "django.template", "django_htmx", "ninja", "contextviewer.viewer")
# Template folders of the project itself (not of an app): the top of the layers may use any app's.
PROJECT_TEMPLATES = {"registration", "api"}


def _layers() -> dict[str, int]:
    """App label -> its layer (0 = the top); apps of one layer are siblings."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    out = {}
    for depth, layer in enumerate(layers):
        for module in (m.strip() for m in layer.split("|")):
            if module.startswith("contextviewer."):
                out[module.split(".")[1]] = depth
    return out


def _imported(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def store_page_imports(package: Path) -> list[str]:
    bad = []
    for path in sorted(package.rglob("*.py")):
        for line, name in _imported(path):
            if any(name == f or name.startswith(f + ".") for f in STORE_FORBIDDEN):
                bad.append(f"{_shown(path)}:{line} imports {name}")
    return sorted(set(bad))


TEMPLATE_NAME = re.compile(r"^([a-z_]+)/[\w.-]+\.(?:html|txt)(?:#[\w-]+)?$")


def foreign_templates(app_dir: Path) -> list[str]:
    """Template names in an app's Python that are not under templates/<the app>/."""
    app, bad = app_dir.name, []
    for path in sorted(app_dir.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (m := TEMPLATE_NAME.match(node.value)):
                if m.group(1) != app:
                    bad.append(f"{_shown(path)}:{node.lineno} renders {node.value}")
    return bad


def _library_apps() -> dict[str, str | None]:
    """Tag library name -> the app it belongs to (None: Django's or a third party's)."""
    from django.template import engines

    out = {}
    for name, module_name in engines["django"].engine.libraries.items():
        parts = module_name.split(".")
        out[name] = parts[1] if parts[0] == "contextviewer" and len(parts) > 2 else None
    return out


LOAD = re.compile(r"{%\s*load\s+([^%]+?)\s*%}")
USES = re.compile(r"{%\s*(?:include|extends)\s+[\"']([^\"'#]+)")


def upward_template_links(app: str, text: str, where: str, layers: dict[str, int], libraries: dict) -> list[str]:
    """The tag libraries a template of `app` loads, and the templates it includes or extends, that
    belong to an app above it or beside it."""
    bad, own = [], layers[app]
    for m in LOAD.finditer(text):
        words = m.group(1).split()
        names = words[: words.index("from")] if "from" in words else words
        libs = [words[-1]] if "from" in words else names
        for lib in libs:
            owner = libraries.get(lib, "?unknown")
            if owner is None:
                continue
            if owner == "?unknown":
                bad.append(f"{where}: loads an unknown library {lib!r}")
            elif owner != app and layers.get(owner, -1) <= own:
                bad.append(f"{where}: loads {lib!r} of {owner}, not below {app}")
    for m in USES.finditer(text):
        folder = m.group(1).split("/")[0] if "/" in m.group(1) else None
        if folder and folder != app and folder in layers and layers[folder] <= own:
            bad.append(f"{where}: uses {m.group(1)} of {folder}, not below {app}")
    return bad


def _app_template_dirs(layers):
    return [d for d in sorted(TEMPLATES.iterdir()) if d.is_dir() and d.name not in PROJECT_TEMPLATES]


def test_the_store_imports_no_page_machinery():
    assert store_page_imports(PRODUCT / "conversations") == []


def test_the_store_rule_fails_on_a_planted_template_import(tmp_path):
    (tmp_path / "planted.py").write_text("def f():\n    from django.template.loader import render_to_string\n")
    (tmp_path / "fine.py").write_text("from django.db import models\n")
    bad = store_page_imports(tmp_path)
    assert bad and all(b.startswith(f"{tmp_path / 'planted.py'}:2 imports django.template.loader") for b in bad), bad


def test_every_template_folder_is_an_app_of_the_layers():
    layers = _layers()
    assert [d.name for d in _app_template_dirs(layers) if d.name not in layers] == []


@pytest.mark.parametrize("app", sorted(_layers()))
def test_each_app_renders_only_its_own_templates(app):
    if (PRODUCT / app).is_dir():
        assert foreign_templates(PRODUCT / app) == []


def test_the_rendering_rule_sees_another_apps_template(tmp_path):
    app = tmp_path / "builds"
    app.mkdir()
    (app / "views.py").write_text('def v(r):\n    return render(r, "viewer/conversation.html")\n')
    (app / "ok.py").write_text('T = "builds/build.html"\n')
    assert len(foreign_templates(app)) == 1


def test_templates_load_libraries_and_use_templates_only_of_their_app_or_below():
    layers, libraries = _layers(), _library_apps()
    assert libraries["cv"] == "display" and libraries["cv_build"] == "builds"  # the check reads real owners
    bad = []
    for folder in _app_template_dirs(layers):
        for path in sorted(folder.rglob("*.html")):
            bad += upward_template_links(folder.name, path.read_text(), str(path.relative_to(ROOT)), layers, libraries)
    assert bad == []


def test_the_template_rule_fails_on_an_upward_library_and_include():
    layers, libraries = _layers(), _library_apps()
    planted = '{% load static cv review_tags %}{% include "viewer/conversation.html#turn-body" %}{% include "builds/_build.html" %}'
    bad = upward_template_links("builds", planted, "planted", layers, libraries)
    assert len(bad) == 2, bad  # review_tags (review is above builds) and viewer's template; cv, static and builds' own pass
    assert upward_template_links("viewer", planted.replace("review_tags", "cv_build"), "planted", layers, libraries) == []
