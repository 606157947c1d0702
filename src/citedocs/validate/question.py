"""Refuse before generating when the question asks about things the docs never mention.

Three general signals, none tuned per question:
* code the user quotes (a backticked span or a quoted value) whose token sequence appears in no
  retrieved chunk: the user names a setting the docs do not have;
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
_QUOTED = re.compile(r"`([^`]+)`|\"([^\"]{1,60})\"")
_PART = re.compile(r"[a-z0-9]+")


def _contains_sequence(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _quoted_code_missing(question: str, evidence: list[Chunk]) -> list[str]:
    """Quoted code whose parts, in order, appear in no retrieved chunk (`Astro.cookies.get()` matches
    ``Astro.cookies.get(key)``; `graphql: true` needs those two tokens side by side)."""
    sequences = [_PART.findall(c.text.lower()) for c in evidence]
    missing = []
    for match in _QUOTED.finditer(question):
        span = match.group(1) or match.group(2)
        parts = _PART.findall(span.lower())
        if parts and not any(_contains_sequence(seq, parts) for seq in sequences):
            missing.append(span)
    return missing


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
    missing: list[str] = _quoted_code_missing(question, evidence)
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
