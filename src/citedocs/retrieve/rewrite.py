"""Turning a follow-up question into a standalone retrieval query."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..text import query_terms


class HistoryTurn(Protocol):
    role: str
    content: str


def standalone_query_fallback(question: str, history: Sequence[HistoryTurn]) -> str:
    """Deterministic rewrite used when no LLM is available.

    An elliptical follow-up ("what about on the client?") lacks the topic, which lives in the
    previous user turn, so the previous user question is prepended. A follow-up that already
    names enough content terms is left alone so it can change topic.
    """
    previous = [t.content for t in history if t.role == "user"]
    if not previous or len(query_terms(question)) >= 6:
        return question
    return f"{previous[-1]} {question}"
