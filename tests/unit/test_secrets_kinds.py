"""The four kinds of secret mask() learned (AWS secret keys in context, JWTs, URL passwords, PEM
private keys with no END line): found in plain text, in a raw JSON line and in JSON inside JSON,
and never found in what only looks like them (git SHAs, UUIDs, base64 images, public keys)."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextviewer.core.secrets import KINDS, mask, mask_text, mask_value, may_hold_secret

AWS_ID = "AKIA" + "Q3EXAMPLE7ZX5KD2"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vK2pL4m"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
URL_PASSWORD = "Pr0d-Db-p4ss"
PEM_BODY = [
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
    "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW",
]
PEM_NO_END = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY)

# (kind, text holding the secret, the secret's pieces that may not survive, what must stay)
TRUE_POSITIVES = [
    ("aws_secret_key", f"aws_secret_access_key = {AWS_SECRET}", [AWS_SECRET], "aws_secret_access_key = "),
    ("aws_secret_key", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nexport X=1", [AWS_SECRET], "export X=1"),
    ("aws_secret_key", f'{{"SecretAccessKey": "{AWS_SECRET}", "Expiration": 1}}', [AWS_SECRET], '"Expiration": 1'),
    ("aws_secret_key", f"AWS Secret Access Key [None]: {AWS_SECRET}", [AWS_SECRET], "AWS Secret Access Key"),
    ("aws_secret_key", f"secretAccessKey: '{AWS_SECRET}'", [AWS_SECRET], "secretAccessKey"),
    ("aws_secret_key", f"bob,,{AWS_ID},{AWS_SECRET}\n", [AWS_SECRET, AWS_ID], "bob,,"),
    ("aws_secret_key", f"creds {AWS_SECRET} {AWS_ID}", [AWS_SECRET, AWS_ID], "creds "),
    ("jwt", f"Authorization: Bearer {JWT}", [JWT, JWT.split(".")[2]], "Authorization: Bearer "),
    ("jwt", f"token={JWT[: JWT.rindex('.') + 1]} (alg none)", [JWT.split(".")[1]], "(alg none)"),
    ("jwt", f"- Continue toward: curl -H 'Bearer {JWT[:60]}…", [JWT[40:60]], "- Continue toward:"),
    ("aws_secret_key", f"- Continue toward: aws_secret_access_key={AWS_SECRET[:30]}…", [AWS_SECRET[:30]], "key="),
    ("url_password", f"DATABASE_URL=postgres://app:{URL_PASSWORD}@db.internal:5432/app", [URL_PASSWORD], "@db.internal:5432/app"),
    ("url_password", f"redis://:{URL_PASSWORD}@cache:6379/0", [URL_PASSWORD], "redis://:"),
    ("url_password", f"git clone https://bob:{URL_PASSWORD}@github.com/a/b.git", [URL_PASSWORD], "https://bob:"),
    ("url_password", f"amqp://guest:{URL_PASSWORD}%40x@[::1]:5672", [URL_PASSWORD], "amqp://guest:"),
    ("url_password", f"- Continue toward: DATABASE_URL=postgres://app:{URL_PASSWORD}…", [URL_PASSWORD], "postgres://app:"),
    ("private_key", PEM_NO_END, PEM_BODY, ""),
    ("private_key", PEM_NO_END + "\n\n", PEM_BODY, ""),
    ("private_key", PEM_NO_END.replace("\n", " "), PEM_BODY, ""),
    ("private_key", PEM_NO_END.replace("\n", "\r\n") + "\r\n...[truncated]", PEM_BODY, "[truncated]"),
    (
        "private_key",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\n" + PEM_BODY[0],
        [PEM_BODY[0]],
        "",
    ),
    (
        "private_key",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n" + PEM_BODY[1] + "\n=Xy7Q",
        [PEM_BODY[1]],
        "",
    ),
    ("private_key", "cat id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY[2], [PEM_BODY[2]], "cat id_ed25519\n"),
    # cut short by a one-line summary, or by a tool's output limit
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY[0][:40] + "…", [PEM_BODY[0][:40]], "…"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY[1][:30] + "... (truncated)", [PEM_BODY[1][:30]], ".. (truncated)"),
]


def _forms(text: str) -> list[tuple[str, str]]:
    """The text as a tool would write it: plain, in a raw JSON line, in JSON inside a JSON line."""
    return [
        ("plain", text),
        ("json", json.dumps({"type": "user", "message": {"content": text}})),
        ("json in json", json.dumps({"tool_result": json.dumps({"stdout": text})})),
    ]


def _decoded(form: str, masked: str) -> str:
    if form == "json":
        return json.loads(masked)["message"]["content"]
    if form == "json in json":
        return json.loads(json.loads(masked)["tool_result"])["stdout"]
    return masked


@pytest.mark.parametrize(("kind", "text", "pieces", "kept"), TRUE_POSITIVES)
def test_each_new_kind_is_masked_in_text_and_in_raw_json_lines(kind, text, pieces, kept):
    plain, kinds = mask(text)
    assert kind in kinds
    assert f"[masked {kind}]" in plain
    assert kept in plain  # the context around the secret is kept
    for form, written in _forms(text):
        assert may_hold_secret(written), form
        masked, found = mask(written)
        assert kind in found, form
        for piece in pieces:
            assert piece not in masked, (form, piece)
        # The masked raw line is still valid JSON and decodes to the masked text.
        assert _decoded(form, masked) == plain, form
        assert mask(masked) == (masked, []), form  # masking twice changes nothing


def test_the_context_kept_names_the_secret_and_masks_the_access_key_id_too():
    masked, kinds = mask(f"aws_access_key_id={AWS_ID}\naws_secret_access_key={AWS_SECRET}")
    assert masked == "aws_access_key_id=[masked aws_access_key]\naws_secret_access_key=[masked aws_secret_key]"
    assert kinds == ["aws_access_key", "aws_secret_key"]  # in the order they appear
    assert mask(f"postgres://app:{URL_PASSWORD}@db/app")[0] == "postgres://app:[masked url_password]@db/app"
    assert mask(f"see {PEM_NO_END}\n\nthen ran it")[0] == "see [masked private_key]\n\nthen ran it"


def test_a_complete_pem_block_is_masked_whole_and_the_text_after_it_stays():
    key = PEM_NO_END + "\n-----END RSA PRIVATE KEY-----"
    masked, kinds = mask(f"{key}\nand a second line with words")
    assert masked == "[masked private_key]\nand a second line with words" and kinds == ["private_key"]


def test_a_pem_block_quoted_line_by_line_is_masked_whole():
    """A summary carries an earlier one as quoted lines (`  > `): the key's lines stay one block."""
    quoted = "\n".join("  > " + line for line in PEM_NO_END.splitlines())
    masked, kinds = mask(f"Earlier summary:\n{quoted}\n  > and the words after it")
    assert kinds == ["private_key"]
    body = [line for line in PEM_NO_END.splitlines()[1:] if line.strip()]
    assert body and not any(line.strip() in masked for line in body), masked
    assert masked.endswith("  > and the words after it")


SHA = hashlib.sha1(b"x").hexdigest()  # 40 hex characters, like an AWS secret key's length
PNG = base64.b64encode(bytes(range(256)) * 40 + b"eyJ.eyJ AKIA").decode()
FALSE_POSITIVES = [
    f"commit {SHA}\nMerge: {SHA[:7]} {SHA[7:14]}",
    f"aws_secret_access_key = {SHA}",  # 40 characters, but hex: a SHA
    f"session {uuid.uuid4()} and {uuid.uuid4().hex}",
    f'{{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "{PNG}"}}}}',
    f"data:image/png;base64,{PNG}",
    f"aws_secret_access_key = {PNG[:400]}",  # longer than a key: base64 data, not a key
    "export AWS_SECRET_ACCESS_KEY=$(aws configure get aws_secret_access_key)",
    "http://localhost:8000/path@v2 https://user@github.com/a/b git@github.com:o/r.git ssh://git@host:22/r",
    "postgres://app:${DB_PASSWORD}@db/app mysql://root:$PASS@h redis://u:<password>@h x://a:***@h",
    "see https://example.com/a:b@c is not a login",
    "-----BEGIN PUBLIC KEY-----\n" + PEM_BODY[0] + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n" + PEM_BODY[1],
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl dev@host",
    "version 1.2.3 and eyJhbGciOi (half a token) and a.b.c",
    "the secret is in the vault; never print the secret access key",
]


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_what_only_looks_like_a_secret_is_left_alone(text):
    for _form, written in _forms(text):
        assert mask(written) == (written, [])


def test_a_sha_next_to_an_access_key_id_is_not_taken_for_its_secret_key():
    assert mask(f"{AWS_ID} {SHA}") == (f"[masked aws_access_key] {SHA}", ["aws_access_key"])


def test_mask_value_and_mask_text_mask_through_the_same_function():
    value = {"cmd": f"psql postgres://a:{URL_PASSWORD}@h", "n": 3, "list": [JWT, None], "keep": "ok"}
    masked = mask_value(value)
    assert masked == {"cmd": "psql postgres://a:[masked url_password]@h", "n": 3, "list": ["[masked jwt]", None], "keep": "ok"}
    assert mask_text(None) == "" and mask_text("plain") == "plain"
    assert mask_text(f"Title with {AWS_ID}") == "Title with [masked aws_access_key]"


def test_every_kind_is_listed():
    assert {"aws_secret_key", "jwt", "url_password", "private_key"} <= set(KINDS)


SECRETS = [AWS_ID, JWT, f"aws_secret_access_key={AWS_SECRET}", f"https://u:{URL_PASSWORD}@h", PEM_NO_END,
           "sk-ant-api03-" + "A1b2C3d4E5" * 8]


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(max_size=60),
    secret=st.sampled_from(SECRETS),
    after=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60),
)
def test_masking_is_idempotent_and_the_pre_test_never_hides_a_secret(before, secret, after):
    text = before + " " + secret + "\n" + after
    assert may_hold_secret(text)
    masked, kinds = mask(text)
    assert kinds
    assert mask(masked)[0] == masked
    line = json.dumps({"t": text})
    masked_line = mask(line)[0]
    json.loads(masked_line)  # still valid JSON
    assert mask(masked_line)[0] == masked_line
