"""The reranker's stored token vectors: int8 by default, or (``token_format = "pool3-q2"``) pooled by 3
at 2 bits a dimension, <= 8 KB a chunk, ranking like the full-precision vectors they came from
(docs/benchmarks/index-size.md)."""

from __future__ import annotations

import numpy as np
import pytest

from citedocs import config
from citedocs.index.token_codec import INT8, POOL_FACTOR, TOKEN_FORMATS, PackedTokens, pool
from citedocs.retrieve.hybrid import HybridRetriever, RetrievalConfig
from citedocs.retrieve.rerank import LateInteractionReranker
from citedocs.service import Services

from conftest import ASTRO_BASE_URL

DIM = 384
CORPUS = "small"


def unit_rows(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_full_chunk_of_tokens_packs_into_at_most_8_kb():
    packed = PackedTokens.pack(unit_rows(126))  # the most tokens a chunk keeps (LATE_INTERACTION_TOKENS)
    assert packed.rows == 42 and len(packed.data) == 42 * 96 <= 8192


def test_unpacked_rows_are_unit_vectors_close_to_the_pooled_ones():
    tokens = unit_rows(50)
    pooled = pool(tokens, POOL_FACTOR)
    unpacked = PackedTokens.pack(tokens).unpack(DIM)
    assert unpacked.shape == pooled.shape == (17, DIM)
    assert np.allclose(np.linalg.norm(unpacked, axis=1), 1, atol=1e-5)
    assert (unpacked * pooled).sum(axis=1).min() > 0.9  # what 2 bits keep of a row's direction


def test_pooling_merges_near_duplicate_tokens_and_keeps_distinct_ones():
    distinct = unit_rows(4, seed=1)
    noisy = np.repeat(distinct, 3, axis=0) + 0.01 * unit_rows(12, seed=2)  # each token 3 times, jittered
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    pooled = pool(noisy, 3)
    assert len(pooled) == 4
    assert np.sort((pooled @ distinct.T).max(axis=0)).min() > 0.999  # every distinct token survives


def test_short_chunks_keep_their_tokens():
    one = unit_rows(1)
    assert np.array_equal(pool(one, POOL_FACTOR), one)
    assert PackedTokens.pack(one).rows == 1


def test_int8_tokens_keep_every_row_and_read_back_as_written():
    tokens = unit_rows(5)
    stored = PackedTokens.pack(tokens, INT8)
    assert stored.rows == 5 and len(stored.data) == 5 * DIM
    assert np.array_equal(stored.unpack(DIM), np.round(tokens * 127).astype(np.int8).astype(np.float32) / 127)


def test_int8_is_the_default_and_the_setting_offers_exactly_the_codec_formats():
    """The packed format lowers the refusal confidence (docs/benchmarks/index-size.md), so it is opt-in."""
    assert config.setting("token_format") == INT8
    for name in TOKEN_FORMATS:
        assert config.SETTINGS["token_format"].parse(name) == name
    with pytest.raises(ValueError):
        PackedTokens.pack(unit_rows(3), "pool9-q1")


def test_bytes_that_fit_no_format_are_an_error_naming_the_size():
    with pytest.raises(ValueError, match="1000 bytes cannot hold 5 packed token rows of width 384"):
        PackedTokens(bytes(1000), 5).unpack(DIM)


# The small real corpus: questions each answered by one of its pages (tests/conftest.py SMALL_PAGES).
QUESTIONS = {
    "How do I deploy my Astro site to Heroku?": "guides/deploy/heroku.mdx",
    "Which command creates the Heroku app and pushes my site?": "guides/deploy/heroku.mdx",
    "How can I import YAML data files into my components?": "recipes/add-yaml-support.mdx",
    "Which Vite plugin adds YAML support?": "recipes/add-yaml-support.mdx",
    "Why does the build say the sharp image service is missing?": "reference/errors/missing-sharp.mdx",
    "How do I switch to the no-op image service when I cannot install sharp?": "reference/errors/missing-sharp.mdx",
    "Which backend services can store my site's data?": "guides/backend/index.mdx",
    "What is a backend-as-a-service?": "guides/backend/index.mdx",
}


def reciprocal_rank(hits, page: str) -> float:
    return next((1 / rank for rank, h in enumerate(hits, start=1) if h.chunk.doc_path == page), 0.0)


def test_rerank_with_packed_tokens_ranks_like_full_precision_tokens(tmp_home, small_docs, monkeypatch):
    monkeypatch.setenv("CITEDOCS_TOKEN_FORMAT", "pool3-q2")
    services = Services.open()
    try:
        services.ingest(small_docs, CORPUS, ASTRO_BASE_URL)
        # full precision: the reranker finds no stored tokens and encodes every candidate itself
        full = HybridRetriever(
            services.store, services.encoder, LateInteractionReranker(services.encoder, lambda corpus, ids: {})
        )
        config = RetrievalConfig(mode="hybrid", rerank=True)
        packed_rr, full_rr = [], []
        for question, page in QUESTIONS.items():
            packed_hits = services.retriever.retrieve(CORPUS, question, 8, config).hits
            full_hits = full.retrieve(CORPUS, question, 8, config).hits
            assert packed_hits[0].chunk.id == full_hits[0].chunk.id, question
            packed_rr.append(reciprocal_rank(packed_hits, page))
            full_rr.append(reciprocal_rank(full_hits, page))
        assert abs(np.mean(packed_rr) - np.mean(full_rr)) <= 0.01
    finally:
        services.store.close()
