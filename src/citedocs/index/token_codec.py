"""The stored form of a chunk's late-interaction token vectors: int8 rows, or pooled by 3 at 2 bits a dimension.

Token vectors were the reranker's biggest cost on disk: up to 126 int8 rows of 384 dims (~48 KB a
chunk, most of the index). Measured offline on every dev set (``docs/decisions/scripts/token_compression.py``,
docs/decisions/2026-11-23-token-format.md), pooling a chunk's tokens by 3 and keeping 2 bits per dimension leaves rerank
R@1 and MRR within 0.01 of int8 at <= 4,032 bytes a chunk. The same bytes go into every store backend.
It is not the default: the packed rows lower the best MaxSim score (the refusal confidence) by
~0.06 with more spread, and after recalibrating the threshold the extractive Astro dev eval refuses
one more answerable paraphrase (refusal precision 0.833 -> 0.789). An unnecessary refusal costs
more than disk, so ``int8`` stays the default and ``pool3-q2`` is the choice for large corpora.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

POOL_FACTOR = 3  # stored rows = ceil(tokens / 3): <= 42 for the 126 tokens the reranker keeps
# 2 bits a dimension: the Lloyd-Max quantizer of a Gaussian, in units of the row's own standard
# deviation (token components are close to Gaussian): split at 0 and +-0.9816 sigma, read back as
# these levels. No scale is stored: rows are renormalised when read, which cancels it.
_CUT = 0.9816
_LEVELS = np.array([-1.510, -0.4528, 0.4528, 1.510], dtype=np.float32)
_PER_BYTE = 4
# The ``token_format`` setting's values; part of the ingest pipeline string, so a corpus stored in
# another format is rebuilt by its next ingest.
INT8 = "int8"
POOLED_2BIT = f"pool{POOL_FACTOR}-q2"
TOKEN_FORMATS = (INT8, POOLED_2BIT)


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
    from scipy.cluster.hierarchy import fcluster, linkage  # here: only embedding needs it (1 s to import)

    labels = fcluster(linkage(tokens.astype(np.float64), method="ward"), t=groups, criterion="maxclust")
    pooled = np.stack([tokens[labels == label].mean(axis=0) for label in np.unique(labels)])
    return _unit(pooled)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)).astype(np.float32)


@dataclass(frozen=True)
class PackedTokens:
    """A chunk's token vectors as a store keeps them: ``rows`` x dim/4 bytes of 2-bit codes, four
    dimensions a byte, the first in the two high bits."""

    data: bytes
    rows: int

    @classmethod
    def pack(cls, tokens: np.ndarray, token_format: str = POOLED_2BIT) -> PackedTokens:
        """Unit token vectors (n x dim, dim a multiple of 4) -> int8 (x127, one byte a dimension) or
        pooled by POOL_FACTOR at 2 bits a dimension."""
        if token_format == INT8:
            tokens = np.asarray(tokens, dtype=np.float32)
            return cls(np.round(tokens * 127).astype(np.int8).tobytes(), len(tokens))
        if token_format != POOLED_2BIT:
            raise ValueError(f"unknown token format {token_format!r}; expected one of {', '.join(TOKEN_FORMATS)}")
        pooled = pool(tokens, POOL_FACTOR)
        if pooled.ndim != 2 or pooled.shape[1] % _PER_BYTE:
            raise ValueError(f"token vectors must be rows of a width divisible by 4, got shape {pooled.shape}")
        z = pooled / np.maximum(pooled.std(axis=1, keepdims=True), 1e-9)
        codes = np.digitize(z, [-_CUT, 0.0, _CUT]).astype(np.uint8)  # 0..3, the index into _LEVELS
        packed = codes[:, 0::4] << 6 | codes[:, 1::4] << 4 | codes[:, 2::4] << 2 | codes[:, 3::4]
        return cls(packed.tobytes(), len(pooled))

    def unpack(self, dim: int) -> np.ndarray:
        """Unit float32 rows (rows x dim) to score float query tokens against. Rows of exactly
        ``dim`` bytes are the int8 format (x127, unpooled); a quarter of that, the 2-bit format."""
        if len(self.data) == self.rows * dim:
            return np.frombuffer(self.data, dtype=np.int8).reshape(self.rows, dim).astype(np.float32) / 127
        if len(self.data) != self.rows * dim // _PER_BYTE:
            raise ValueError(f"{len(self.data)} bytes cannot hold {self.rows} packed token rows of width {dim}")
        packed = np.frombuffer(self.data, dtype=np.uint8).reshape(self.rows, dim // _PER_BYTE)
        codes = np.empty((self.rows, dim), dtype=np.uint8)
        for i, shift in enumerate((6, 4, 2, 0)):
            codes[:, i::4] = (packed >> shift) & 0b11
        return _unit(_LEVELS[codes])
