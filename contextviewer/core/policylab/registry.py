"""The policy lab's registry: name -> policy object (policy-lab.md §0, sections 1-8).

Each policy module defines `POLICY` (and `POLICIES` when it has variants), an object with `name`, `label`, `params` (defaults) and
`replay(session, **params) -> Replay`, and optionally `wrapper_tokens` (the size of the text its
harness wraps a summary in, §8; `common.DEFAULT_WRAPPER_TOKENS` without) and `default = True` (the
lab draws it for every conversation). Adding a policy is its module plus one line in MODULES
(docs/adding-a-policy.md). Which policy replays a harness is the format's to say: `own_policy` in
the format's HARNESS (importers/<format>.py), checked against `names()` by the tests."""

from __future__ import annotations

import importlib

from .common import DEFAULT_WRAPPER_TOKENS
from .model import Policy

# One line per policy module (its file name in this package), in the order the lab lists them.
MODULES = ("recorded", "claude_code", "efferent", "deepagents", "codex", "picoclaw", "openhands", "cwm")


def _load() -> dict[str, Policy]:
    policies: dict[str, Policy] = {}
    for mod in MODULES:
        try:
            module = importlib.import_module(f"{__package__}.{mod}")
        except ModuleNotFoundError as exc:  # a module not written yet
            if exc.name != f"{__package__}.{mod}":
                raise
            continue
        for policy in getattr(module, "POLICIES", (module.POLICY,)):
            policies[policy.name] = policy
    return policies


POLICIES: dict[str, Policy] = _load()


def get(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(names())}") from None


def names() -> list[str]:
    return list(POLICIES)


def defaults() -> list[str]:
    """The policies the lab draws for every conversation (`default = True` on the policy), in
    registry order; beside them, a conversation's own harness policy (the format's `own_policy`)."""
    return [name for name, policy in POLICIES.items() if getattr(policy, "default", False)]


def wrapper_tokens(name: str) -> int:
    """Tokens of the text the harness of policy `name` wraps a summary in (§8 "Always add")."""
    return getattr(get(name), "wrapper_tokens", DEFAULT_WRAPPER_TOKENS)
