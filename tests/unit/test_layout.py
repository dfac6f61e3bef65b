"""The layout holds (docs/architecture.md): no import cycle between modules, counting imports
inside functions; at most MAX_LAZY imports of project modules inside functions, each saying why on
its line (`# lazy: ...`); no module outside importers/ over 700 lines. import-linter (run by
bin/test) checks the direction of the arrows between apps; this checks what it does not."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contextviewer", "ops")
MAX_LAZY = 25
MAX_LINES = 700


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """(target module, line, inside a function, the source line) of every project import."""
    tree = ast.parse(path.read_text())
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    lines = path.read_text().splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                yield target, node.lineno, id(node) in inside, lines[node.lineno - 1]


def _graph():
    modules = _modules()
    edges, lazy = {}, []
    for name, path in modules.items():
        for target, line, in_function, text in _imports(name, path, modules):
            edges.setdefault(name, set()).add(target)
            if in_function:
                lazy.append((f"{path.relative_to(ROOT)}:{line}", target, text))
    return modules, edges, lazy


def _cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle (a -> b -> ... -> a), or [] when the modules form a DAG."""
    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as e:
        return e.args[1]
    return []


def test_no_module_imports_another_that_imports_it_back_even_inside_a_function():
    _, edges, _ = _graph()
    assert _cycle(edges) == []


def test_imports_inside_functions_are_few_and_each_says_why():
    _, _, lazy = _graph()
    unexplained = [f"{where} {text.strip()}" for where, _, text in lazy if "# lazy:" not in text]
    assert unexplained == [], "an import inside a function without '# lazy: <reason>' on its line"
    assert len(lazy) <= MAX_LAZY, [where for where, _, _ in lazy]


def test_no_module_outside_the_importers_is_over_700_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in _modules().values()
        if "importers" not in path.parts and (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_cycle_finder_finds_a_cycle_through_a_function_import(tmp_path):
    # The check above cannot pass vacuously: two modules importing each other, one of them inside a function.
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    import a  # lazy: test\n")
    modules = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    edges = {name: {t for t, *_ in _imports(name, path, modules)} for name, path in modules.items()}
    assert sorted(set(_cycle(edges))) == ["a", "b"]
