"""Offline token counting and per-category message counts."""

import hashlib
import inspect
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contextviewer.core import tokens
from contextviewer.core.tokens import (
    CATEGORIES,
    ENCODING_FILES,
    ENCODING_URL,
    IMAGE_DEFAULT_TOKENS,
    count_message,
    count_message_blocks,
    count_messages,
    count_text,
    count_texts,
    ensure_encodings,
    estimate_image_tokens,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def encodings(tmp_path_factory):
    cache = tmp_path_factory.mktemp("tiktoken")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        ensure_encodings(cache)
        yield cache


# ---------------------------------------------------------------- rank files


def test_cache_names_are_sha1_of_tiktoken_urls():
    import tiktoken_ext.openai_public as openai_public

    source = inspect.getsource(openai_public)
    for name, (cache_name, _sha256) in ENCODING_FILES.items():
        url = ENCODING_URL.format(name=name)
        assert f'"{url}"' in source  # the very string tiktoken hashes
        assert hashlib.sha1(url.encode()).hexdigest() == cache_name
    assert ENCODING_FILES["o200k_base"][0] == "fb374d419588a4632f3f557e76b4b70aebbca790"
    assert ENCODING_FILES["cl100k_base"][0] == "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"


def test_ensure_encodings_writes_verified_files_and_sets_env(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    target = tmp_path / "nested" / "cache"
    ensure_encodings(target)
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(target)
    names = sorted(p.name for p in target.iterdir())
    assert names == sorted(cache_name for cache_name, _ in ENCODING_FILES.values())  # no temp files left
    for cache_name, sha256 in ENCODING_FILES.values():
        assert hashlib.sha256((target / cache_name).read_bytes()).hexdigest() == sha256


def test_ensure_encodings_keeps_good_files_and_replaces_corrupt_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    ensure_encodings(tmp_path)
    o200k = tmp_path / ENCODING_FILES["o200k_base"][0]
    cl100k = tmp_path / ENCODING_FILES["cl100k_base"][0]
    mtime = cl100k.stat().st_mtime_ns
    o200k.write_bytes(b"truncated")
    ensure_encodings(tmp_path)
    assert hashlib.sha256(o200k.read_bytes()).hexdigest() == ENCODING_FILES["o200k_base"][1]
    assert cl100k.stat().st_mtime_ns == mtime


def test_constructor_args_copy_is_made_once_and_remade_when_stale_or_corrupt(tmp_path, monkeypatch):
    """The marshal copy of tiktoken's arguments gives the same tokenizer as tiktoken's own parse."""
    import tiktoken

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    ensure_encodings(tmp_path, ("o200k_base",))
    copy = tmp_path / f"{ENCODING_FILES['o200k_base'][0]}.args.marshal"
    first = tokens._constructor_args("o200k_base", tmp_path)
    assert copy.is_file()
    made = copy.stat().st_mtime_ns
    assert tokens._constructor_args("o200k_base", tmp_path) == first
    assert copy.stat().st_mtime_ns == made  # read, not made again
    text = "naïve <|endoftext|> tokens\n\n    def f(x): return x ** 2  # 12345"
    expected = tiktoken.get_encoding("o200k_base").encode_ordinary(text)
    assert tiktoken.Encoding(**first).encode_ordinary(text) == expected
    for bad in (b"not marshal", marshal.dumps({"stamp": "another tiktoken", "args": {}})):
        copy.write_bytes(bad)
        args = tokens._constructor_args("o200k_base", tmp_path)
        assert tiktoken.Encoding(**args).encode_ordinary(text) == expected
        assert marshal.loads(copy.read_bytes())["args"] == args


def test_known_token_ids():
    assert tokens.get_encoding("o200k_base").encode_ordinary("hello world") == [24912, 2375]
    assert tokens.get_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]


NETWORK_OFF = textwrap.dedent(
    """
    import socket, sys

    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")

    # Patch the Python-level class (ssl subclasses it at import) and the resolvers.
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    """
)


def _run_offline(code: str, cache_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(
        TIKTOKEN_CACHE_DIR=str(cache_dir),
        HTTP_PROXY="http://10.255.255.1:9",
        HTTPS_PROXY="http://10.255.255.1:9",
        PYTHONPATH=str(ROOT),
    )
    return subprocess.run(
        [sys.executable, "-c", NETWORK_OFF + textwrap.dedent(code), str(cache_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_counting_works_with_the_network_unreachable(tmp_path):
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    result = _run_offline(
        """
        from pathlib import Path
        import tiktoken
        from contextviewer.core import tokens
        tokens.ensure_encodings(Path(sys.argv[1]))
        print(tokens.count_text("hello world"), tiktoken.get_encoding("cl100k_base").encode_ordinary("hello world"))
        """,
        empty,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "2 [15339, 1917]"


def test_without_the_rank_files_the_offline_subprocess_cannot_count(tmp_path):
    # Control for the test above: the socket patch really blocks tiktoken's download.
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    result = _run_offline('import tiktoken\ntiktoken.get_encoding("o200k_base")\n', empty)
    assert result.returncode != 0
    assert "network disabled by the test" in result.stderr
    assert list(empty.iterdir()) == []


# ---------------------------------------------------------------- counting text


def test_count_text_basics():
    assert count_text("") == 0
    assert count_text("hello world") == 2
    assert count_text("hello world", "cl100k_base") == 2


def test_special_token_strings_are_ordinary_text():
    # As a special token "<|endoftext|>" would be 1 token; as text it is several, and never an error.
    assert count_text("<|endoftext|>") > 1
    assert count_text("say <|endofprompt|> now", "cl100k_base") > 3


def test_lone_surrogates_do_not_raise():
    assert count_text("a\ud800b") >= 2


def test_count_texts_matches_single_counts_inline_and_threaded():
    small = ["hello world", "", "hello world"]
    assert count_texts(small) == [2, 0, 2]
    # Large enough to take the threaded path (PARALLEL_MIN_CHARS).
    line = "hello world\n"  # "hello", " world", "\n": 3 tokens
    big = [line * 5_000 for _ in range(8)] + ["hello world"]
    assert sum(map(len, big)) > tokens.PARALLEL_MIN_CHARS
    assert count_texts(big, num_threads=2) == [15_000] * 8 + [2]
    assert count_texts(big, num_threads=1) == [15_000] * 8 + [2]
    assert count_texts(iter(small)) == [2, 0, 2]


def test_approximate_fast_path_cuts_after_newlines():
    text = "hello world\n" * 20_000  # 240,000 characters, 3 tokens a line
    assert count_text(text) == 60_000
    assert count_text(text, approximate_over=100_000) == 60_000
    pieces = tokens._pieces(text, 1000)
    assert "".join(pieces) == text
    assert all(p.endswith("\n") for p in pieces[:-1])


# ---------------------------------------------------------------- images


def test_image_tokens_from_dimensions():
    assert estimate_image_tokens(width=1000, height=750) == 1000  # 750,000 px / 750
    assert estimate_image_tokens(width=3000, height=2000) == 1600  # scaled, then capped


def test_image_tokens_from_base64_size():
    # 40,000 base64 chars -> 30,000 bytes -> 60,000 px at 0.5 byte/px -> 80 tokens
    assert estimate_image_tokens(data_size=40_000) == 80
    assert estimate_image_tokens(data_size=4) == 1
    assert estimate_image_tokens(data_size=10_000_000) == 1600
    assert estimate_image_tokens() == IMAGE_DEFAULT_TOKENS == 1600


# ---------------------------------------------------------------- messages


def test_user_and_assistant_text():
    assert count_message("user", [{"kind": "text", "text": "hello world"}]) == {"user": 2}
    assert count_message("assistant", [{"kind": "text", "text": "hello world"}]) == {"assistant": 2}


def test_summary_message_counts_as_summary():
    blocks = [{"kind": "text", "text": "hello world"}]
    assert count_message("user", blocks, is_compact_summary=True) == {"summary": 2}


def test_assistant_blocks_by_category_in_display_order():
    blocks = [
        {"kind": "tool_call", "tool_id": "t1", "tool_name": "Bash", "tool_input": {"command": "ls"}},
        {"kind": "text", "text": "hello world"},
        {"kind": "thinking", "text": "hello world hello world"},
        {"kind": "other", "raw_type": "redacted_thinking", "text": "hello world"},
    ]
    categories, per_block = count_message_blocks("assistant", blocks)
    call_tokens = count_text('Bash\n{"command": "ls"}')  # name + input JSON, as documented
    assert categories == {"assistant": 2, "thinking": 4 + 2, "tool_calls": call_tokens}
    assert list(categories) == [c for c in CATEGORIES if c in categories]
    assert per_block == [call_tokens, 2, 4, 2]


def test_tool_call_prefers_the_importers_json_text():
    block = {"kind": "tool_call", "tool_name": "Read", "text": "hello world", "tool_input": {"ignored": True}}
    assert count_message("assistant", [block]) == {"tool_calls": count_text("Read\nhello world")}


def test_tool_results_and_their_images():
    blocks = [
        {"kind": "tool_result", "tool_id": "t1", "text": "hello world", "images": 2},
        {"kind": "image", "media_type": "image/png", "data_size": 40_000},
    ]
    categories, per_block = count_message_blocks("user", blocks)
    assert categories == {"tool_results": 2, "media": 2 * 1600 + 80}
    assert per_block == [2 + 3200, 80]
    assert sum(per_block) == sum(categories.values())


def test_tool_role_system_role_and_hooks():
    text = [{"kind": "text", "text": "hello world"}]
    assert count_message("tool", text) == {"tool_results": 2}
    assert count_message("system", text, record_type="system") == {"other": 2}
    assert count_message("other", text) == {"other": 2}
    assert count_message("system", text, record_type="system_prompt") == {"system_prompt": 2}
    assert count_message("system", text, record_type="tool_definitions") == {"tool_definitions": 2}


def test_empty_message():
    assert count_message_blocks("assistant", []) == ({}, [])
    assert count_message("assistant", [{"kind": "text"}]) == {}


def test_count_messages_batch_equals_one_by_one():
    items = [
        ("user", [{"kind": "text", "text": "hello world"}]),
        ("assistant", [{"kind": "thinking", "text": "hello world"}, {"kind": "image", "data_size": 40_000}]),
        ("user", [{"kind": "text", "text": "hello world"}], True),
        ("system", [{"kind": "text", "text": "hello world"}], False, "system_prompt"),
    ]
    assert count_messages(items) == [
        ({"user": 2}, [2]),
        ({"thinking": 2, "media": 80}, [2, 80]),
        ({"summary": 2}, [2]),
        ({"system_prompt": 2}, [2]),
    ]


def test_labels_cover_gauge_categories():
    assert set(tokens.LABELS) == set(tokens.GAUGE_CATEGORIES)
    assert tokens.LABELS["harness_overhead"] == "harness overhead (not in log)"
    assert CATEGORIES[0] == "system_prompt" and CATEGORIES[-1] == "other" and len(CATEGORIES) == 11
