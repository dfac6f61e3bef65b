"""Branches of a forked log: the abandoned ones found, parallel tool calls and split responses not."""

from contextviewer.core.branches import Node, abandoned


def _chain(*specs):
    """Nodes from (uuid, parent, role[, call])."""
    return [Node(s[0], s[1], s[2], s[3] if len(s) > 3 else "") for s in specs]


def test_a_re_edited_prompt_abandons_the_first_version_and_what_followed_it():
    nodes = _chain(
        ("u0", None, "user"),
        ("a0", "u0", "assistant", "c0"),
        ("u1", "a0", "user"),  # 2: first version of the prompt
        ("a1", "u1", "assistant", "c1"),
        ("t1", "a1", "tool"),
        ("u1b", "a0", "user"),  # 5: the re-edited prompt, same parent
        ("a2", "u1b", "assistant", "c2"),
    )
    assert abandoned(nodes) == {2: 5, 3: 5, 4: 5}


def test_the_kept_branch_is_the_one_that_leads_to_the_latest_message_not_the_last_written_fork():
    # the second child (5) is written later but dead-ends; the first child leads on to message 6
    nodes = _chain(
        ("u0", None, "user"),
        ("a0", "u0", "assistant", "c0"),
        ("u1", "a0", "user"),
        ("a1", "u1", "assistant", "c1"),
        ("u2", "a1", "user"),
        ("x", "a0", "user"),
        ("a2", "u2", "assistant", "c2"),
    )
    assert abandoned(nodes) == {5: 2}


def test_parallel_tool_calls_and_a_response_split_over_lines_are_not_branches():
    nodes = _chain(
        ("u0", None, "user"),
        ("a1", "u0", "assistant", "c1"),  # thinking
        ("a2", "a1", "assistant", "c1"),  # tool_use 1
        ("a3", "a2", "assistant", "c1"),  # tool_use 2: child of tool_use 1, beside its result
        ("r1", "a2", "tool"),
        ("r2", "a3", "tool"),
        ("p", "a3", "other"),  # a progress line
        ("a4", "r2", "assistant", "c2"),
        # older logs: two lines of one response with the same parent
        ("b1", "a4", "assistant", "c3"),
        ("b2", "a4", "assistant", "c3"),
    )
    assert abandoned(nodes) == {}


def test_a_fork_inside_an_abandoned_branch_names_the_outer_kept_sibling():
    nodes = _chain(
        ("u0", None, "user"),
        ("u1", "u0", "user"),  # 1: abandoned
        ("a1", "u1", "assistant", "c1"),
        ("a1b", "u1", "assistant", "c1b"),  # 3: a retry inside the abandoned branch
        ("u2", "u0", "user"),  # 4: kept
        ("a2", "u2", "assistant", "c2"),
    )
    assert abandoned(nodes) == {1: 4, 2: 4, 3: 4}


def test_a_fold_that_restarts_the_chain_and_unknown_parents_start_new_trees():
    nodes = _chain(
        ("u0", None, "user"),
        ("a0", "u0", "assistant", "c0"),
        ("s", None, "user"),  # summary after a compact boundary
        ("a1", "s", "assistant", "c1"),
        ("o", "missing", "user"),
        (None, None, "user"),
    )
    assert abandoned(nodes) == {}
