"""One file however it is written (core/pathmatch.py), and errors as failures of a call (core/facts.py):
each path form a summary or a later call may use, synthetic, always run (issue 34, items 1 and 2).

The forms are those the issue found named but marked lost on real folds: Windows drive paths
(`C:\\Users\\...`, `C:/Users/...`, cwd-relative with backslashes), absolute POSIX paths written out,
paths with spaces, `~` forms of the home path, and files named only through a glob or a folder."""

from contextviewer.core import continuation, facts, pathmatch

WIN = "C:\\Users\\Ana\\Projects\\shop"
POSIX = "/home/ana/projects/shop"


def kept(path: str, summary: str, cwd: str, others: tuple[str, ...] = ()) -> str:
    tails = pathmatch.tail_counts(pathmatch.path_key(p, cwd) for p in (path, *others))
    return pathmatch.match(path, pathmatch.named(summary), cwd, tails)


def test_windows_paths_in_every_form_are_one_file():
    path = "C:\\Users\\Ana\\Projects\\shop\\src\\Cart.ts"
    for summary in (
        "Edited `C:\\Users\\Ana\\Projects\\shop\\src\\Cart.ts` to fix totals.",
        "Edited C:/Users/Ana/Projects/shop/src/Cart.ts to fix totals.",
        "Edited c:\\users\\ana\\projects\\shop\\SRC\\cart.ts.",  # case does not matter on Windows
        "Edited src\\Cart.ts.",  # cwd-relative, backslashes
        "Edited src/Cart.ts.",
    ):
        assert kept(path, summary, WIN), summary
    assert pathmatch.path_key(path, WIN) == "src/cart.ts"
    assert not kept(path, "Edited src/Basket.ts.", WIN)


def test_absolute_posix_and_relative_forms_are_one_file():
    path = "/home/ana/projects/shop/src/cart.py"
    assert kept(path, "Changed /home/ana/projects/shop/src/cart.py.", POSIX) == "exact"
    assert kept(path, "Changed ./src/cart.py.", POSIX) == "normalized"
    assert kept("src/cart.py", "Changed /home/ana/projects/shop/src/cart.py.", POSIX) == "normalized"
    # A POSIX cwd is case-sensitive: another case is another file.
    assert not kept(path, "Changed SRC/Cart.py.", POSIX)


def test_the_home_in_its_tilde_forms():
    path = "/home/ana/projects/shop/notes/todo.md"
    assert kept(path, "Notes are in ~/projects/shop/notes/todo.md.", POSIX)
    assert kept(path, "Notes are in ~ana/projects/shop/notes/todo.md.", POSIX)
    assert pathmatch.path_key("~/.claude/plans/x.md", POSIX) == "/home/ana/.claude/plans/x.md"
    assert pathmatch.path_key("~/x.md", "C:\\Users\\Ana\\shop") == "c:/users/ana/x.md"
    assert pathmatch.home_of("/Users/kim/code/app") == "/Users/kim"


def test_paths_with_spaces_are_read_whole():
    path = "/home/ana/projects/shop/docs/Deep Dive Man.md"
    assert kept(path, 'Wrote "docs/Deep Dive Man.md" with the outline.', POSIX)
    assert kept(path, "Wrote /home/ana/projects/shop/docs/Deep Dive Man.md with the outline.", POSIX)
    assert kept("C:\\Users\\Ana\\My Docs\\plan v2.txt", "Read C:\\Users\\Ana\\My Docs\\plan v2.txt first.", "C:\\Users\\Ana")
    assert not kept(path, "Wrote docs/Man.md.", POSIX)  # its last word is another file
    # The probe takes a tool's file_path with spaces as one path fact, whole.
    found = facts.extract([_msg(0, "assistant", _call("Write", file_path="/home/ana/projects/shop/docs/Deep Dive Man.md"))], POSIX)
    assert [f.key for f in found if f.kind == "path"] == ["docs/Deep Dive Man.md"]


def test_a_unique_tail_names_a_file_an_ambiguous_one_does_not():
    path = "/home/ana/projects/shop/src/cart/models.py"
    assert kept(path, "Updated `models.py`.", POSIX) == "normalized"
    assert not kept(path, "Updated `models.py`.", POSIX, others=("src/users/models.py",))
    assert kept(path, "Updated `cart/models.py`.", POSIX, others=("src/users/models.py",))


def test_a_glob_or_a_folder_names_its_files_as_a_pattern():
    shots = [f"/home/ana/projects/shop/shots/Screenshot_2026-01-0{i}-18{i}1.png" for i in range(1, 5)]
    summary = "Compared the four `shots/Screenshot_*-18*.png` captures; all of `src/legacy/` is dead code."
    for shot in shots:
        assert kept(shot, summary, POSIX) == "pattern"
    assert kept("/home/ana/projects/shop/shots/Screenshot_2026-01-01-1201.png", summary, POSIX) == ""
    assert kept("src/legacy/old_cart.py", summary, POSIX) == "pattern"
    assert kept("src/legacy/deep/er.py", summary, POSIX) == "pattern"
    assert kept("src/current.py", summary, POSIX) == ""
    assert kept("src/app/main.py", "Everything under src/**/*.py was reformatted.", POSIX) == "pattern"
    assert kept("lib/web/router.ex", "Read the lib/web folder.", POSIX) == "pattern"
    # A path named without a folder word is a file, not a folder: it covers nothing below it.
    assert kept("lib/web/router.ex", "Read lib/web quickly.", POSIX) == ""
    # The working directory or the home named whole is no folder that names every file.
    assert kept("src/current.py", f"Working in {POSIX}/ today.", POSIX) == ""


def test_the_probe_marks_a_file_named_by_a_pattern():
    segment = [_msg(0, "assistant", _call("Read", file_path=f"{POSIX}/shots/Screenshot_1-181.png"))]
    report = facts.probe(segment, "Looked at shots/Screenshot_*-18*.png.", cwd=POSIX)
    [path] = [f for f in report.facts if f.kind == "path"]
    assert (path.kept, path.how) == (True, "pattern")


def test_used_after_and_reread_after_match_the_same_way():
    """A lost file named again after the fold in another form (`~` in an Edit, a Windows path)
    is used again; a file read before and after in two forms is read again."""
    before = [
        _msg(0, "assistant", _call("Read", "r1", file_path=f"{POSIX}/notes/todo.md")),
        _msg(1, "user", _result("r1", "- [ ] ship")),
    ]
    report = facts.probe(before, "Nothing about notes.", cwd=POSIX)
    after = [
        _msg(2, "assistant", _call("Edit", "e1", file_path="~/projects/shop/notes/todo.md", old_string="a", new_string="b")),
        _msg(3, "assistant", _call("Read", "r2", file_path="./notes/todo.md")),
    ]
    measured = continuation.measure(before, "Nothing about notes.", after, report, cwd=POSIX)
    assert measured.used_after == ["notes/todo.md"]
    assert measured.reread_after == ["notes/todo.md"]

    # A later search over a glob covering it is no use of the file itself.
    globbed = [_msg(2, "assistant", _call("Glob", "g1", pattern="notes/**/*.md"))]
    assert continuation.measure(before, "Nothing about notes.", globbed, report, cwd=POSIX).used_after == []

    win_before = [_msg(0, "assistant", _call("Read", "r1", file_path="C:\\Users\\Ana\\Projects\\shop\\src\\Cart.ts"))]
    win_report = facts.probe(win_before, "Nothing.", cwd=WIN)
    win_after = [_msg(1, "assistant", _call("Edit", "e1", file_path="c:/users/ana/projects/shop/src/cart.ts", old_string="a", new_string="b"))]
    assert continuation.measure(win_before, "Nothing.", win_after, win_report, cwd=WIN).used_after == ["src/cart.ts"]
    win_reread = [_msg(1, "assistant", _call("Read", "r2", file_path="src\\CART.ts"))]
    assert continuation.measure(win_before, "Nothing.", win_reread, win_report, cwd=WIN).reread_after == ["src/cart.ts"]


# --- errors -------------------------------------------------------------------------------------


def _errors(*messages, cwd=POSIX):
    found = facts.extract(list(messages), cwd)
    return [f for f in found if f.kind == "error"], [f for f in found if f.kind == "rejection"]


def test_failed_reads_are_errors_each_naming_its_file():
    errors, _ = _errors(
        _msg(0, "assistant", _call("Read", "a", file_path=f"{POSIX}/a.py"), _call("Read", "b", file_path=f"{POSIX}/b.py")),
        _msg(1, "user", _result("a", "<tool_use_error>File does not exist.</tool_use_error>", error=True)),
        _msg(2, "user", _result("b", "<tool_use_error>File does not exist.</tool_use_error>", error=True)),
        _msg(3, "assistant", _call("Read", "c", file_path=f"{POSIX}/src")),
        _msg(4, "user", _result("c", "EISDIR: illegal operation on a directory, read", error=True)),
    )
    assert [e.text.split(" (")[0] for e in errors] == ["File does not exist.", "File does not exist.", "EISDIR: illegal operation on a directory, read"]
    assert [e.position for e in errors] == [1, 2, 4]  # two files, two errors; each says which
    assert f"{POSIX}/b.py" in errors[1].text


def test_validation_errors_rejected_writes_and_exits_count():
    errors, _ = _errors(
        _msg(0, "assistant", _call("Task", "t")),
        _msg(1, "user", _result("t", "<tool_use_error>InputValidationError: Task failed due to the following issue:\nThe required parameter `prompt` is missing</tool_use_error>", error=True)),
        _msg(2, "assistant", _call("Write", "w", file_path=f"{POSIX}/x.py", content="x")),
        _msg(3, "user", _result("w", "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>", error=True)),
        _msg(4, "assistant", _call("Bash", "b", command="npm test")),
        _msg(5, "user", _result("b", "> shop@1.0.0 test\n> jest\n\nTests: 1 failed", extra={"exit_code": 1})),
    )
    assert len(errors) == 3
    assert "InputValidationError" in errors[0].text
    assert errors[1].text.startswith("File has not been read yet")
    assert "failed" in errors[2].text  # a non-zero exit the log did not mark is an error, shown by its failure


def test_an_error_shows_its_message_from_stderr_not_the_first_line_of_stdout():
    errors, _ = _errors(
        _msg(0, "assistant", _call("Bash", "b", command="make deploy")),
        _msg(1, "user", _result("b", "Building images\nStep 1/9\ndeploy.sh: target 'prod' unknown", error=True,
                                extra={"exit_code": 2, "stderr": "deploy.sh: target 'prod' unknown"})),
    )
    assert [e.text for e in errors] == ["deploy.sh: target 'prod' unknown"]
    # Where the log keeps one text (Claude Code: `Exit code N`, stdout, then stderr) and no line names
    # the failure, the line printed last says why, not the first line of stdout.
    errors, _ = _errors(
        _msg(0, "assistant", _call("Bash", "b", command="make deploy")),
        _msg(1, "user", _result("b", "Exit code 2\nBuilding images\nStep 1/9\ndeploy.sh: target 'prod' unknown", error=True)),
    )
    assert [e.text for e in errors] == ["deploy.sh: target 'prod' unknown"]


def test_a_users_decision_is_its_own_kind_not_an_error():
    errors, rejections = _errors(
        _msg(0, "assistant", _call("ExitPlanMode", "p", plan="1. rewrite the cart")),
        _msg(1, "user", _result("p", "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
                                     "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.", error=True)),
        _msg(2, "assistant", _call("Bash", "b", command="rm -rf build")),
        _msg(3, "user", _result("b", "Claude requested permissions to use Bash, but you haven't granted it yet.", error=True)),
        _msg(4, "assistant", _call("Read", "s1", file_path=f"{POSIX}/a.py"), _call("Read", "s2", file_path=f"{POSIX}/b.py")),
        _msg(5, "user", _result("s2", "<tool_use_error>Sibling tool call errored</tool_use_error>", error=True)),
    )
    assert errors == []  # a sibling cancelled because another call failed is no failure of its own
    assert [r.text for r in rejections] == ["The user rejected the plan", "The user rejected Bash rm -rf"]
    assert all(r.tier == "A" for r in rejections)
    report = facts.probe([_msg(0, "assistant", _call("ExitPlanMode", "p", plan="x")),
                          _msg(1, "user", _result("p", "User rejected tool use", error=True))], "The user rejected the plan; wait.", cwd=POSIX)
    assert [(f.kind, f.kept) for f in report.facts if f.kind == "rejection"] == [("rejection", True)]


def _msg(position, role, *blocks):
    return {"position": position, "turn": 0, "role": role, "blocks": list(blocks), "is_meta": False}


def _call(name, tool_id="t", **tool_input):
    return {"kind": "tool_call", "tool_name": name, "tool_id": tool_id, "tool_input": tool_input}


def _result(tool_id, text, error=False, extra=None):
    block = {"kind": "tool_result", "tool_id": tool_id, "text": text}
    if error:
        block["is_error"] = True
    if extra:
        block["extra"] = extra
    return block


def test_odd_globs_neither_hang_nor_fail():
    """A run of wildcards is no name (it would compile to a regex that takes forever to fail); a
    class no regex takes is read as plain text; nothing raises."""
    names = pathmatch.named("*" * 10_000 + "/x and src/[z-a]*.py and a[&&b]c.py and " + "{" + "," * 5000 + "}*.py")
    assert pathmatch.match("src/a.py", names, POSIX) == ""
    assert pathmatch.match("src/[z-a]1.py", names, POSIX) == "pattern"
