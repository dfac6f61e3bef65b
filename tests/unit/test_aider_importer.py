"""aider chat histories: sessions per header, what the user typed, aider's output, the replies,
and the `> Tokens:` lines as model calls. Synthetic histories written here, then the real 4.1 MB
history of aider's own repository checked against plain counting of its lines."""

import io
import re
from pathlib import Path

import pytest

from contextviewer.core.records import BadLine, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.aider import parser as aider
from tests.conftest import shared_fixtures_dir

HISTORY = """\

# aider chat started at 2024-08-20 09:34:31

> /home/me/.venv/bin/aider app.py  
> Aider v0.51.1-dev  
> Main model: claude-3-5-sonnet-20240620 with diff edit format, prompt cache, infinite output  
> Added app.py to the chat.  

#### make the greeting louder  
#### and add a test  

Sure. Here is the change:

app.py
```python
<<<<<<< SEARCH
print("hi")
=======
print("HI")
> not aider's output: a quoted line inside the reply's code block
>>>>>>> REPLACE
```

#### Notes

That heading above is the reply's own Markdown, not the user.

> Tokens: 12,963 sent, 11,191 cache write, 1,270 cache hit, 105 received.
Cost: $0.04 message, $0.04 session.  
> Applied edit to app.py  
>  
> Commit 1a2b3c4 louder greeting  

#### /run pytest -q  
> ============================= test session starts ==============================
collected 1 item

test_app.py .                                                            [100%]
1 passed in 0.01s  
> Add the output to the chat? (y/n/instructions): n  

# aider chat started at 2024-08-21 10:00:00

> Aider v0.40.0  
> Models: gpt-4o with diff edit format, weak model gpt-4o-mini  

#### hi  

Hello! How can I help?

> Tokens: 194 sent, 9,474 cached, 7 received. Cost: $0.000057 message, $0.000057 session.  
> Tokens: 3.9k sent, 0 received.  
"""


def _parse(text: str | bytes, name: str = ".aider.chat.history.md") -> list:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return list(aider.parse(io.BytesIO(data), path=Path(name)))


def _messages(records, session_suffix=None):
    return [
        r
        for r in records
        if isinstance(r, MessageRecord) and (session_suffix is None or r.session_id.endswith(session_suffix))
    ]


def test_a_history_is_one_conversation_per_session_with_user_output_and_reply_messages():
    records = _parse(HISTORY)
    infos = [r for r in records if isinstance(r, SessionInfo)]
    assert [i.external_id for i in infos] == [
        ".aider.chat.history@2024-08-20 09:34:31",
        ".aider.chat.history@2024-08-21 10:00:00",
    ]
    assert infos[0].cli_version == "0.51.1-dev" and infos[0].models == ["claude-3-5-sonnet-20240620"]
    assert infos[0].started_at.isoformat() == "2024-08-20T09:34:31+00:00"
    assert not [r for r in records if isinstance(r, BadLine)]

    first = _messages(records, "09:34:31")
    roles = [m.role for m in first]
    # header, 4 output lines, 1 user message (2 lines), the reply (with its code block and
    # heading), Tokens (2 lines), Applied, Commit (with the empty '>' before it), /run, pytest
    # output (one multi-line output), the question.
    assert roles == ["system", "tool", "tool", "tool", "tool", "user", "assistant", "tool", "tool", "tool", "user", "tool", "tool"]
    user = first[5]
    assert user.blocks[0].text == "make the greeting louder\nand add a test"
    reply = first[6]
    assert "> not aider's output" in reply.blocks[0].text
    assert "#### Notes" in reply.blocks[0].text
    assert reply.model == "claude-3-5-sonnet-20240620"
    pytest_output = first[11].blocks[0].text
    assert pytest_output.startswith("============================= test session starts")
    assert pytest_output.endswith("1 passed in 0.01s")
    assert first[9].blocks[0].text == "Commit 1a2b3c4 louder greeting"
    # every message keeps the lines it was read from
    assert first[8].raw == "> Applied edit to app.py  "


def test_tokens_lines_are_model_calls_placed_at_the_reply_they_answer():
    records = _parse(HISTORY)
    calls = [r for r in records if isinstance(r, UsageRecord)]
    by_uuid = {m.uuid: m for m in _messages(records)}
    assert len(calls) == 3
    new = calls[0]
    # aider >= 0.51: "sent" is the whole prompt, cache write and cache hit included
    assert (new.input_uncached, new.cache_write, new.cache_read, new.output) == (12_963 - 11_191 - 1_270, 11_191, 1_270, 105)
    assert by_uuid[new.message_uuid].role == "assistant"
    assert by_uuid[new.message_uuid].api_message_id == new.api_message_id
    assert new.model == "claude-3-5-sonnet-20240620"
    old = calls[1]
    # older lines: "sent" left the cached part out
    assert (old.input_uncached, old.cache_read, old.output) == (194, 9_474, 7)
    assert by_uuid[old.message_uuid].role == "assistant" and old.model == "gpt-4o"
    # a second call with no reply of its own sits at its own output line; 3.9k is rounded
    rounded = calls[2]
    assert rounded.input_uncached == 3_900
    holder = by_uuid[rounded.message_uuid]
    assert holder.role == "tool" and holder.flags.get("usage_rounded") is True
    assert holder.blocks[0].text == "Tokens: 3.9k sent, 0 received."
    assert all(c.api_message_id for c in calls) and len({c.api_message_id for c in calls}) == 3


def test_output_that_prints_a_list_of_models_is_not_a_model_line():
    """aider's own history prints `Models: ['claude-3-opus-20240229', ...]` (a benchmark script's
    output, line 66,084 of the fixture): the session's model stays the one its header named."""
    text = HISTORY.replace(
        "#### hi  ", "#### /run python list_models.py  \n> Models: ['claude-3-opus-20240229', 'gpt-4-0613']  \n\n#### hi  "
    )
    calls = [r for r in _parse(text) if isinstance(r, UsageRecord)]
    assert [c.model for c in calls] == ["claude-3-5-sonnet-20240620", "gpt-4o", "gpt-4o"]


def test_a_grown_history_keeps_the_uuids_of_what_was_there():
    cut = HISTORY.index("> Applied edit")
    before = {m.uuid: m.raw for m in _messages(_parse(HISTORY[:cut]))}
    after = {m.uuid: m.raw for m in _messages(_parse(HISTORY))}
    assert set(before) <= set(after)
    assert all(after[u] == raw for u, raw in before.items())
    assert len(after) - len(before) == 5 + 7  # what was written later: new messages (5 in session 1, 7 in session 2)


def test_usage_figures_with_suffixes_are_read_and_marked_rounded():
    assert aider.usage_of("Tokens: 1.2M sent, 11k cache hit, 2,048 received.") == {
        "sent": 1_200_000,
        "cache hit": 11_000,
        "received": 2_048,
        "rounded": 1,
    }
    assert aider.usage_of("Tokens: 12,566 sent, 84 received. Cost: $0.0019 request")["rounded"] == 0
    assert aider.usage_of("Tokens are nice") is None


def test_text_before_the_first_header_is_a_session_of_its_own():
    records = _parse("-*- mode: fundamental -*-\nthe end of an older reply\n\n> ^C KeyboardInterrupt  \n" + HISTORY)
    infos = [r for r in records if isinstance(r, SessionInfo)]
    assert infos[0].external_id == ".aider.chat.history@preamble" and len(infos) == 3
    preamble = _messages(records, "@preamble")
    assert [(m.role, m.blocks[0].text) for m in preamble] == [
        ("other", "-*- mode: fundamental -*-"),
        ("assistant", "the end of an older reply"),
        ("tool", "^C KeyboardInterrupt"),
    ]


def test_bad_input_is_reported_and_the_rest_imports():
    records = _parse(b"")
    assert [r.reason for r in records if isinstance(r, BadLine)] == ["the file is empty"]
    records = _parse(HISTORY.encode().replace(b"Hello! How", b"Hello\xff How"))
    bad = [r for r in records if isinstance(r, BadLine)]
    assert len(bad) == 1 and "not valid UTF-8" in bad[0].reason
    assert len([r for r in records if isinstance(r, UsageRecord)]) == 3
    records = _parse(bytes(range(256)) * 8)
    assert [r.reason for r in records if isinstance(r, BadLine)] == ["binary file, not an aider chat history"]


def test_sniff(tmp_path):
    named = tmp_path / ".aider.chat.history.md"
    named.write_text(HISTORY)
    assert aider.sniff(named, named.read_bytes()) == 0.95
    other = tmp_path / "history.md"
    other.write_text(HISTORY)
    assert aider.sniff(other, other.read_bytes()) == 0.9
    assert formats.claim(other).name == "aider"
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nsome text\n")
    assert aider.sniff(notes, notes.read_bytes()) == 0.0
    assert aider.sniff(tmp_path, b"") == 0.0


# -- the real history -----------------------------------------------------------------------------

FIXTURE = "aider/Aider-AI__aider__chat-history.md"
_TOKENS = re.compile(r"^> Tokens: ([\d.,]+[kM]?) sent.*?([\d.,]+[kM]?) received", re.M)


def _figure(text: str) -> int:
    text = text.replace(",", "")
    scale = {"k": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return round(float(text.rstrip("kM")) * scale)


@pytest.fixture
def history_path(fixtures_dir) -> Path:
    return fixtures_dir / FIXTURE


def test_the_real_history_against_plain_counting(history_path):
    text = history_path.read_text("utf-8")
    headers = len(re.findall(r"^# aider chat started at ", text, re.M))
    preamble = bool(text.split("# aider chat started at ", 1)[0].strip())
    tokens = _TOKENS.findall(text)
    assert (headers, preamble, len(tokens)) == (1133, True, 839)  # what the file says (grep)

    records = list(aider.parse(open(history_path, "rb"), path=history_path))
    infos = [r for r in records if isinstance(r, SessionInfo)]
    calls = [r for r in records if isinstance(r, UsageRecord)]
    messages = [r for r in records if isinstance(r, MessageRecord)]
    assert len(infos) == headers + preamble
    assert len({i.external_id for i in infos}) == len(infos)
    assert sum(1 for m in messages if m.role == "system") == headers
    assert len(calls) == len(tokens)
    assert sum(c.output for c in calls) == sum(_figure(received) for _sent, received in tokens)
    assert not [r for r in records if isinstance(r, BadLine)]
    assert len({m.uuid for m in messages}) == len(messages)
    # every call sits at a message of its own session
    by_uuid = {m.uuid: m for m in messages}
    assert all(by_uuid[c.message_uuid].session_id == c.api_message_id.rsplit(":call", 1)[0] for c in calls)
    # no line is lost: every non-blank line of the file is in a message (empty '>' lines aside)
    kept = sum(len([line for line in m.raw.split("\n") if line.strip() and line.strip() != ">"]) for m in messages)
    assert kept == sum(1 for line in text.split("\n") if line.strip() and line.strip() != ">")


class _Counting(io.RawIOBase):
    def __init__(self, fh):
        self.fh, self.read_bytes = fh, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = self.fh.readinto(b)
        self.read_bytes += n or 0
        return n


def test_the_real_history_streams_a_session_at_a_time(history_path):
    size = history_path.stat().st_size
    with open(history_path, "rb") as fh:
        stream = _Counting(fh)
        records = aider.parse(io.BufferedReader(stream, 64 * 1024), path=history_path)
        for record in records:
            if isinstance(record, SessionInfo):
                break
        # the first session was complete long before the file was read
        assert stream.read_bytes < size / 2


def test_the_fixture_file_is_claimed_by_aider_only():
    root = shared_fixtures_dir()
    if root is None:
        pytest.skip("../shared/fixtures is absent")
    claims = formats.scores(root / FIXTURE)
    assert [f.name for _, f in claims] == ["aider"]
