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
# the same pointers back in the languages citedocs answers in (ru, es, de, fr, pt), and the
# Chinese and Japanese ones, written without spaces
_OTHER_BACK_REFERENCES = frozenset(
    """это этот эта эти его её ее их он она оно они там такой такая такие eso esto ese esa ellos ellas allí
    das dies diese dieser es sie dort ça cela celui celle ceux ils elles isso isto esse essa eles elas lá""".split()
)
_CJK_BACK_REFERENCES = ("它", "这个", "那个", "这些", "那些", "其", "それ", "これ", "あれ", "その", "この")
_SHORT_QUESTION_TERMS = 6


class HistoryTurn(Protocol):
    role: str
    content: str


def is_elliptical(question: str) -> bool:
    """Whether a follow-up needs the previous turn to make sense on its own."""
    if len(query_terms(question)) < _SHORT_QUESTION_TERMS or _CONTINUATION_OPENERS.match(question):
        return True
    words = re.findall(r"[a-z']+", question.lower())
    if any(w in _BACK_REFERENCES for w in words):
        return True
    if question.isascii():
        return False
    other = re.findall(r"[^\W\d_]+", question.casefold())
    return any(w in _OTHER_BACK_REFERENCES for w in other) or any(r in question for r in _CJK_BACK_REFERENCES)


def standalone_query_fallback(question: str, history: Sequence[HistoryTurn]) -> str:
    """Deterministic rewrite used when no LLM is available: an elliptical follow-up gets the
    previous user question prepended; a self-contained one is left alone so it can change topic."""
    previous = [t.content for t in history if t.role == "user"]
    if not previous or not is_elliptical(question):
        return question
    return f"{previous[-1]} {question}"
