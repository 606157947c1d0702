"""Opt-in redaction of what users type before a trace or a feedback comment is stored (setting
``redact_questions``).

Four kinds of personal or secret data are replaced by a marker: IBANs (``[iban]``: the country's
layout and the ISO 13616 check digits hold, checked by python-stdnum; grouped by spaces or
compact, any case), e-mail addresses (``[email]``),
API keys and tokens (``[token]``: bearer tokens, JWTs, keys with a well-known prefix such as
``sk-``, ``ghp_``, ``xoxb-``, ``AKIA``, citedocs' own ``cd_``/``cdp_``/``cda_``, and any run of 24 or
more letters, digits, ``-`` and ``_`` that mixes letters and digits) and long digit runs
(``[number]``: nine or more digits, spaces or dashes between them allowed: card, phone and account
numbers; dates and versions are shorter or dotted). Only the stored copy is redacted: the answer
is computed from, and shown with, the question as asked.
"""

from __future__ import annotations

import re

from stdnum import iban as _iban

# an IBAN candidate: country, check digits, then 11 to 30 letters or digits, in groups or not; its
# longest prefix that ends a word and passes python-stdnum's check is the IBAN
_IBAN_CANDIDATE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}(?:[ -]?[A-Za-z0-9]){11,30}")
_IBAN_SHORTEST = 15  # Norway's
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_TOKEN = re.compile(
    "|".join(
        (
            r"(?i:\bbearer\s+[\w.~+/=-]+)",
            r"\beyJ[\w-]+\.[\w-]+\.[\w-]*",  # a JWT: base64url JSON header, payload, signature
            r"\b(?:sk|pk|rk)-[\w-]{12,}",
            r"\b(?:ghp|gho|ghs|ghu|github_pat|glpat|xox[abpr]|cd[pa]?)[_-][\w-]{8,}",
            r"\bAKIA[0-9A-Z]{16}\b",
            r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{24,}(?![\w-])",
        )
    )
)
_DIGITS = re.compile(r"(?<![\w.])\d(?:[ -]?\d){8,}(?![\w.])")
_KINDS = ((_EMAIL, "[email]"), (_TOKEN, "[token]"), (_DIGITS, "[number]"))


def _ibans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each valid IBAN in ``text``."""
    found = []
    for match in _IBAN_CANDIDATE.finditer(text):
        start = match.start()
        for end in range(match.end(), start + _IBAN_SHORTEST - 1, -1):
            ends_word = end == len(text) or not text[end].isalnum()
            if ends_word and text[end - 1].isalnum() and _iban.is_valid(text[start:end]):
                found.append((start, end))
                break
    return found


def _redact_ibans(text: str) -> str:
    for start, end in reversed(_ibans(text)):
        text = text[:start] + "[iban]" + text[end:]
    return text


def redact(text: str) -> str:
    """``text`` with IBANs, e-mail addresses, API keys/tokens and long digit runs replaced by markers."""
    text = _redact_ibans(text)
    for pattern, marker in _KINDS:
        text = pattern.sub(marker, text)
    return text


def _secrets(texts: list[str]) -> list[tuple[str, str]]:
    """(matched text, marker) of everything ``redact`` replaces in these texts."""
    found = []
    for text in texts:
        found += [(text[start:end], "[iban]") for start, end in _ibans(text)]
        text = _redact_ibans(text)
        for pattern, marker in _KINDS:
            found += [(m.group(0), marker) for m in pattern.finditer(text)]
            text = pattern.sub(marker, text)
    return found


def redact_trace(payload: dict) -> None:
    """Redact, in place, every field of a trace that holds the user's own words. The question gate may
    have quoted a piece of a secret (``jane.doe`` of an address) as a term the docs never mention:
    such a term is replaced by its secret's marker, in the terms and in the refusal reason."""
    turns = [t for t in payload.get("history") or () if isinstance(t, dict) and isinstance(t.get("content"), str)]
    secrets = _secrets([str(payload.get("question") or ""), *(t["content"] for t in turns)])

    def hide(term: str) -> str:
        return next((marker for secret, marker in secrets if term in secret), redact(term))

    terms = [*(payload.get("missing_terms") or []), *(payload.get("unretrieved_terms") or [])]
    hidden = [hide(t) for t in terms]
    # a refusal's reason and text name the terms; an answer's text is the docs' own words
    quoting = ("refusal_reason", "answer") if payload.get("refused") else ("refusal_reason",)
    for field in quoting:
        if isinstance(payload.get(field), str):
            for term, marker in sorted(zip(terms, hidden), key=lambda pair: -len(pair[0])):
                payload[field] = payload[field].replace(term, marker)
    for key in ("missing_terms", "unretrieved_terms"):  # the gate's two lists, in that order
        named = len(payload.get(key) or [])
        if named:
            payload[key], hidden = hidden[:named], hidden[named:]
    for field in ("question", "rewritten_query", "expansion", *quoting):
        if isinstance(payload.get(field), str):
            payload[field] = redact(payload[field])
    for turn in turns:
        turn["content"] = redact(turn["content"])
    payload["redacted"] = True
