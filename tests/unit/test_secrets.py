import json

from contextviewer.core.secrets import mask, mask_value

ANTHROPIC = "sk-ant-api03-" + "A1b2C3d4E5" * 8
GITHUB = "ghp_" + "x1Y2z3W4v5" * 4
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----"


def test_keys_and_tokens_are_masked_with_their_kind():
    text = f"export ANTHROPIC_API_KEY={ANTHROPIC}\ngit remote set-url origin https://{GITHUB}@github.com/a/b\n{KEY}\nok"
    masked, kinds = mask(text)
    assert ANTHROPIC not in masked and GITHUB not in masked and "b3BlbnNzaC1rZXkt" not in masked
    assert masked.endswith("ok")
    assert kinds == ["anthropic_key", "github_token", "private_key"]
    assert "[masked anthropic_key]" in masked


def test_the_masked_raw_line_is_still_valid_json_with_the_same_shape():
    line = json.dumps({"type": "user", "message": {"content": f"key: {KEY} and {ANTHROPIC}"}})
    masked, kinds = mask(line)
    decoded = json.loads(masked)
    assert decoded["message"]["content"] == "key: [masked private_key] and [masked anthropic_key]"
    assert kinds == ["private_key", "anthropic_key"]


def test_ordinary_text_is_left_alone():
    text = "the task id is sk-1 and AKIA is a prefix; skip-ant-colony"
    assert mask(text) == (text, [])
    assert mask_value({"a": [text, 3]}) == {"a": [text, 3]}
