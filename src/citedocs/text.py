"""Search terms for lexical retrieval, shared by indexing and querying.

Docs questions are full of code identifiers (``import.meta.env``, ``astro:assets``, ``--host``,
``minimumFailingSeverity``). Each identifier is indexed three ways so that any spelling a user
types still matches: its parts (``import``, ``meta``, ``env``), a compound term joining the
parts (``import_meta_env``), and camelCase pieces (``minimum failing severity``).

The same tokenizer gives the content terms (stopwords dropped, lightly stemmed) that the extractive
backend, the question gate and the support check compare.
"""

from __future__ import annotations

import re
from functools import lru_cache

_RAW = re.compile(r"-{0,2}[\w$@][\w$@.:/\-]*")
_PART = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

STOPWORDS = frozenset(
    """a an and are as at be but by can could do does for from has have how i if in into is it its
    me my of on or our should so than that the their them then there these they this to was we what
    when where which while who why will with would you your use using want need get way""".split()
)


def search_terms(text: str) -> list[str]:
    terms: list[str] = []
    for raw in _RAW.findall(text):
        parts = [p.lower() for p in _PART.findall(raw)]
        if not parts:
            continue
        terms.extend(parts)
        if len(parts) > 1:
            terms.append("_".join(parts))
        for part in _PART.findall(raw):
            pieces = _CAMEL.findall(part)
            if len(pieces) > 1:
                terms.extend(p.lower() for p in pieces)
    return terms


def query_terms(text: str) -> list[str]:
    """Distinct search terms of a question, stopwords removed (unless nothing else is left)."""
    terms = list(dict.fromkeys(search_terms(text)))
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


def fts_match_expression(terms: list[str], match_all: bool = False) -> str:
    """An FTS5 MATCH expression over quoted terms (quoting keeps FTS5 syntax out of user input)."""
    return (" AND " if match_all else " OR ").join(f'"{t}"' for t in terms)


def normalize_term(term: str) -> str:
    """A light stemmer, so 'loads' matches 'load' and 'loading' matches 'load'."""
    if len(term) > 6 and term.endswith("ing"):
        return term[:-3]
    if len(term) > 5 and term.endswith("ed"):
        return term[:-2]
    if len(term) > 4 and term.endswith("s") and not term.endswith("ss"):
        return term[:-1]
    return term


@lru_cache(maxsize=16_384)
def content_terms(text: str) -> frozenset[str]:
    """Remembered by text: the same chunk and sentence texts are tokenised by the extractive backend,
    the question gate and every support check of a request, and again whenever they are retrieved."""
    return frozenset(normalize_term(t) for t in search_terms(text) if t not in STOPWORDS and len(t) > 1)
