"""Labelled examples for the reader: positives, hard negatives and unanswerable-by-construction questions.

From every generated question (``generate_questions.py``) that survives the filters:

* **round-trip**: citedocs' own retrieval (hybrid + rerank, the /ask default) must return the source
  passage in its top ``ROUND_TRIP_K``; otherwise the question is not about its passage;
* **not the heading restated**: a question whose content words all occur in the page title and
  headings of its passage is answerable from the title alone, and is dropped;

it makes

* a **positive**: the question over the whole corpus, the source passage and its answer unit;
* **hard negatives**: the passages retrieved above or near the source that do not hold the answer
  unit; guarded against false negatives by an overlap rule: a passage holding more than
  ``FALSE_NEGATIVE_OVERLAP`` of the answer unit's content words is not called a negative;
* an **unanswerable** example: the same question with the source passage and its near-duplicates
  (any chunk holding the answer unit, or sharing ``NEAR_DUPLICATE_JACCARD`` of its words) removed
  from what retrieval returns.

``--structure N`` adds, as a supplement, N section headings per corpus as questions (labelled
``source: structure``). ``--cases FILE:CORPUS`` adds a hand-written case file's questions with their
own labels (``should_refuse``); pass held-out files with ``--split heldout`` so training never reads them.

    CITEDOCS_HOME=DIR python scripts/reader/build_labels.py --questions data/reader/questions.jsonl \
        --structure 60 --corpus flask --corpus vitepress --corpus mkdocs-material --out data/reader/examples.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from features import NAMES, TOP_K, features, jaccard, terms  # noqa: E402

from citedocs.retrieve.hybrid import RetrievalConfig  # noqa: E402
from citedocs.retrieve.null_level import NullLevels  # noqa: E402
from citedocs.service import Services  # noqa: E402

ROUND_TRIP_K = TOP_K  # the source must be among the evidence an answer is made from
NEAR_DUPLICATE_JACCARD = 0.5
FALSE_NEGATIVE_OVERLAP = 0.6
CANDIDATES = 20  # RetrievalConfig.rerank_depth: every candidate the reranker scores, as /ask retrieves them
SEED = 20261128


class Labeller:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.floors = NullLevels(services.retriever)

    def floor(self, corpus: str) -> float:
        return self.floors.level(corpus, self.services.store.get_corpus(corpus).version)

    def retrieve(self, corpus: str, question: str):
        return self.services.retriever.retrieve(corpus, question, CANDIDATES, RetrievalConfig()).hits

    def example(self, split: str, source: str, corpus: str, question: str, answerable: bool, hits, **extra) -> dict:
        vector = features(question, hits, self.floor(corpus))
        return {"split": split, "source": source, "corpus": corpus, "question": question, "answerable": answerable,
                "features": dict(zip(NAMES, vector)), "retrieved": [h.chunk.id for h in hits[:TOP_K]], **extra}

    def pair(self, source: str, corpus: str, question: str, source_id: str, answer_unit: str, headings: str) -> list[dict] | str:
        """The positive and the unanswerable-by-construction example of one question, or why it was dropped."""
        asked = set(terms(question))
        if not asked or asked <= set(terms(headings)):
            return "restates_heading"
        hits = self.retrieve(corpus, question)
        if source_id not in [h.chunk.id for h in hits[:ROUND_TRIP_K]]:
            return "round_trip"
        answer_terms = set(terms(answer_unit))
        source_chunk = next(h.chunk for h in hits if h.chunk.id == source_id)
        source_terms = terms(source_chunk.text)

        def duplicate(chunk) -> bool:
            return answer_unit in chunk.text or jaccard(terms(chunk.text), source_terms) >= NEAR_DUPLICATE_JACCARD

        def may_answer(chunk) -> bool:
            return bool(answer_terms) and len(answer_terms & set(terms(chunk.text))) / len(answer_terms) > FALSE_NEGATIVE_OVERLAP

        negatives = [h.chunk.id for h in hits[:ROUND_TRIP_K] if h.chunk.id != source_id and not may_answer(h.chunk)]
        removed = [h for h in hits if not duplicate(h.chunk)]
        common = {"source_chunk": source_id, "answer_unit": answer_unit}
        return [
            self.example("train", source, corpus, question, True, hits, hard_negatives=negatives, **common),
            self.example("train", source, corpus, question, False, removed, removed_chunks=len(hits) - len(removed), **common),
        ]


def structure_questions(services: Services, corpus: str, count: int) -> list[tuple[str, str, str, str]]:
    """(question, chunk id, first prose unit, headings) of ``count`` sections whose heading is a phrase."""
    ids = sorted(services.store.chunk_hashes(corpus))
    random.Random(f"{SEED}:structure:{corpus}").shuffle(ids)
    out = []
    for chunk in services.store.get_chunks(corpus, ids):
        heading = chunk.section
        if len(terms(heading)) >= 2 and heading != chunk.title and chunk.text.strip():
            first = next((line for line in chunk.text.splitlines() if len(terms(line)) >= 5), "")
            if first:
                out.append((heading, chunk.id, first, chunk.title))
        if len(out) >= count:
            break
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, help="generate_questions.py's JSONL")
    parser.add_argument("--corpus", action="append", default=[], help="corpora for --structure (repeat)")
    parser.add_argument("--structure", type=int, default=0, help="section headings per corpus as a supplement")
    parser.add_argument("--cases", action="append", default=[], help="CASES.jsonl:CORPUS, labelled by should_refuse")
    parser.add_argument("--split", default="train", choices=["train", "heldout"], help="the split --cases rows get")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    services = Services.open(backend="extractive")
    labeller = Labeller(services)
    rows, dropped = [], {}
    if args.questions:
        for record in map(json.loads, args.questions.read_text(encoding="utf-8").splitlines()):
            headings = " ".join((record["title"], *record["heading_path"]))
            made = labeller.pair("generated", record["corpus"], record["question"], record["chunk_id"], record["answer_unit"], headings)
            if isinstance(made, str):
                dropped[made] = dropped.get(made, 0) + 1
            else:
                rows += made
    for corpus in args.corpus:
        for heading, chunk_id, first, title in structure_questions(services, corpus, args.structure):
            made = labeller.pair("structure", corpus, heading, chunk_id, first, title)
            if isinstance(made, str):
                dropped[f"structure_{made}"] = dropped.get(f"structure_{made}", 0) + 1
            else:
                rows += made
    for spec in args.cases:
        path, corpus = spec.rsplit(":", 1)
        for case in map(json.loads, Path(path).read_text(encoding="utf-8").splitlines()):
            if case.get("history"):
                continue  # a follow-up is asked after a rewrite; the head reads single questions
            hits = labeller.retrieve(corpus, case["question"])
            rows.append(labeller.example(args.split, Path(path).stem, corpus, case["question"], not case["should_refuse"], hits, case_id=case["id"]))
    with args.out.open("a", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} examples written to {args.out}; dropped: {dropped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
