"""What the answerability head reads: numbers citedocs already computes for a question's retrieved chunks.

No new model runs at question time: the features are the reranker's MaxSim scores relative to the
corpus's measured floor (``retrieve/null_level.py``), the dense and BM25 scores of the candidates,
and how much of the question's own words the best candidate and the best single unit (sentence,
list item, code block) of the top candidates contain. The last ones are what the retrieval margin
cannot see: a passage can be *about* the question (high MaxSim) without *saying* the asked detail.
"""

from __future__ import annotations

from collections.abc import Iterable

from citedocs.sentences import split_units
from citedocs.text import content_terms
from citedocs.types import SearchHit

TOP_K = 6  # the /ask default (contract.AskRequest.top_k): the evidence the answer is made from
NAMES = (
    "margin", "second_margin", "gap", "mean_top3_margin", "dense_top", "dense_gap", "bm25_top_share",
    "cover_top", "cover_top3", "cover_unit", "cover_unit_rare", "question_terms",
)


def terms(text: str) -> frozenset[str]:
    """Content words, as the question gate and the extractive backend read them (``text.content_terms``)."""
    return content_terms(text)


def _coverage(asked: set[str], text: str) -> float:
    if not asked:
        return 0.0
    return len(asked & set(terms(text))) / len(asked)


def features(question: str, candidates: list[SearchHit], floor: float) -> list[float]:
    """The feature vector (``NAMES``) of ``question`` given the corpus floor and the reranked
    ``candidates`` (best first): MaxSim over all of them (the margin /ask refuses on), the rest over
    the first ``TOP_K``, the evidence an answer is made from."""
    asked = set(terms(question))
    rerank = sorted((h.stages.rerank_score or 0.0 for h in candidates), reverse=True) or [0.0]
    hits = candidates[:TOP_K]
    rerank += [rerank[-1]] * (3 - len(rerank))
    dense = sorted((h.stages.dense_score or 0.0 for h in hits), reverse=True) or [0.0]
    dense += [dense[-1]] * (2 - len(dense))
    bm25 = [h.stages.bm25_score or 0.0 for h in hits]
    best = max(hits, key=lambda h: h.stages.rerank_score or 0.0) if hits else None
    where = (lambda h: " ".join((h.chunk.title, *h.chunk.heading_path)))
    top3 = sorted(hits, key=lambda h: -(h.stages.rerank_score or 0.0))[:3]
    units = [u.text for h in top3 for u in split_units(h.chunk.text)]
    # rare terms: the question's words that occur in at most one of the retrieved chunks' texts
    df = {t: sum(t in terms(h.chunk.text) for h in hits) for t in asked}
    rare = {t for t, n in df.items() if n <= 1}
    return [
        rerank[0] - floor,
        rerank[1] - floor,
        rerank[0] - rerank[1],
        sum(rerank[:3]) / 3 - floor,
        dense[0],
        dense[0] - dense[1],
        max(bm25, default=0.0) / (sum(bm25) or 1.0),
        _coverage(asked, (where(best) + " " + best.chunk.text) if best else ""),
        _coverage(asked, " ".join(where(h) + " " + h.chunk.text for h in top3)),
        max((_coverage(asked, u) for u in units), default=0.0),
        max((_coverage(rare, u) for u in units), default=0.0) if rare else 1.0,
        float(len(asked)),
    ]


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 0.0
