"""Would retrieving with parts of the question beat retrieving with the whole of it? (docs/decisions/2026-11-25-query-variants.md.)

Multi-hop and multi-part questions ("how do I start my async main(), and inside it give up on a
slow call after 5 seconds?") need two sections in the top 8, and long questions carry a story
("I've got a big list of words scraped from a web page.") before the sentence that asks. Two
families of fixes from the RAG literature, each measured against what ships (``question``: BM25 and
dense on the whole question, RRF, MaxSim rerank fused with both; ``citedocs eval-retrieval``'s
hybrid+rerank figures):

* multi-query (query decomposition): each thing the question asks (``asked_clauses``) is also
  retrieved on its own and its rankings join the fusion: ``clauses`` (BM25 and dense per clause),
  ``clauses-dense`` (dense per clause only), ``clauses-maxsim`` (BM25 and dense per clause, and each
  clause's MaxSim ranking of the candidates fused as well);
* the asking sentences only (``asked_part``): ``asked-bm25`` (BM25 on them, dense on the whole),
  ``asked-also`` (BM25 and dense on the whole question, plus dense on them).

A question that asks one thing, or whose whole text asks, gets the shipped ranking in every variant.
Follow-ups are retrieved as ``eval-retrieval`` does (the previous question prepended) and are not split.

    CITEDOCS_HOME=DIR python docs/decisions/scripts/query_variants.py \\
        evals/astro-dev.jsonl:astro evals/astro-extra.jsonl:astro ... [--json-out F]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from citedocs.eval.cases import load_cases
from citedocs.eval.retrieval import RetrievalRow, score_case, summarize
from citedocs.retrieve.hybrid import HybridRetriever, QueryEncoding, reciprocal_rank_fusion
from citedocs.retrieve.rewrite import standalone_query_fallback
from citedocs.sentences import asked_clauses
from citedocs.service import Services
from citedocs.types import Chunk, ChunkId
from citedocs.validate.question import asked_part

CANDIDATES, RERANK_DEPTH, K = 50, 20, 8  # RetrievalConfig's defaults and eval-retrieval's k
VARIANTS = ("question", "clauses", "clauses-dense", "clauses-maxsim", "asked-bm25", "asked-also")


class Rankings:
    """One case's first-stage rankings per query text, computed once and shared by every variant."""

    def __init__(self, retriever: HybridRetriever, corpus: str) -> None:
        self.retriever, self.corpus = retriever, corpus
        self.encodings: dict[str, QueryEncoding] = {}

    def encoding(self, text: str) -> QueryEncoding:
        if text not in self.encodings:
            self.encodings[text] = self.retriever.encode_query(text)
        return self.encodings[text]

    def bm25(self, text: str) -> list[ChunkId]:
        return [cid for cid, _ in self.retriever.bm25(self.corpus, text, CANDIDATES)]

    def dense(self, text: str) -> list[ChunkId]:
        return [cid for cid, _ in self.retriever.dense(self.corpus, self.encoding(text).vector, CANDIDATES)]

    def fused(self, first_stage: list[list[ChunkId]], rerank_with: list[str]) -> list[Chunk]:
        """``HybridRetriever.retrieve``'s two fusions, with the given first-stage rankings and one
        MaxSim ranking per text in ``rerank_with``."""
        fused = reciprocal_rank_fusion(first_stage)
        ordered = sorted(fused, key=lambda cid: -fused[cid])
        chunks = self.retriever.store.get_chunks(self.corpus, ordered[:RERANK_DEPTH])
        reranked = []
        for text in rerank_with:
            scores = self.retriever.reranker.score(self.encoding(text), chunks, self.corpus)
            reranked.append([c.id for _, c in sorted(zip(scores, chunks), key=lambda pair: -pair[0])])
        final = reciprocal_rank_fusion([*first_stage, *reranked])
        return sorted(chunks, key=lambda c: -final[c.id])[:K]


def variant(name: str, rankings: Rankings, query: str, clauses: list[str], asked: str) -> list[Chunk]:
    whole = [rankings.bm25(query), rankings.dense(query)]
    if name.startswith("clauses") and len(clauses) > 1:
        per_clause = [rankings.dense(c) for c in clauses]
        if name != "clauses-dense":
            per_clause += [rankings.bm25(c) for c in clauses]
        return rankings.fused(whole + per_clause, [query, *clauses] if name == "clauses-maxsim" else [query])
    if name == "asked-bm25" and asked != query:
        return rankings.fused([rankings.bm25(asked), whole[1]], [query])
    if name == "asked-also" and asked != query:
        return rankings.fused([*whole, rankings.dense(asked)], [query])
    return rankings.fused(whole, [query])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="CASES.jsonl:CORPUS")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    retriever = Services.open().retriever
    report: dict[str, dict] = {}
    for spec in args.sets:
        path, corpus = spec.rsplit(":", 1)
        rows: dict[str, list[RetrievalRow]] = {name: [] for name in VARIANTS}
        for case in (c for c in load_cases(Path(path)) if c.answerable):
            query = standalone_query_fallback(case.question, case.history)
            clauses = [] if case.history else asked_clauses(case.question)
            asked = query if case.history else asked_part(case.question)
            rankings = Rankings(retriever, corpus)
            for name in VARIANTS:
                rows[name].append(score_case(case, variant(name, rankings, query, clauses, asked)))
        report[spec] = {name: {"summary": asdict(summarize(r)), "rows": [asdict(x) for x in r]} for name, r in rows.items()}
        for name, r in rows.items():
            s = summarize(r)
            print(
                f"{Path(path).stem:22s} {name:15s} R@1 {s.recall_page['@1']:.3f}  R@5 {s.recall_page['@5']:.3f}"
                f"  R@8 {s.recall_page['@8']:.3f}  anchor R@8 {s.recall_anchor['@8']:.3f}  MRR {s.mrr:.3f}",
                flush=True,
            )
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
