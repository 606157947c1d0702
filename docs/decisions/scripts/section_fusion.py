"""Would another fusion beat chunk-level RRF (k = 60)? Section-level variants (docs/decisions/2026-11-25-section-fusion.md), other RRF constants and score fusion.

Chunk-level RRF splits a section's votes when BM25 and dense put *different* chunks of one section
first (each chunk gets one strong vote, a chunk both rank 2nd-4th gets two). Each variant below
replaces ``reciprocal_rank_fusion`` in both of ``HybridRetriever.retrieve``'s fusions (the first
stages', then the final one with the reranker's ranking), keeps RRF_K = 60 and returns a score per
chunk, so the result stays a list of chunks:

* ``chunk``: plain RRF, what ships (its figures are `citedocs eval-retrieval`'s);
* ``best-rank``: in each ranking a section ranks where its best chunk does; that score goes to the
  section's best chunk (by its own RRF score), its other chunks keep their own;
* ``best-rank-2``: the same, the section's two best chunks get the section's score;
* ``best-rank-first``: ``best-rank`` in the first-stage fusion only;
* ``places``: a section ranks at its place among the sections of each ranking (each section counted
  once); its best chunk gets that score, its other chunks keep their own;
* ``places-one``: the same, and a section's further chunks come after every section's first (its
  scores are the section's + 1 for the first chunks, an ordering, not a similarity);
* ``places-harmonic``: a section's chunks, best first, get its score divided by 1, 2, 3, ...

Two chunk-level alternatives to RRF_K = 60 are measured the same way (docs/decisions/2026-11-26-rrf-constant.md): ``rrf-kN``, plain RRF with the constant N, and ``cc-A`` / ``cc-A-rW``, a convex
combination of the first stages' scores (and the reranker's, with weight W) instead of their ranks.

In the final fusion the chunks scored are the reranked candidates (the rankings hold more).
One process, the models loaded once; rankings and rows as ``citedocs eval-retrieval`` makes them:

    CITEDOCS_HOME=DIR python docs/decisions/scripts/section_fusion.py \\
        evals/astro-dev.jsonl:astro evals/astro-extra.jsonl:astro ... [--variants a,b] [--json-out F]

Any citedocs command with a variant in place of RRF (the extractive answers, a gate):

    CITEDOCS_HOME=DIR python docs/decisions/scripts/section_fusion.py --run places-harmonic \\
        eval evals/mkdocs-material-dev.jsonl --corpus mkdocs-material --backend extractive --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from citedocs.eval.cases import load_cases
from citedocs.eval.retrieval import run_retrieval_eval, summarize
from citedocs.retrieve import hybrid
from citedocs.retrieve.rerank import LateInteractionReranker
from citedocs.service import Services

K = hybrid.RRF_K
plain_rrf = hybrid.reciprocal_rank_fusion


def section_of(chunk_id: str) -> str:
    """``page#anchor/3`` -> ``page#anchor`` (chunk ids are ``<page>#<anchor>/<n>``)."""
    head, slash, number = chunk_id.rpartition("/")
    return head if slash and "#" in head and number.isdigit() else chunk_id


def section_scores(rankings: list[list[str]], places: bool) -> dict[str, float]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        rank_of: dict[str, int] = {}
        for rank, chunk_id in enumerate(ranking, start=1):
            rank_of.setdefault(section_of(chunk_id), len(rank_of) + 1 if places else rank)
        for section, rank in rank_of.items():
            scores[section] = scores.get(section, 0.0) + 1.0 / (K + rank)
    return scores


def by_section(pool: list[str], own: dict[str, float]) -> list[tuple[str, int]]:
    """(chunk, its 0-based place among its section's chunks by own RRF score), best chunks first."""
    seen: dict[str, int] = {}
    out = []
    for chunk_id in sorted(pool, key=lambda c: -own.get(c, 0.0)):  # stable: ties keep the rankings' order
        section = section_of(chunk_id)
        out.append((chunk_id, seen.get(section, 0)))
        seen[section] = seen.get(section, 0) + 1
    return out


def fusion(places: bool, lifted: int = 1, after_firsts: bool = False, harmonic: bool = False) -> Callable:
    def fuse(rankings: list[list[str]], pool: list[str]) -> dict[str, float]:
        own = plain_rrf(rankings, K)
        sections = section_scores(rankings, places)
        scores = {c: own.get(c, 0.0) for c in pool}
        for chunk_id, j in by_section(pool, own):
            section = sections.get(section_of(chunk_id), scores[chunk_id])
            if harmonic:
                scores[chunk_id] = section / (j + 1)
            elif j < lifted:
                scores[chunk_id] = section + (1.0 if after_firsts else 0.0)  # +1: above every further chunk
        return scores

    return fuse


def rrf_k(k: int) -> Callable:
    """Plain chunk-level RRF with another constant: a smaller k lets one ranker's top chunk outrank
    chunks both rankers place in the middle of their 50."""
    return lambda rankings, pool: plain_rrf(rankings, k)


# The scores behind the rankings of the retrieve in progress (``patched`` records them): BM25's,
# the dense cosine's (for up to ``DENSE_DEPTH`` chunks) and the reranker's MaxSim.
SCORES: dict[str, dict[str, float]] = {}
DENSE_DEPTH = 1000


def convex(alpha: float, rerank_weight: float = 0.0) -> Callable:
    """A convex combination of scores instead of ranks (Bruch et al., "An Analysis of Fusion
    Functions for Hybrid Retrieval", TOIS 2023): BM25 divided by the best BM25 of this question
    (0 where BM25 did not return the chunk), the dense cosine as it is (the cosine of a chunk past
    the dense list is read from a deeper list); ``alpha`` weighs the dense side. In the final fusion
    the MaxSim similarity joins with ``rerank_weight`` (0: the reranker does not vote)."""

    def fuse(rankings: list[list[str]], pool: list[str]) -> dict[str, float]:
        lexical, dense, maxsim = SCORES.get("bm25", {}), SCORES.get("dense", {}), SCORES.get("rerank", {})
        top = max(lexical.values(), default=0.0) or 1.0
        floor = min(dense.values(), default=0.0)
        scores = {}
        for chunk_id in pool:
            first = alpha * dense.get(chunk_id, floor) + (1 - alpha) * lexical.get(chunk_id, 0.0) / top
            if chunk_id in maxsim:
                first = (1 - rerank_weight) * first + rerank_weight * maxsim[chunk_id]
            scores[chunk_id] = first
        return scores

    return fuse


VARIANTS: dict[str, Callable | None] = {
    "chunk": None,
    **{f"rrf-k{k}": rrf_k(k) for k in (5, 10, 15, 20, 30, 40)},
    **{f"cc-{a}": convex(a) for a in (0.3, 0.5, 0.7, 0.8)},
    **{f"cc-{a}-r{w}": convex(a, w) for a in (0.5, 0.7) for w in (0.3, 0.5)},
    "best-rank": fusion(places=False),
    "best-rank-2": fusion(places=False, lifted=2),
    "best-rank-first": fusion(places=False),  # first stage only (see patched)
    "places": fusion(places=True),
    "places-one": fusion(places=True, after_firsts=True),
    "places-harmonic": fusion(places=True, harmonic=True),
}


class patched:
    """Swap the fusion inside ``HybridRetriever.retrieve``: within one retrieve, its first call fuses
    the first stages (every ranked chunk scored), its second the reranker's ranking with them (the
    reranked candidates, the last ranking, scored)."""

    def __init__(self, name: str) -> None:
        self.name, self.fuse = name, VARIANTS[name]
        self.calls = self.in_retrieve = 0

    def __call__(self, rankings, k=K):
        self.calls += 1
        self.in_retrieve += 1
        final = self.in_retrieve == 2
        if self.fuse is None or (final and self.name == "best-rank-first"):
            return plain_rrf(rankings, k)
        pool = list(rankings[-1]) if final else list(plain_rrf(rankings, k))
        return self.fuse(rankings, pool)

    def __enter__(self):
        shipped = self.retrieve = hybrid.HybridRetriever.retrieve
        self.bm25, self.dense, self.rerank = hybrid.HybridRetriever.bm25, hybrid.HybridRetriever.dense, LateInteractionReranker.score
        bm25, dense, rerank = self.bm25, self.dense, self.rerank

        def retrieve(retriever, *args, **kwargs):
            self.in_retrieve = 0
            SCORES.clear()
            return shipped(retriever, *args, **kwargs)

        def recorded_bm25(retriever, corpus, query, limit):
            out = bm25(retriever, corpus, query, limit)
            SCORES["bm25"] = dict(out)
            return out

        def recorded_dense(retriever, corpus, vector, limit):
            deep = dense(retriever, corpus, vector, max(limit, DENSE_DEPTH))
            SCORES["dense"] = dict(deep)
            return deep[:limit]

        def recorded_rerank(reranker, query, chunks, corpus):
            out = rerank(reranker, query, chunks, corpus)
            SCORES["rerank"] = {c.id: s for c, s in zip(chunks, out)}
            return out

        hybrid.HybridRetriever.retrieve = retrieve
        hybrid.HybridRetriever.bm25, hybrid.HybridRetriever.dense = recorded_bm25, recorded_dense
        LateInteractionReranker.score = recorded_rerank
        hybrid.reciprocal_rank_fusion = self
        return self

    def __exit__(self, *exc):
        hybrid.reciprocal_rank_fusion = plain_rrf
        hybrid.HybridRetriever.retrieve = self.retrieve
        hybrid.HybridRetriever.bm25, hybrid.HybridRetriever.dense = self.bm25, self.dense
        LateInteractionReranker.score = self.rerank


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        from citedocs.cli import app

        with patched(sys.argv[2]):
            app(sys.argv[3:])  # exits with the command's status
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="CASES.jsonl:CORPUS")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--modes", default="hybrid,hybrid+rerank")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    services = Services.open()
    report: dict[str, dict] = {}
    print(f"{'set':24} {'variant':16} {'mode':14} R@1   R@5   R@8   aR@1  aR@8  MRR   nDCG@8")
    for spec in args.sets:
        path, corpus = spec.rsplit(":", 1)
        cases = load_cases(Path(path))
        for name in args.variants.split(","):
            for mode in args.modes.split(","):
                with patched(name) as fuse:
                    rows = run_retrieval_eval(cases, services, corpus, mode)
                # the retrieve calls fusion once per question without the reranker, twice with it
                assert fuse.calls == len(rows) * (2 if mode == "hybrid+rerank" else 1), "retrieve changed: re-read it"
                s = summarize(rows)
                report[f"{Path(path).stem}|{name}|{mode}"] = {"summary": s.__dict__, "rows": [r.__dict__ for r in rows]}
                figures = (*(s.recall_page[k] for k in ("@1", "@5", "@8")), s.recall_anchor["@1"], s.recall_anchor["@8"])
                print(f"{Path(path).stem:24} {name:16} {mode:14} " + " ".join(f"{x:.3f}" for x in (*figures, s.mrr, s.ndcg8)))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
