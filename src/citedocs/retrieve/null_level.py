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
per corpus version (about 20 retrievals) and kept in memory.
"""

from __future__ import annotations

import statistics
import threading
from typing import Protocol

from .hybrid import RetrievalConfig, RetrievalResult

NULL_PROBES = (
    "How long should I boil an egg for a soft yolk?",
    "What is the capital of Australia?",
    "How do I change a flat tire on a bicycle?",
    "What are the opening hours of the public library on Sundays?",
    "How many calories are in a banana?",
    "Which football team has won the most championships?",
    "How do I file my income tax return online?",
    "What is the best time of year to plant tomatoes?",
    "How do I reset my home router's admin password?",
    "Can I bring my dog on the train?",
    "How do I tune a guitar to drop D?",
    "What is the difference between a virus and a bacterium?",
    "How do I remove a red wine stain from a carpet?",
    "Which laptop has the longest battery life?",
    "What time zone is used in Tokyo?",
    "How do I replace the battery in my car key fob?",
    "What are the visa requirements for visiting Canada?",
    "How do I knit a scarf as a beginner?",
    "How do I get rid of ants in the kitchen?",
    "How do I make a sourdough starter from scratch?",
)


class Retriever(Protocol):
    def retrieve(self, corpus: str, query: str, top_k: int, config: RetrievalConfig) -> RetrievalResult: ...


class NullLevels:
    """Each corpus version's floor, measured on first use."""

    def __init__(self, retriever: Retriever) -> None:
        self._retriever = retriever
        self._levels: dict[tuple[str, str], float] = {}
        # One measurement per corpus version, even under concurrent first questions; one lock per
        # corpus version, so that a corpus being measured (up to a second) holds up only its own
        # first questions, not another corpus's.
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def level(self, corpus: str, version: str) -> float:
        key = (corpus, version)
        with self._locks_lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._levels:
                scores = [self._confidence(corpus, probe) for probe in NULL_PROBES]
                self._levels[key] = statistics.median(scores)
            return self._levels[key]

    def _confidence(self, corpus: str, probe: str) -> float:
        result = self._retriever.retrieve(corpus, probe, 1, RetrievalConfig())
        return result.confidence if result.hits else 0.0
