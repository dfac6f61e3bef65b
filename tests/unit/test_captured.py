"""Claude Code's system prompt and tools sized from a captured request, by CLI version."""

import json

from contextviewer.core import captured, tokens


def _capture(root, version, prompt, tools):
    folder = root / "claude-code" / "captured"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"system_{version}.json").write_text(json.dumps([
        {"type": "text", "text": f"x-anthropic-billing-header: cc_version={version};"},
        {"type": "text", "text": prompt},
    ]))
    (folder / f"tools_{version}.json").write_text(json.dumps(tools))


def test_the_capture_of_the_session_version_else_the_nearest_older_one(tmp_path):
    _capture(tmp_path, "2.1.10", "old prompt " * 50, [])
    _capture(tmp_path, "2.1.144", "new prompt " * 500, [{"name": "Bash", "description": "Run a command " * 20}])
    assert captured.captured_prompt(tmp_path, "claude-code", "2.1.10").exact
    found = captured.captured_prompt(tmp_path, "claude-code", "2.1.99")
    assert found.version == "2.1.10" and not found.exact  # nearest older, by number not by text
    assert captured.captured_prompt(tmp_path, "claude-code", "2.0.1").version == "2.1.10"  # nothing older: nearest newer
    assert captured.captured_prompt(tmp_path, "claude-code", None).version == "2.1.144"  # unknown: the newest
    found = captured.captured_prompt(tmp_path, "claude-code", "2.1.144")
    assert found.system_prompt == tokens.count_text("new prompt " * 500)  # billing header left out
    assert found.tool_definitions > 0 and found.tools == 1


def test_the_capturing_users_mcp_tools_are_left_out(tmp_path):
    bash = {"name": "Bash", "description": "Run a command"}
    _capture(tmp_path, "1.0.0", "p", [bash, {"name": "mcp__stitch__create", "description": "x " * 4000}])
    found = captured.captured_prompt(tmp_path, "claude-code", "1.0.0")
    assert found.tools == 1 and found.tool_definitions == tokens.count_text(json.dumps([bash]))


def test_no_capture_is_none_not_zero(tmp_path):
    assert captured.captured_prompt(tmp_path / "missing", "claude-code", "2.1.0") is None
    assert captured.captured_prompt(None, "claude-code", "2.1.0") is None
    (tmp_path / "claude-code" / "captured").mkdir(parents=True)
    (tmp_path / "claude-code" / "captured" / "system_1.0.json").write_text("[]")  # no tools file: no capture
    assert captured.captured_prompt(tmp_path, "claude-code", "1.0") is None


class _Store(dict):
    def get(self, key):
        return super().get(key)

    def set(self, key, value, timeout):
        self[key] = value


def test_counts_kept_in_a_store_are_read_without_the_tokenizer_and_remade_when_the_capture_changes(
    tmp_path, monkeypatch
):
    _capture(tmp_path, "2.1.10", "a prompt " * 300, [{"name": "Read", "description": "Read a file " * 30}])
    store = _Store()
    first = captured.captured_prompt(tmp_path, "claude-code", "2.1.10", store)
    assert len(store) == 1 and list(store.values())[0] == (first.system_prompt, first.tool_definitions, 1)

    def no_tokenizer(*args, **kwargs):
        raise AssertionError("the tokenizer was loaded")

    captured._count.cache_clear()
    monkeypatch.setattr(tokens, "count_text", no_tokenizer)
    assert captured.captured_prompt(tmp_path, "claude-code", "2.1.10", store) == first
    monkeypatch.undo()
    # A new capture of the same version (the file changed): counted again, not the stale figure.
    (tmp_path / "claude-code" / "captured" / "system_2.1.10.json").write_text(json.dumps("short"))
    import os

    os.utime(tmp_path / "claude-code" / "captured" / "system_2.1.10.json", (1, 1))
    again = captured.captured_prompt(tmp_path, "claude-code", "2.1.10", store)
    assert again.system_prompt == tokens.count_text("short") < first.system_prompt
