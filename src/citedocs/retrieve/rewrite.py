"""Turning a follow-up question into a standalone retrieval query."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from ..text import query_terms

# A follow-up that opens by continuing the conversation ("and ...", "what if ...") or points back
# at something said before ("it", "that", "those") leaves its topic in the previous turn.
_CONTINUATION_OPENERS = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|nice|great|thanks|cool|right)\W+)*(?:and|but|also|or|so|then|what about|how about|what if)\b",
    re.IGNORECASE,
)
_BACK_REFERENCES = frozenset(
    "it its it's itself that those these they them their there one ones same such former latter".split()
)
_SHORT_QUESTION_TERMS = 6


class HistoryTurn(Protocol):
    role: str
    content: str


def is_elliptical(question: str) -> bool:
    """Whether a follow-up needs the previous turn to make sense on its own."""
    if len(query_terms(question)) < _SHORT_QUESTION_TERMS or _CONTINUATION_OPENERS.match(question):
        return True
    words = re.findall(r"[a-z']+", question.lower())
    return any(w in _BACK_REFERENCES for w in words)


def standalone_query_fallback(question: str, history: Sequence[HistoryTurn]) -> str:
    """Deterministic rewrite used when no LLM is available: an elliptical follow-up gets the
    previous user question prepended; a self-contained one is left alone so it can change topic."""
    previous = [t.content for t in history if t.role == "user"]
    if not previous or not is_elliptical(question):
        return question
    return f"{previous[-1]} {question}"
