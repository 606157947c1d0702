"""The stored form of a chunk's late-interaction token vectors: pooled, then packed to 4 bits.

Token vectors were the reranker's biggest cost on disk: up to 126 int8 rows of 384 dims (~48 KB a
chunk, most of the index). Measured offline on every dev set (``benchmarks/token_compression.py``,
README "Index size"), pooling a chunk's tokens by 3 and keeping 4 bits per dimension leaves
rerank R@1 and MRR where they were at <= 8 KB a chunk. The same bytes go into every store backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

POOL_FACTOR = 3  # stored rows = ceil(tokens / 3): <= 42 for the 126 tokens the reranker keeps
LEVELS = 7  # 4-bit symmetric: -7..7 times a per-row scale, stored as 1..15 in a nibble
_SCALE = np.dtype("<f2")  # one float16 scale per row
_OFFSET = 8
# Part of the ingest pipeline string: a corpus stored in another format is rebuilt by its next ingest.
TOKEN_FORMAT = f"pool{POOL_FACTOR}-q4"


def pool(tokens: np.ndarray, factor: int) -> np.ndarray:
    """Token pooling (Clavie et al. 2024): Ward clustering of the chunk's unit token vectors into
    ceil(n / factor) groups, each replaced by its renormalised mean. Near-duplicate tokens (the
    same word piece in similar contexts) collapse first, so MaxSim loses little; the result is
    unit rows, so scores stay cosine-like (the refusal threshold is calibrated on them)."""
    tokens = np.asarray(tokens, dtype=np.float32)
    n = len(tokens)
    groups = math.ceil(n / factor)
    if n < 2 or groups >= n:
        return tokens.copy()
    labels = fcluster(linkage(tokens.astype(np.float64), method="ward"), t=groups, criterion="maxclust")
    pooled = np.stack([tokens[labels == label].mean(axis=0) for label in np.unique(labels)])
    return _unit(pooled)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)).astype(np.float32)


@dataclass(frozen=True)
class PackedTokens:
    """A chunk's token vectors as a store keeps them: ``rows`` float16 scales, then ``rows`` x dim/2
    bytes of 4-bit codes (two dimensions a byte, the even one in the high nibble)."""

    data: bytes
    rows: int

    @classmethod
    def pack(cls, tokens: np.ndarray) -> PackedTokens:
        """Unit token vectors (n x dim, dim even) -> pooled by POOL_FACTOR, 4 bits per dimension."""
        pooled = pool(tokens, POOL_FACTOR)
        if pooled.ndim != 2 or pooled.shape[1] % 2:
            raise ValueError(f"token vectors must be rows of an even width, got shape {pooled.shape}")
        scale = (np.abs(pooled).max(axis=1, keepdims=True) / LEVELS).astype(_SCALE)
        safe = np.maximum(scale.astype(np.float32), np.finfo(np.float16).tiny)
        codes = (np.clip(np.round(pooled / safe), -LEVELS, LEVELS) + _OFFSET).astype(np.uint8)
        nibbles = (codes[:, 0::2] << 4) | codes[:, 1::2]
        return cls(scale.tobytes() + nibbles.tobytes(), len(pooled))

    def unpack(self, dim: int) -> np.ndarray:
        """Unit float32 rows (rows x dim) to score float query tokens against. Rows of exactly
        ``dim`` bytes are the int8 format of indexes written before packing (x127, unpooled),
        read as they are until the next ingest rebuilds the corpus."""
        if len(self.data) == self.rows * dim:
            return np.frombuffer(self.data, dtype=np.int8).reshape(self.rows, dim).astype(np.float32) / 127
        if len(self.data) != self.rows * (_SCALE.itemsize + dim // 2):
            raise ValueError(f"{len(self.data)} bytes cannot hold {self.rows} packed token rows of width {dim}")
        split = self.rows * _SCALE.itemsize
        scale = np.frombuffer(self.data[:split], dtype=_SCALE).astype(np.float32).reshape(-1, 1)
        nibbles = np.frombuffer(self.data[split:], dtype=np.uint8).reshape(self.rows, dim // 2)
        codes = np.empty((self.rows, dim), dtype=np.float32)
        codes[:, 0::2] = nibbles >> 4
        codes[:, 1::2] = nibbles & 0x0F
        return _unit((codes - _OFFSET) * scale)
