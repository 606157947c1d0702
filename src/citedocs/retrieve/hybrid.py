"""Hybrid retrieval: BM25 and dense candidates, reciprocal rank fusion, then an optional rerank."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..models.embedding_cache import remember_question
from ..models.encoders import LATE_INTERACTION_TOKENS, BiEncoder
from ..index.store import Store
from ..language import detect_language
from ..text import content_terms, query_terms
from ..types import Chunk, ChunkId, SearchHit, StageScores

RRF_K = 60  # the constant from Cormack et al.; it damps the weight of top ranks
# multilingual-e5's cosine similarities lie in a narrow band (about 0.75 for a question about nothing in
# the docs, 0.85 for a matching passage); scaled by this, their margin above a corpus's floor compares
# with the one global refusal margin fitted on MaxSim (measured in docs/how-to/languages.md)
DENSE_CONFIDENCE_SCALE = 3.0
# the share of the candidates in another language than the question's above which they count as a site's
# translations in one corpus (not a page or two misread as another language)
_OTHER_LANGUAGE_SHARE = 0.25


@dataclass(frozen=True)
class QueryEncoding:
    """One forward pass over the question serves both the dense stage and the reranker."""

    text: str
    vector: np.ndarray  # unit sentence embedding
    tokens: np.ndarray  # unit token vectors (late interaction)


class Reranker(Protocol):
    name: str

    def score(self, query: QueryEncoding, chunks: list[Chunk], corpus: str) -> list[float]: ...


@dataclass(frozen=True)
class RetrievalConfig:
    mode: str = "hybrid"  # "bm25" | "dense" | "hybrid"
    rerank: bool = True
    candidates: int = 50  # per first-stage retriever
    rerank_depth: int = 20  # fused candidates passed to the reranker


@dataclass
class RetrievalResult:
    query: str
    hits: list[SearchHit]
    confidence: float  # best rerank (MaxSim) similarity; what the refusal threshold is calibrated on
    stage_ms: dict[str, float] = field(default_factory=dict)
    # "maxsim"; where the reranker cannot read the question's or the passages' language, "dense" (the
    # multilingual dense model's best similarity, scaled) where that model reads them, else "terms": the
    # largest share of the question's content terms that one candidate holds (a floor is compared on the same kind)
    confidence_kind: str = "maxsim"
    # the question's language and the pages', where no model of the corpus reads both and they differ:
    # then nothing but shared identifiers ties the question to a passage, and it must not be answered
    unread_language: tuple[str, str] | None = None


def term_coverage(query: str, chunks: list[Chunk]) -> float:
    """The largest share of the question's content terms that one chunk (title, headings, text) holds."""
    wanted = content_terms(query)
    if not wanted:
        return 0.0
    return max((len(wanted & content_terms(f"{c.title} {' '.join(c.heading_path)} {c.text}")) / len(wanted) for c in chunks), default=0.0)


def _mixed(chunks: list[Chunk], language: str) -> bool:
    """Whether the candidates are pages in the question's language beside a site's pages in another."""
    other = sum(1 for c in chunks if c.language and c.language != language)
    return any(c.language == language for c in chunks) and other >= _OTHER_LANGUAGE_SHARE * len(chunks)


def reciprocal_rank_fusion(rankings: list[list[ChunkId]], k: int = RRF_K) -> dict[ChunkId, float]:
    scores: dict[ChunkId, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
    return scores


@dataclass(frozen=True)
class CorpusModels:
    """The models a corpus's stored vectors came from (its pipeline string says), so that its queries
    are embedded alike whatever this process's settings are now."""

    query: BiEncoder  # the bi-encoder runtime of its MiniLM vectors (the reranker's tokens; dense too when ``dense`` is None)
    dense: BiEncoder | None = None  # the model of its dense vectors, when another than ``query``
    language: str = "en"  # the language most of its pages are written in (ingest records it)


class HybridRetriever:
    def __init__(
        self,
        store: Store,
        encoder: BiEncoder,
        reranker: Reranker | None = None,
        corpus_models: Callable[[str], CorpusModels] | None = None,
    ) -> None:
        self.store = store
        self.encoder = encoder
        self.reranker = reranker
        self.corpus_models = corpus_models or (lambda corpus: CorpusModels(encoder))

    def bm25(self, corpus: str, query: str, limit: int) -> list[tuple[ChunkId, float]]:
        return self.store.lexical_search(corpus, query_terms(query), limit)

    def encode_query(self, query: str, corpus: str | None = None) -> QueryEncoding:
        """With ``corpus``, by the runtime that embedded that corpus (``corpus_models``), so the
        query's vectors compare with the stored ones whatever this process's own runtime is."""
        return self._encode(query, self.encoder if corpus is None else self.corpus_models(corpus).query)

    def _encode(self, query: str, encoder: BiEncoder) -> QueryEncoding:
        vector, tokens = encoder.encode_with_tokens([query], LATE_INTERACTION_TOKENS)[0]
        if encoder is self.encoder:
            remember_question(query, vector)  # the extractive backend scores sentences against the same vector
        return QueryEncoding(query, vector, tokens)

    def dense(self, corpus: str, query_vector: np.ndarray, limit: int) -> list[tuple[ChunkId, float]]:
        return self.store.dense_search(corpus, query_vector, limit)

    def _expansion_rankings(self, corpus: str, passage: str, limit: int, dense_model: BiEncoder) -> list[list[ChunkId]]:
        vector = dense_model.encode([passage])[0]
        return [[cid for cid, _ in self.bm25(corpus, passage, limit)], [cid for cid, _ in self.dense(corpus, vector, limit)]]

    def retrieve(
        self, corpus: str, query: str, k: int, config: RetrievalConfig, expansion: str | None = None
    ) -> RetrievalResult:
        """``expansion``: a hypothetical passage (``expand.py``) whose own rankings join the fusion;
        the reranker and ``confidence`` still read ``query`` alone."""
        timings: dict[str, float] = {}
        stages: dict[ChunkId, dict] = {}

        def timed(stage: str, fn, *args):
            started = time.perf_counter()
            out = fn(*args)
            timings[stage] = (time.perf_counter() - started) * 1000
            return out

        reranking = config.rerank and self.reranker is not None
        models = self.corpus_models(corpus)  # one lookup of the corpus's pipeline a query
        # a model votes on the order only in a language it reads (MiniLM: English; multilingual-e5:
        # about a hundred); elsewhere its scores are kept for the trace, and BM25's terms decide the order
        language = detect_language(query)
        dense_model = models.dense or models.query
        dense_reads = language in dense_model.languages
        encoding = None
        if config.mode in ("dense", "hybrid") or reranking:
            encoding = timed("encode", self._encode, query, models.query)
        rankings: list[list[ChunkId]] = []
        if config.mode in ("bm25", "hybrid"):
            lexical = timed("bm25", self.bm25, corpus, query, config.candidates)
            for rank, (cid, score) in enumerate(lexical, start=1):
                stages.setdefault(cid, {}).update(bm25_rank=rank, bm25_score=score)
            rankings.append([cid for cid, _ in lexical])
        semantic: list[tuple[ChunkId, float]] = []
        if config.mode in ("dense", "hybrid"):
            vector = encoding.vector if models.dense is None else timed("encode_dense", models.dense.encode_query, [query])[0]
            semantic = timed("dense", self.dense, corpus, vector, config.candidates)
            for rank, (cid, score) in enumerate(semantic, start=1):
                stages.setdefault(cid, {}).update(dense_rank=rank, dense_score=score)
            if dense_reads or not any(rankings):  # no term matched (a question in another language): its only vote
                rankings.append([cid for cid, _ in semantic])

        if expansion and config.mode == "hybrid":
            rankings += timed("expansion", self._expansion_rankings, corpus, expansion, config.candidates, dense_model)

        fused = timed("fuse", reciprocal_rank_fusion, rankings)
        ordered = sorted(fused, key=lambda cid: -fused[cid])
        for cid in ordered:
            stages.setdefault(cid, {})["fused_score"] = fused[cid]  # a chunk only the expansion found

        depth = max(config.rerank_depth, k) if reranking else k
        chunks = self.store.get_chunks(corpus, ordered[:depth])
        if _mixed(chunks, language):
            # pages in several languages: those in the question's are one more vote (docs/how-to/languages.md)
            rankings.append([c.id for c in chunks if c.language == language])
            fused = reciprocal_rank_fusion(rankings)
        final_scores = [fused[c.id] for c in chunks]
        confidence = final_scores[0] if final_scores else 0.0
        # MiniLM's MaxSim is the reranker's vote and the confidence only where it reads the question and the pages
        rerank_reads = language in models.query.languages and models.language in models.query.languages
        # else multilingual-e5's similarity, where it reads both; else the share of the question's terms
        dense_confidence = not rerank_reads and models.dense is not None and dense_reads and models.language in dense_model.languages
        kind = "maxsim"
        if reranking and chunks:
            rerank_scores = timed("rerank", self.reranker.score, encoding, chunks, corpus)
            for chunk, score in zip(chunks, rerank_scores):
                stages[chunk.id]["rerank_score"] = score
            # The reranker is one more vote, not the last word: its ranking is fused with the first
            # stages' (MaxSim alone over-trusts chunks that echo the question's words; see README).
            reranked = [c.id for _, c in sorted(zip(rerank_scores, chunks), key=lambda pair: -pair[0])]
            final = reciprocal_rank_fusion([*rankings, reranked] if rerank_reads else rankings)
            final_scores = [final[c.id] for c in chunks]
            if rerank_reads:
                confidence = max(rerank_scores)
            elif dense_confidence and semantic:
                confidence, kind = DENSE_CONFIDENCE_SCALE * float(semantic[0][1]), "dense"
            else:
                confidence, kind = term_coverage(query, chunks), "terms"
        ranked = sorted(zip(chunks, final_scores), key=lambda pair: -pair[1])[:k]
        hits = [SearchHit(chunk=c, score=float(s), stages=StageScores(**stages[c.id])) for c, s in ranked]
        read = rerank_reads or dense_confidence or language == models.language
        return RetrievalResult(
            query=query, hits=hits, confidence=float(confidence), stage_ms=timings, confidence_kind=kind,
            unread_language=None if read else (language, models.language),
        )
