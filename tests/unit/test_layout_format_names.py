"""DESIGN.md "Layout": adding a format is one module in importers/ plus one registry line; no other
file names a format. What a surface needs to know about a format (its label, where it writes, its
harness's rules: window, auto-fold point, reserve, estimator, own policy, captured prompt) is
declared on the format's module and read through the registry (importers/formats.py).

This scans every module under contextviewer/ outside importers/, and under ops/ (migrations left
out: they record history) for a string literal that is a registered format's name ("codex",
"claude-code", ...), docstrings left out. ALLOWED lists what would be left, file by file, with how
many of each name and why (nothing today): a new occurrence fails, and so does an entry that is no
longer needed (shrink it)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from contextviewer.core.policylab import registry as policy_registry
from contextviewer.importers import formats

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "contextviewer"
# The product, and ops beside it (serve, bench: it may import anything of the product, so it could
# as well read a format's or a policy's declaration as name it).
SCANNED = (PACKAGE, ROOT / "ops")

# A format name that is also an everyday word (a request body's "messages" field, a related name, a
# progress label): counted only where a value is compared with it (`agent == "messages"`,
# `fmt in ("messages", ...)`), the way code tells formats apart.
EVERYDAY_WORDS = {"messages"}

# file -> ({format name: occurrences}, why it is still there). Only shrink this: the product names
# no format outside importers/ (a new entry needs a reason no declaration on a format's or a
# policy's module can serve); what is left is ops/, benchmarks that are about one format by purpose.
ALLOWED: dict[str, tuple[dict[str, int], str]] = {
    "ops/bench/ccl.py": (
        {"claude-code": 1},
        "`bench vs-claude-code-log` races claude-code-log, a tool for Claude Code logs only: its default "
        "input is the Claude Code fixtures folder",
    ),
    "ops/agents.py": (
        {"claude-code": 1, "codex": 2},
        "the real Claude Code and Codex CLIs as the lab's oracle (tests/agents, `agent_thresholds`): about "
        "those two clients by purpose, the npm packages and binaries they install",
    ),
    "ops/management/commands/agent_thresholds.py": (
        {"claude-code": 9, "codex": 4},
        "bisects the real Claude Code and Codex CLIs' compaction thresholds on their own fixture folders",
    ),
    "ops/scripted/gemini.py": (
        {"gemini": 2},
        "the scripted server's adapter of Google's generateContent protocol: the protocol's name and a model "
        "name to answer with, not the format",
    ),
    "ops/management/commands/bench.py": (
        {"codex": 1},
        "`bench import` also times a synthetic Codex rollout (importers/codex/synthetic.py): the scratch "
        "folder it writes it to",
    ),
}


# Folders about given agents by purpose, left out whole: each driver runs one agent's CLI (its npm
# package, binary, config files and the format it must be imported as); the scripted server's
# adapters speak the providers' protocols those CLIs call (issue 33).
BY_PURPOSE = {
    "ops/drivers": "each driver runs one agent's real CLI and names the format its log must import as",
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _compared(tree: ast.AST) -> set[int]:
    """Constants a value is compared with: `x == "a"`, `x in ("a", "b")`."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                elts = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
                out |= {id(e) for e in elts}
    return out


def _own_policy_names(path: Path) -> set[str]:
    """Policies share some names with formats: a policy's own module may say its own name, and the
    policy registry its one line per policy module (docs/adding-a-policy.md)."""
    if not path.is_relative_to(ROOT):
        return set()
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if module == policy_registry.__name__:
        return set(policy_registry.MODULES)
    return {p.name for p in policy_registry.POLICIES.values() if type(p).__module__ == module}


def format_names_in(path: Path, names: set[str]) -> Counter:
    tree = ast.parse(path.read_text(), filename=str(path))
    skip, compared, own = _docstrings(tree), _compared(tree), _own_policy_names(path)
    found: Counter = Counter()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
            continue
        value = node.value
        if value in names and value not in own and (value not in EVERYDAY_WORDS or id(node) in compared):
            found[value] += 1
    return found


def _scan() -> dict[str, dict[str, int]]:
    names = {f.name for f in formats.registry()}
    out = {}
    for path in sorted(p for package in SCANNED for p in package.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("contextviewer", "importers") or "migrations" in rel.parts:
            continue
        if any(rel.is_relative_to(folder) for folder in BY_PURPOSE):
            continue
        found = format_names_in(path, names)
        if found:
            out[str(rel)] = dict(sorted(found.items()))
    return out


def test_no_file_outside_the_importers_names_a_format():
    found = _scan()
    new = {f: n for f, n in found.items() if f not in ALLOWED}
    assert new == {}, "a format is named outside importers/: declare the rule on the format's module (docs/adding-a-format.md)"
    changed = {f: (n, ALLOWED[f][0]) for f, n in found.items() if n != ALLOWED[f][0]}
    assert changed == {}, "(found, allowed): a new occurrence in an allowed file, or one gone (shrink ALLOWED)"
    stale = sorted(set(ALLOWED) - set(found))
    assert stale == [], "these files no longer name a format: remove them from ALLOWED"
    assert [f for f in ALLOWED if f.startswith("contextviewer/")] == [], "the product names no format outside importers/"


def test_the_scan_finds_a_format_name(tmp_path):
    # The check above cannot pass vacuously: a format's name is found, a docstring and a request
    # body's field are not, an everyday word only where a value is compared with it.
    path = tmp_path / "surface.py"
    path.write_text(
        '"""About codex."""\n\nRULES = {"codex": 1}\n\n'
        'def f(conv, body):\n    return conv.agent in ("codex", "messages") or body["messages"]\n'
    )
    assert format_names_in(path, {"codex", "messages"}) == Counter({"codex": 2, "messages": 1})


def test_the_harness_rules_are_on_the_format_modules():
    """core/harness.py names no format: every rule comes from a format's module via the registry,
    and every own policy a format names is a registered policy."""
    assert format_names_in(PACKAGE / "core" / "harness.py", {f.name for f in formats.registry()}) == Counter()
    owned = {name: h.own_policy for name, h in formats.harnesses().items() if h.own_policy}
    assert set(owned.values()) <= set(policy_registry.names())
