"""Opt-in redaction of what users type before a trace stores it (setting ``redact_questions``).

Three kinds of personal or secret data are replaced by a marker: e-mail addresses (``[email]``),
API keys and tokens (``[token]``: bearer tokens, JWTs, keys with a well-known prefix such as
``sk-``, ``ghp_``, ``xoxb-``, ``AKIA``, citedocs' own ``cd_``/``cdp_``/``cda_``, and any run of 24 or
more letters, digits, ``-`` and ``_`` that mixes letters and digits) and long digit runs
(``[number]``: nine or more digits, spaces or dashes between them allowed: card, phone and account
numbers; dates and versions are shorter or dotted). Only the stored copy is redacted: the answer
is computed from the question as asked.
"""

from __future__ import annotations

import re

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_TOKENS = (
    re.compile(r"(?i)\bbearer\s+[\w.~+/=-]+"),
    re.compile(r"\beyJ[\w-]+\.[\w-]+\.[\w-]*"),  # a JWT: base64url JSON header, payload, signature
    re.compile(r"\b(?:sk|pk|rk)-[\w-]{12,}|\b(?:ghp|gho|ghs|ghu|github_pat|glpat|xox[abpr]|cd[pa]?)[_-][\w-]{8,}|\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{24,}(?![\w-])"),
)
_DIGITS = re.compile(r"(?<![\w.])\d(?:[ -]?\d){8,}(?![\w.])")


def redact(text: str) -> str:
    """``text`` with e-mail addresses, API keys/tokens and long digit runs replaced by markers."""
    text = _EMAIL.sub("[email]", text)
    for pattern in _TOKENS:
        text = pattern.sub("[token]", text)
    return _DIGITS.sub("[number]", text)


def redact_trace(payload: dict) -> None:
    """Redact, in place, every field of a trace that holds the user's own words."""
    for field in ("question", "rewritten_query", "refusal_reason", "expansion"):
        if isinstance(payload.get(field), str):
            payload[field] = redact(payload[field])
    if payload.get("missing_terms"):
        payload["missing_terms"] = [redact(t) for t in payload["missing_terms"]]
    for turn in payload.get("history") or ():
        if isinstance(turn, dict) and isinstance(turn.get("content"), str):
            turn["content"] = redact(turn["content"])
    payload["redacted"] = True
