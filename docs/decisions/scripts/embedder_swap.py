"""Would a stronger bi-encoder retrieve better? The dense stage with another sentence-transformers model.

Every retrieval miss left on the dev sets is a ranking miss (docs/benchmarks/retrieval.md, "Why the misses miss"), many of
them paraphrases that neither BM25 nor all-MiniLM-L6-v2 bring into the top 8. The only other
English bi-encoder that ships its weights in a package is all-mpnet-base-v2 (``../shared/MODELS.md``:
five split-zip parts, 438 MB), so this measures it where it would go: in place of MiniLM's sentence
vectors in the dense stage, the rest of the pipeline as shipped (BM25 from the store, RRF k = 60,
MiniLM's MaxSim rerank as the third vote). Chunks are embedded from the same ``embedding_text()``
the index embeds, once per corpus version, and cached as ``.npz`` under ``--cache`` (default:
``CITEDOCS_HOME/embedder-swap``).

    CITEDOCS_HOME=DIR python docs/decisions/scripts/embedder_swap.py --model PATH/all-mpnet-base-v2 \\
        evals/flask-dev.jsonl:flask evals/mkdocs-material-dev.jsonl:mkdocs-material ...

``--model`` is a sentence-transformers folder (for mpnet: the five parts' ``input/*.zip.00N``
concatenated in order and unzipped). Prints, per set, the shipped figures and the swapped ones
(dense alone, hybrid+rerank), as ``citedocs eval-retrieval`` computes them, and the time to
embed the corpus and to encode one question with each model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from citedocs import config
from citedocs.eval.cases import load_cases
from citedocs.eval.retrieval import KS, run_retrieval_eval, score_case, summarize
from citedocs.retrieve.hybrid import HybridRetriever, RetrievalConfig
from citedocs.retrieve.rewrite import standalone_query_fallback
from citedocs.service import Services


class SwappedDense(HybridRetriever):
    """The shipped retriever with its dense stage answered by another model's vectors."""

    def __init__(self, base: HybridRetriever, model, vectors: dict[str, tuple[list[str], np.ndarray]]) -> None:
        super().__init__(base.store, base.encoder, base.reranker)
        self.model = model
        self.vectors = vectors
        self.query_ms: list[float] = []
        self._query: np.ndarray | None = None

    def retrieve(self, corpus: str, query: str, k: int, config: RetrievalConfig):
        started = time.perf_counter()
        self._query = self.model.encode([query], normalize_embeddings=True)[0]
        self.query_ms.append((time.perf_counter() - started) * 1000)
        return super().retrieve(corpus, query, k, config)

    def dense(self, corpus: str, query_vector: np.ndarray, limit: int):
        ids, matrix = self.vectors[corpus]
        scores = matrix @ self._query
        top = np.argsort(-scores)[:limit]
        return [(ids[i], float(scores[i])) for i in top]


def corpus_vectors(services: Services, model, corpus: str, cache: Path) -> tuple[list[str], np.ndarray, float]:
    cache.mkdir(parents=True, exist_ok=True)
    version = services.corpus(corpus).version
    path = cache / f"{corpus}-{version}.npz"
    if path.exists():
        saved = np.load(path, allow_pickle=False)
        return [str(i) for i in saved["ids"]], saved["vectors"], float(saved["seconds"])
    chunks = [chunk for chunk, _ in services.store.export_chunks(corpus)]
    started = time.perf_counter()
    vectors = model.encode([c.embedding_text() for c in chunks], batch_size=32, normalize_embeddings=True).astype(np.float32)
    seconds = time.perf_counter() - started
    ids = [c.id for c in chunks]
    np.savez(path, ids=np.array(ids), vectors=vectors, seconds=seconds)
    return ids, vectors, seconds


def figures(rows) -> dict:
    s = summarize(rows)
    return {
        "R@1": round(s.recall_page["@1"], 3),
        "page R@8": round(s.recall_page["@8"], 3),
        "anchor R@8": round(s.recall_anchor["@8"], 3),
        "MRR": round(s.mrr, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="CASES.jsonl:CORPUS")
    parser.add_argument("--model", required=True, type=Path, help="a sentence-transformers model folder")
    parser.add_argument("--cache", type=Path, default=config.home() / "embedder-swap", help="where chunk vectors are kept")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(args.model), device="cpu")
    services = Services.open()
    vectors: dict[str, tuple[list[str], np.ndarray]] = {}
    report = {}
    for spec in args.sets:
        path, corpus = spec.rsplit(":", 1)
        cases = load_cases(Path(path))
        ids, matrix, seconds = corpus_vectors(services, model, corpus, args.cache)
        vectors[corpus] = (ids, matrix)
        swapped = SwappedDense(services.retriever, model, vectors)
        shipped_ms = []
        for case in (c for c in cases if c.answerable):
            started = time.perf_counter()
            services.retriever.encode_query(standalone_query_fallback(case.question, case.history))
            shipped_ms.append((time.perf_counter() - started) * 1000)
        entry = {"chunks": len(ids), "embed_s": round(seconds, 1)}
        for mode in ("dense", "hybrid+rerank"):
            entry[f"shipped {mode}"] = figures(run_retrieval_eval(cases, services, corpus, mode))
            first, rerank = {"dense": ("dense", False), "hybrid+rerank": ("hybrid", True)}[mode]
            rows = []
            for case in (c for c in cases if c.answerable):
                query = standalone_query_fallback(case.question, case.history)
                result = swapped.retrieve(corpus, query, max(KS), RetrievalConfig(mode=first, rerank=rerank))
                rows.append(score_case(case, [h.chunk for h in result.hits]))
            entry[f"swapped {mode}"] = figures(rows)
            entry[f"swapped {mode} rows"] = {r.case_id: [r.page_rank, r.anchor_rank] for r in rows}
        entry["query_ms_shipped_p50"] = round(statistics.median(shipped_ms), 1)
        entry["query_ms_swapped_p50"] = round(statistics.median(swapped.query_ms), 1)
        report[spec] = entry
        print(spec, json.dumps({k: v for k, v in entry.items() if not k.endswith("rows")}), flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
