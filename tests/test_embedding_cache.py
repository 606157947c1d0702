"""Docs-sentence embeddings are remembered across requests: the same vectors the encoder gives,
never a stale one, and never more than the bound."""

from __future__ import annotations

import numpy as np

from citedocs.models.embedding_cache import EmbeddingCache
from citedocs.models.encoders import bi_encoder

SENTENCES = [
    "Astro loads environment variables from .env files.",
    "Use the --mode flag to load .env.staging.",
    "Content collections validate frontmatter with a schema.",
]


class CountingEncoder:
    """The real bi-encoder, counting the texts it is asked to embed (a spy, not a fake)."""

    def __init__(self) -> None:
        self.real = bi_encoder()
        self.dimension = self.real.dimension
        self.embedded: list[str] = []

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.embedded.extend(texts)
        return self.real.encode(texts, batch_size=batch_size)


def test_cached_vectors_are_the_encoders_and_each_text_is_embedded_once():
    encoder = CountingEncoder()
    cache = EmbeddingCache(encoder, "test")
    first = cache.encode(SENTENCES)
    again = cache.encode([SENTENCES[2], SENTENCES[0], SENTENCES[2]])
    assert np.allclose(first, bi_encoder().encode(SENTENCES), atol=1e-5)
    assert np.array_equal(again, first[[2, 0, 2]])
    assert encoder.embedded == SENTENCES  # the second call embedded nothing


def test_a_changed_text_is_a_new_key_and_the_oldest_entry_leaves_first():
    encoder = CountingEncoder()
    cache = EmbeddingCache(encoder, "test", max_entries=2)
    cache.encode(SENTENCES[:2])
    cache.encode([SENTENCES[0]])  # now the most recently used
    cache.encode([SENTENCES[2]])  # evicts SENTENCES[1]
    changed = SENTENCES[0].replace(".env", ".env.local")
    cache.encode([SENTENCES[0], SENTENCES[1], changed])
    assert encoder.embedded == [*SENTENCES[:2], SENTENCES[2], SENTENCES[1], changed]
    assert cache.encode([]).shape == (0, encoder.dimension)
