"""Refuse before generating when the question asks about things the docs never mention.

Two general signals, neither tuned per question:
* a code-like term in the question (``client:hover``, ``--prod``, a backticked option) whose parts
  do not co-occur in any retrieved chunk: the question presupposes an option the docs lack;
* a proper name (capitalised, not sentence-initial) that occurs nowhere in the corpus: the
  question is about a product or service the docs do not cover.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..text import STOPWORDS
from ..types import Chunk
from .support import content_terms, specific_terms

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*")


def _proper_names(question: str) -> list[str]:
    names = []
    for sentence in re.split(r"(?<=[.!?])\s+", re.sub(r"`[^`]*`", " ", question)):
        words = _WORD.findall(sentence)
        for word in words[1:]:
            if word[0].isupper() and len(word) >= 3 and word.lower() not in STOPWORDS and not word.isupper():
                names.append(word)
    return names


def unsupported_question_terms(
    question: str, evidence: list[Chunk], corpus_mentions: Callable[[str], bool]
) -> list[str]:
    """Terms of the question the docs cannot speak to (empty list: nothing suspicious)."""
    missing: list[str] = []
    chunk_terms = [content_terms(f"{c.title} {' '.join(c.heading_path)} {c.text}") for c in evidence]
    for term in sorted(specific_terms(question)):
        parts = {p for p in term.split("_") if len(p) > 1}
        if not parts or all(p.isdigit() for p in parts):
            continue
        normalized = {next(iter(content_terms(p)), p) for p in parts}
        if not any(normalized <= terms for terms in chunk_terms):
            missing.append(term)
    for name in _proper_names(question):
        if not corpus_mentions(name.lower()):
            missing.append(name)
    return missing
