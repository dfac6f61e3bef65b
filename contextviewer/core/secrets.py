"""Secrets in transcripts (API keys, tokens, private keys): found and masked at import.

Pure. The masked form keeps the kind and stays valid inside a JSON string (no quotes or
backslashes), so the same function masks the raw line and the decoded blocks."""

from __future__ import annotations

import re

PATTERNS: dict[str, str] = {
    "private_key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    "anthropic_key": r"\bsk-ant-[A-Za-z0-9_-]{20,}",
    "openai_key": r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})",
    "aws_access_key": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "slack_token": r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
    "google_api_key": r"\bAIza[0-9A-Za-z_-]{35}",
    "stripe_key": r"\b(?:sk|rk)_live_[0-9A-Za-z]{20,}",
}
_COMBINED = re.compile("|".join(f"(?P<{k}>{p})" for k, p in PATTERNS.items()), re.DOTALL)


def mask(text: str) -> tuple[str, list[str]]:
    """(text with every secret replaced by "[masked <kind>]", kinds found in order, no repeats)."""
    kinds: list[str] = []

    def replace(match: re.Match) -> str:
        kind = match.lastgroup or "secret"
        if kind not in kinds:
            kinds.append(kind)
        return f"[masked {kind}]"

    if not _COMBINED.search(text):
        return text, kinds
    return _COMBINED.sub(replace, text), kinds


def mask_value(value):
    """mask() through nested lists and dicts (decoded blocks, tool inputs)."""
    if isinstance(value, str):
        return mask(value)[0]
    if isinstance(value, list):
        return [mask_value(v) for v in value]
    if isinstance(value, dict):
        return {k: mask_value(v) for k, v in value.items()}
    return value


# Pieces every pattern above contains: a cheap test before the regular expression. One scan per
# piece over every imported line, so related pieces share a scan (gh[pousr]_, A(KIA|SIA|Iza)).
_HINTS = ("PRIVATE KEY", "sk-", "_live_", "github_pat_", "xox")
_HINT_PATTERNS = (re.compile("gh[pousr]_"), re.compile("A(?:KIA|SIA|Iza)"))


def may_hold_secret(text: str) -> bool:
    """False when `text` cannot hold a secret mask() would find (most text: fast)."""
    return any(hint in text for hint in _HINTS) or any(p.search(text) for p in _HINT_PATTERNS)
