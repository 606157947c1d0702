"""A corpus's floor: how closely questions about nothing in it still match it.

The reranker's best MaxSim has no fixed scale across corpora. A large or wordy corpus matches any
question better than a small terse one: the same off-topic questions reach a median best MaxSim of
0.354 against the Python 3.11 docs (25,425 chunks) and 0.275 against Starlette's (567). One absolute
threshold, fitted on one corpus, therefore refuses answerable questions on a small corpus and
answers unanswerable ones on a large one. The refusal threshold is applied to a question's margin
above its corpus's floor instead (``Thresholds.min_retrieval_margin``); measured in
``docs/decisions/scripts/refusal_features.py``.

The floor is measured, never fitted: the median best MaxSim of ``NULL_PROBES``, everyday questions
no software documentation answers, retrieved exactly as a user's question is. It is computed once
per corpus version and language (about 20 retrievals each) and kept in memory.

Probes are asked in the question's language, where ``null_probes.py`` has them (else in English),
and in the corpus's own language (told by the chunks the English probes retrieve) when its
confidence is of the same kind: off-topic Russian questions match Russian docs far better than
off-topic English ones do, so an English-only floor answers them. Where the reranker cannot read a
language, confidence is the share of the question's terms one candidate holds
(``hybrid.term_coverage``), and its floor is measured the same way. The floor is the higher of the
two, except where the confidence is a multilingual model's similarity ("dense") and the probes are in
the question's own language: those cross the same language gap as the question, while same-language
pairs score higher, so an English question over Russian docs is measured by the English probes alone.
An English question over English docs is measured exactly as before.
"""

from __future__ import annotations

import statistics
import threading
from typing import Protocol

from ..language import detect_language
from .hybrid import RetrievalConfig, RetrievalResult
from .null_probes import NULL_PROBES

_LANGUAGE_SAMPLE = 8  # the English probes' best chunks whose text tells the corpus's language


class Retriever(Protocol):
    def retrieve(self, corpus: str, query: str, top_k: int, config: RetrievalConfig) -> RetrievalResult: ...


class NullLevels:
    """Each corpus version's floor, measured on first use."""

    def __init__(self, retriever: Retriever) -> None:
        self._retriever = retriever
        self._levels: dict[tuple[str, str, str], float] = {}
        # One measurement per corpus version, even under concurrent first questions; one lock per
        # corpus version, so that a corpus being measured (up to a second) holds up only its own
        # first questions, not another corpus's.
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._locks_lock = threading.Lock()

        self._corpus_languages: dict[tuple[str, str], str] = {}
        self._kinds: dict[tuple[str, str, str], str] = {}

    def level(self, corpus: str, version: str, question_language: str = "en") -> float:
        """The corpus's floor for a question in ``question_language``."""
        asked = question_language if question_language in NULL_PROBES else "en"
        levels = [self._level(corpus, version, asked)]
        own = self._corpus_language(corpus, version)
        if own in NULL_PROBES and own != asked:
            level = self._level(corpus, version, own)
            kind = self._kinds[(corpus, version, asked)]
            # a multilingual model's probes in the question's own language cross the same language gap as
            # the question (same-language pairs score higher): the corpus-language floor would refuse it
            across = kind == "dense" and asked == question_language
            if self._kinds[(corpus, version, own)] == kind and not across:
                levels.append(level)
        return max(levels)

    def _corpus_language(self, corpus: str, version: str) -> str:
        self._level(corpus, version, "en")  # measured first: its retrievals show the corpus's text
        return self._corpus_languages[(corpus, version)]

    def _level(self, corpus: str, version: str, language: str) -> float:
        key = (corpus, version, language)
        with self._locks_lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._levels:
                results = [self._retriever.retrieve(corpus, probe, 1, RetrievalConfig()) for probe in NULL_PROBES[language]]
                self._levels[key] = statistics.median(r.confidence if r.hits else 0.0 for r in results)
                self._kinds[key] = results[0].confidence_kind
                if language == "en":
                    sample = " ".join(r.hits[0].chunk.text[:500] for r in results if r.hits)[: 500 * _LANGUAGE_SAMPLE]
                    self._corpus_languages[(corpus, version)] = detect_language(sample) if sample else "en"
            return self._levels[key]
