"""Sentence embeddings of docs text, remembered across requests (a bounded LRU keyed by the text).

Why: with the extractive backend most of an answer's CPU went into the bi-encoder embedding
sentences taken from the retrieved chunks: every candidate sentence of the top three chunks (to
choose what to quote) and the evidence sentences of each cited chunk (to check support). Those
texts come from the index, not from the user, and recur whenever the same sections are retrieved
again, which a docs assistant's traffic does all the time. Keying by the text itself (not a chunk
id) means a re-ingested, changed chunk simply has new keys: nothing stale is ever served, and no
invalidation is needed. The question is not passed through here by its callers: it is new text
each time and would only evict docs sentences.

A text's vector is computed once, in one encode call with the other texts its caller misses, so
the cost of a request is proportional to the docs text it has not seen before. Bounded memory:
``max_entries`` vectors of 384 float32 (1.5 KB each plus the key), about 35 MB at the default.
Thread-safe: the server answers requests on a thread pool.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from .encoders import BiEncoder
from ..metrics import EMBEDDING_CACHE

DEFAULT_MAX_ENTRIES = 20_000


class EmbeddingCache:
    def __init__(self, encoder: BiEncoder, name: str, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.encoder = encoder
        self.max_entries = max_entries
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = EMBEDDING_CACHE.labels(name, "hit")
        self._misses = EMBEDDING_CACHE.labels(name, "miss")

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Unit vectors for ``texts`` (rows in the same order), as ``BiEncoder.encode`` gives them."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                vector = self._vectors.get(text)
                if vector is not None:
                    self._vectors.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        self._hits.inc(len(texts) - sum(1 for t in texts if t not in found))
        self._misses.inc(len(missing))
        if missing:
            fresh = self.encoder.encode(missing, batch_size=batch_size)
            found.update(zip(missing, fresh))
            with self._lock:
                for text, vector in zip(missing, fresh):
                    self._vectors[text] = vector
                while len(self._vectors) > self.max_entries:
                    self._vectors.popitem(last=False)
        if not texts:
            return np.zeros((0, self.encoder.dimension), dtype=np.float32)
        return np.stack([found[t] for t in texts])


_last_question = threading.local()


def remember_question(text: str, vector: np.ndarray) -> None:
    """Retrieval encodes the question (with its token vectors); keep its sentence vector for this thread."""
    _last_question.entry = (text, vector)


def question_vector(text: str, encoder: BiEncoder) -> np.ndarray:
    """The question's unit vector: the one retrieval computed for this very text on this thread (a
    request runs on one thread, so the extractive scorer gets it without a second forward pass),
    else a fresh encoding. Only the last question per thread is kept, so a question asked again
    later is encoded again: questions are never cached across requests."""
    entry = getattr(_last_question, "entry", None)
    if entry is not None and entry[0] == text:
        return entry[1]
    return encoder.encode([text])[0]
