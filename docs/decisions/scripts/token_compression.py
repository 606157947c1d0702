#!/usr/bin/env python
"""How small can the reranker's stored token vectors get? An offline experiment (a script, not a test).

Reads the int8 token vectors an existing index stores (no re-embedding), applies each candidate
compression to them, and reruns the dev sets through the eval-retrieval code path (hybrid+rerank,
k = 8, answerable cases) where only the reranker's token source changes: its tokens are the
candidate's reconstruction, scored against the float query tokens (asymmetric scoring). Prints,
per dev set, bytes per chunk (mean and max over the corpus), R@1, R@8, anchor R@8 and MRR, and
how far each candidate moves the MaxSim confidence that the refusal threshold is calibrated on
(mean absolute change, and on how many cases, refusals included, it crosses the refusal threshold:
the corpus's floor plus ``min_retrieval_margin``).

    CITEDOCS_HOME=COPY_OF_AN_INDEX python docs/decisions/scripts/token_compression.py [--only 'NAME;NAME'] [--cases FILE ...]

Candidates (``CANDIDATES``): head truncation, token pooling (Clavie et al. 2024: Ward clustering
of a chunk's tokens, each cluster mean-pooled), 4/2/1-bit scalar quantization, random projection
and per-corpus PCA to fewer dims, ColBERTv2-style residuals against per-corpus k-means centroids,
and combinations. Sizes count only per-chunk bytes (a per-corpus PCA matrix or codebook is shared).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from citedocs.index.token_codec import PackedTokens, pool as token_pool

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CASES = sorted((REPO / "evals").glob("*-dev.jsonl"))
DIM = 384

Tokens = np.ndarray  # float32 (n, DIM) unit rows, as stored int8 / 127


@dataclass(frozen=True)
class Compressed:
    tokens: Tokens  # what the reranker scores against (float, DIM columns)
    nbytes: int  # what one chunk would cost on disk


Compression = Callable[[Tokens], Compressed]


# --- building blocks: each maps float tokens to (reconstruction, bytes) --------------------------


def int8(t: Tokens) -> Compressed:
    return Compressed(np.round(t * 127) / 127, t.shape[0] * t.shape[1])


def scalar(bits: int) -> Compression:
    """Per-token uniform symmetric quantization (max-abs scale, float16 per token); 1 bit is sign only."""

    def apply(t: Tokens) -> Compressed:
        n, d = t.shape
        if bits == 1:
            return Compressed(np.where(t >= 0, 1.0, -1.0) / math.sqrt(d), n * d // 8)
        levels = 2 ** (bits - 1) - 1 if bits > 2 else None
        if levels is None:  # 2 bits: Lloyd-Max levels for a Gaussian, per-token std
            sigma = t.std(axis=1, keepdims=True) + 1e-9
            z = t / sigma
            q = np.where(np.abs(z) > 0.9816, 1.510, 0.4528) * np.where(z >= 0, 1.0, -1.0)
            return Compressed(q * sigma, n * (d * bits // 8 + 2))
        scale = np.abs(t).max(axis=1, keepdims=True) / levels + 1e-12
        return Compressed(np.round(t / scale) * scale, n * (d * bits // 8 + 2))

    return apply


def head(n_tokens: int) -> Compression:
    return lambda t: Compressed(t[:n_tokens], 0)


def pool(factor: int) -> Compression:
    """The production token pooling (``token_codec.pool``): ceil(n / factor) unit vectors."""
    return lambda t: Compressed(token_pool(t, factor), 0)


def production(t: Tokens) -> Compressed:
    """Exactly what ingest stores and the reranker reads (``token_codec.PackedTokens``)."""
    packed = PackedTokens.pack(t)
    return Compressed(packed.unpack(t.shape[1]), len(packed.data))


@dataclass(frozen=True)
class Reconstructed:
    """A candidate's tokens where the reranker expects stored ones (it only calls ``unpack``)."""

    tokens: Tokens

    def unpack(self, dim: int) -> Tokens:
        return self.tokens


def project(fit: Callable[[], np.ndarray]) -> Compression:
    """Onto the rows of ``fit()`` (k x DIM, orthonormal rows), int8; scored in the original space."""

    def apply(t: Tokens) -> Compressed:
        matrix = fit()
        low = t @ matrix.T
        scale = np.abs(low).max(axis=1, keepdims=True) / 127 + 1e-12
        return Compressed((np.round(low / scale) * scale) @ matrix, t.shape[0] * (matrix.shape[0] + 2))

    return apply


def residual(fit: Callable[[], np.ndarray], bits: int) -> Compression:
    """ColBERTv2: nearest centroid id (2 bytes) + the residual at ``bits`` per dim (per-token scale)."""
    quantize = scalar(bits)

    def apply(t: Tokens) -> Compressed:
        centroids = fit()
        nearest = centroids[np.argmax(t @ centroids.T, axis=1)]
        r = quantize(t - nearest)
        return Compressed(nearest + r.tokens, t.shape[0] * 2 + r.nbytes)

    return apply


def chain(*steps: Compression) -> Compression:
    """Steps in order; the bytes are the last step's (size-free steps like pooling just feed it)."""

    def apply(t: Tokens) -> Compressed:
        out = Compressed(t, 0)
        for step in steps:
            out = step(out.tokens)
        return out

    return apply


def unit(c: Compression) -> Compression:
    """Rows renormalised to unit length after ``c`` (keeps MaxSim a cosine, as the threshold expects)."""

    def apply(t: Tokens) -> Compressed:
        out = c(t)
        return Compressed(out.tokens / np.maximum(np.linalg.norm(out.tokens, axis=1, keepdims=True), 1e-9), out.nbytes)

    return apply


# --- per-corpus fits (PCA, k-means) on a sample of the corpus's own stored tokens ---------------


def stored(store, corpus: str, ids: list) -> dict:
    """The index's token vectors as floats (today's int8 rows; a packed index gives its reconstruction)."""
    return {cid: t.unpack(DIM) for cid, t in store.token_vectors(corpus, ids).items()}


def corpus_sample(store, corpus: str, limit: int = 40_000, seed: int = 0) -> Tokens:
    rng = np.random.default_rng(seed)
    ids = list(store.chunk_hashes(corpus))
    picked = [ids[i] for i in rng.permutation(len(ids))[: max(1, limit // 80)]]
    rows = np.concatenate(list(stored(store, corpus, picked).values()))
    return rows[rng.permutation(len(rows))[:limit]]


def pca(sample: Tokens, k: int) -> np.ndarray:
    _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
    return vt[:k]


def random_projection(k: int, seed: int = 0) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((DIM, k)))
    return q.T


def kmeans(sample: Tokens, k: int, iterations: int = 8, seed: int = 0) -> np.ndarray:
    """Spherical k-means (ColBERTv2's centroids are unit vectors, assigned by inner product)."""
    rng = np.random.default_rng(seed)
    centroids = sample[rng.choice(len(sample), k, replace=False)]
    for _ in range(iterations):
        assign = np.argmax(sample @ centroids.T, axis=1)
        for j in range(k):
            members = sample[assign == j]
            if len(members):
                c = members.sum(axis=0)
                centroids[j] = c / max(float(np.linalg.norm(c)), 1e-9)
    return centroids


def candidates(sample: Tokens) -> dict[str, Compression]:
    """Every candidate; the per-corpus fits run only when a candidate that needs them does."""
    pca128 = cache(lambda: pca(sample, 128))
    pca96 = cache(lambda: pca(sample, 96))
    centroids = cache(lambda: kmeans(sample[:20_000], 256))
    rp128 = cache(lambda: random_projection(128))
    return {
        "today: int8, up to 126 tokens": int8,
        "head 64 tokens, int8": chain(head(64), int8),
        "head 32 tokens, int8": chain(head(32), int8),
        "pool 2, int8": chain(pool(2), int8),
        "pool 3, int8": chain(pool(3), int8),
        "pool 4, int8": chain(pool(4), int8),
        "pool 6, int8": chain(pool(6), int8),
        "4-bit": unit(scalar(4)),
        "2-bit": unit(scalar(2)),
        "1-bit (sign)": scalar(1),
        "random projection 128-d, int8": unit(project(rp128)),
        "PCA 128-d (per corpus), int8": unit(project(pca128)),
        "PCA 96-d (per corpus), int8": unit(project(pca96)),
        "residual k256 + 2-bit": unit(residual(centroids, 2)),
        "residual k256 + 1-bit": unit(residual(centroids, 1)),
        "pool 2, 4-bit": chain(pool(2), unit(scalar(4))),
        "pool 3, 4-bit": chain(pool(3), unit(scalar(4))),
        "pool 2, 2-bit": chain(pool(2), unit(scalar(2))),
        "pool 3, 2-bit": chain(pool(3), unit(scalar(2))),
        "pool 2, 1-bit": chain(pool(2), scalar(1)),
        "pool 4, 2-bit": chain(pool(4), unit(scalar(2))),
        "head 64, 4-bit": chain(head(64), unit(scalar(4))),
        "pool 2, PCA 128-d int8": chain(pool(2), unit(project(pca128))),
        "pool 2, residual k256 + 2-bit": chain(pool(2), unit(residual(centroids, 2))),
        "production (token_codec)": production,
    }


# --- the eval-retrieval path with a compressed token source --------------------------------------


class MemoEncoder:
    """The bi-encoder with query encodings memoised: every candidate asks the same questions."""

    def __init__(self, encoder) -> None:
        self._encoder = encoder
        self._seen: dict[tuple, list] = {}
        self.name = encoder.name

    def encode_with_tokens(self, texts: list[str], max_tokens: int, **kw):
        key = (tuple(texts), max_tokens)
        if key not in self._seen:
            self._seen[key] = self._encoder.encode_with_tokens(texts, max_tokens, **kw)
        return self._seen[key]


def evaluate(services, corpus: str, cases, compress: Compression, encoder) -> tuple[dict, list[float]]:
    """Summary over the answerable cases and the confidence (best MaxSim) of every case."""
    from citedocs.eval.retrieval import score_case, summarize
    from citedocs.retrieve.hybrid import HybridRetriever, RetrievalConfig
    from citedocs.retrieve.rerank import LateInteractionReranker
    from citedocs.retrieve.rewrite import standalone_query_fallback

    cache: dict = {}

    def source(corpus_name: str, ids: list) -> dict:
        missing = [i for i in ids if i not in cache]
        for cid, t in stored(services.store, corpus_name, missing).items():
            cache[cid] = Reconstructed(compress(t).tokens)
        return {i: cache[i] for i in ids if i in cache}

    retriever = HybridRetriever(services.store, encoder, LateInteractionReranker(services.encoder, source))
    config = RetrievalConfig(mode="hybrid", rerank=True)
    rows, confidence = [], []
    for case in cases:
        result = retriever.retrieve(corpus, standalone_query_fallback(case.question, case.history), 8, config)
        confidence.append(result.confidence)
        if case.answerable:
            rows.append(score_case(case, [h.chunk for h in result.hits]))
    return summarize(rows).__dict__, confidence


def corpus_bytes(store, corpus: str, compress: Compression, every: int) -> tuple[float, int]:
    """Mean and max bytes per chunk over every ``every``-th chunk of the corpus."""
    ids = list(store.chunk_hashes(corpus))[::every]
    sizes = []
    for start in range(0, len(ids), 500):
        for t in stored(store, corpus, ids[start : start + 500]).values():
            sizes.append(compress(t).nbytes)
    return float(np.mean(sizes)), int(max(sizes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=Path, nargs="*", default=DEFAULT_CASES)
    parser.add_argument("--only", help="';'-separated candidate names (today's is always run)")
    parser.add_argument("--size-every", type=int, default=5, help="size statistics over every N-th chunk")
    args = parser.parse_args()
    from citedocs.eval.cases import corpus_named_by, load_cases
    from citedocs.service import Services
    from citedocs.validate.thresholds import load_thresholds

    services = Services.open()
    margin = load_thresholds().min_retrieval_margin
    indexed = {c.name for c in services.corpora()}
    encoder = MemoEncoder(services.encoder)
    print(f"load average {os.getloadavg()}", flush=True)
    for path in args.cases:
        corpus = corpus_named_by(path)
        if corpus not in indexed:
            print(f"\n{path.name}: corpus {corpus} is not indexed here; skipped")
            continue
        cases = load_cases(path)
        started = time.perf_counter()
        # the refusal threshold in MaxSim terms: the corpus's floor plus the calibrated margin
        threshold = services.pipeline.null_levels.level(corpus, services.corpus(corpus).version) + margin
        pool_ = candidates(corpus_sample(services.store, corpus))
        wanted = [s.strip() for s in (args.only or "").split(";") if s.strip()]
        names = [n for n in pool_ if n.startswith("today") or not wanted or n in wanted]
        n = sum(c.answerable for c in cases)
        print(f"\n### {path.name} ({n} answerable of {len(cases)}; corpus {corpus})\n")
        print("| candidate | bytes/chunk mean | max | R@1 | R@8 | anchor R@8 | MRR | conf change | threshold flips |")
        print("|---|---|---|---|---|---|---|---|---|")
        base_conf = None
        for name in names:
            summary, conf = evaluate(services, corpus, cases, pool_[name], encoder)
            base_conf = base_conf or conf
            mean, most = corpus_bytes(services.store, corpus, pool_[name], args.size_every)
            shift = float(np.mean(np.abs(np.subtract(conf, base_conf))))
            flips = sum((a >= threshold) != (b >= threshold) for a, b in zip(conf, base_conf))
            print(
                f"| {name} | {mean:,.0f} | {most:,} | {summary['recall_page']['@1']:.3f} | {summary['recall_page']['@8']:.3f}"
                f" | {summary['recall_anchor']['@8']:.3f} | {summary['mrr']:.3f} | {shift:.4f} | {flips} |",
                flush=True,
            )
        print(f"\n({time.perf_counter() - started:.0f} s; load average {os.getloadavg()})", flush=True)


if __name__ == "__main__":
    main()
