"""Branches: where a log's parent links fork, the messages the conversation did not go on with.

A log that links each message to its parent (Claude Code: ``uuid`` / ``parentUuid``) is a tree.
It forks when a person re-edits a prompt or a call is retried: two messages then share a parent,
and only one of them leads on to the rest of the conversation. The others are an abandoned
branch; shown in file order they would read as repeated turns.

Not a fork: one model call written as several lines (Claude Code writes each block of a response
on its own line, so a tool call's line has both the next line of the same response and its tool
result as children), and tool results, progress or system lines hanging off a message.

Pure: messages in, indexes out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HEAD_ROLES = frozenset({"user", "assistant"})


@dataclass(frozen=True)
class Node:
    """A message as `abandoned` reads it."""

    uuid: str | None
    parent_uuid: str | None
    role: str
    call_id: str = ""  # the model call an assistant line belongs to (lines of one call are one head)


def abandoned(nodes: Sequence[Node]) -> dict[int, int]:
    """Index of every message on an abandoned branch -> index of the first message of the branch
    the conversation went on with at that fork (the kept sibling).

    At a fork the kept child is the one whose subtree holds the latest message (the largest
    index): the path to the newest message, or, before a fold restarted the chain, the path that
    ran on to the fold. Heads of a fork are user and assistant children; assistant lines of one
    model call count as one head. A branch forking again inside an abandoned branch keeps the
    outer fork's kept sibling. Messages without a uuid, or whose parent is unknown, start a tree.
    """
    index: dict[str, int] = {}
    for i, n in enumerate(nodes):
        if n.uuid is not None and n.uuid not in index:
            index[n.uuid] = i
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for i, n in enumerate(nodes):
        p = index.get(n.parent_uuid) if n.parent_uuid is not None else None
        if p is None or p == i or (n.uuid is not None and index[n.uuid] != i):
            roots.append(i)
        else:
            children.setdefault(p, []).append(i)

    # Post-order: the largest index in each subtree (iterative; a cycle is never entered twice).
    last = list(range(len(nodes)))
    seen = [False] * len(nodes)
    order: list[int] = []
    for root in roots:
        stack = [root]
        while stack:
            i = stack.pop()
            if seen[i]:
                continue
            seen[i] = True
            order.append(i)
            stack.extend(children.get(i, ()))
    for i in reversed(order):
        for c in children.get(i, ()):
            if last[c] > last[i]:
                last[i] = last[c]

    # Top-down: at each fork, every head but the kept one is abandoned with all it leads to.
    marks: dict[int, int] = {}
    for i in order:
        kids = children.get(i)
        if not kids:
            continue
        inherited = marks.get(i)
        groups: dict[object, list[int]] = {}
        for c in kids:
            n = nodes[c]
            if n.role in HEAD_ROLES:
                key = ("call", n.call_id) if n.role == "assistant" and n.call_id else ("line", c)
                groups.setdefault(key, []).append(c)
        kept_group: list[int] | None = None
        if len(groups) > 1:
            kept_group = max(groups.values(), key=lambda g: max(last[c] for c in g))
        for c in kids:
            if inherited is not None:
                marks[c] = inherited
            elif kept_group is not None and nodes[c].role in HEAD_ROLES and c not in kept_group:
                marks[c] = min(kept_group)
    return marks
