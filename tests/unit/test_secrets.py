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


# One example of every kind mask() knows; the cheap pre-test may never hide one of them.
EXAMPLES = {
    "private_key": KEY,
    "anthropic_key": ANTHROPIC,
    "openai_key": "sk-proj-" + "Q9w8E7r6T5" * 4,
    "github_token": GITHUB,
    "github_pat": "github_pat_" + "A1b2C3d4E5" * 6,
    "github_oauth": "gho_" + "x1Y2z3W4v5" * 4,
    "github_server": "ghs_" + "x1Y2z3W4v5" * 4,
    "aws_access_key": "AKIA" + "ABCDEFGHIJKLMNOP",
    "aws_session_key": "ASIA" + "QRSTUVWXYZ234567",
    "slack_token": "xoxb-" + "1234567890-abcdef",
    "google_api_key": "AIza" + "Sy" + "B1c2D3e4F5" * 3 + "g6H",
    "stripe_key": "rk_live_" + "Z9y8X7w6V5" * 3,
}


def test_every_kind_of_secret_passes_the_cheap_pre_test_and_is_masked():
    from contextviewer.core.secrets import PATTERNS, may_hold_secret

    for name, secret in EXAMPLES.items():
        line = json.dumps({"message": {"content": f"before {secret} after"}})
        assert may_hold_secret(line), name
        masked, kinds = mask(line)
        assert secret not in masked and kinds and kinds[0] in PATTERNS, name
    assert not may_hold_secret("an ordinary line about tasks, keys and github")
