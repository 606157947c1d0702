"""Retrieval metrics over answerable eval cases.

A page-level hit is a retrieved chunk from an expected source file (all of them when the case
``requires_all``). An anchor-level hit is a retrieved chunk inside the expected section, i.e. the
expected anchor is on the chunk's anchor path; a source without an anchor counts at page level.
"""

from __future__ import annotations

import math
import tomllib
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..retrieve.hybrid import RetrievalConfig
from ..retrieve.rewrite import standalone_query_fallback
from ..types import Chunk
from .cases import EvalCase

if TYPE_CHECKING:
    from ..service import Services

KS = (1, 5, 8)
# name on the command line -> (first-stage mode, rerank)
RETRIEVAL_MODES = {
    "bm25": ("bm25", False),
    "dense": ("dense", False),
    "hybrid": ("hybrid", False),
    "hybrid+rerank": ("hybrid", True),
}
GATED_MODE = "hybrid+rerank"  # what /ask retrieves with; gate floors apply to it


def _source_hit(chunk: Chunk, path: str, anchor: str | None, anchor_level: bool) -> bool:
    if chunk.doc_path != path:
        return False
    return not anchor_level or anchor is None or anchor in chunk.anchor_path


def covered_at(case: EvalCase, ranked: list[Chunk], anchor_level: bool) -> int | None:
    """1-based rank at which the case's expected sources are covered, or None."""
    expected = case.expected()
    found: dict[int, int] = {}
    for rank, chunk in enumerate(ranked, start=1):
        for n, (path, anchor) in enumerate(expected):
            if n not in found and _source_hit(chunk, path, anchor, anchor_level):
                found[n] = rank
        if case.requires_all and len(found) == len(expected):
            return max(found.values())
        if not case.requires_all and found:
            return min(found.values())
    return None


def ndcg(case: EvalCase, ranked: list[Chunk], k: int) -> float:
    """Binary-gain nDCG where each expected source earns credit once (repeats from one page don't)."""
    expected = case.expected()
    credited: set[int] = set()
    dcg = 0.0
    for rank, chunk in enumerate(ranked[:k], start=1):
        for n, (path, anchor) in enumerate(expected):
            if n not in credited and _source_hit(chunk, path, anchor, anchor_level=False):
                credited.add(n)
                dcg += 1.0 / math.log2(rank + 1)
                break
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(expected), k) + 1))
    return dcg / ideal if ideal else 0.0


@dataclass(frozen=True)
class RetrievalRow:
    case_id: str
    bucket: str
    page_rank: int | None
    anchor_rank: int | None
    ndcg8: float
    retrieved: list[str]


@dataclass(frozen=True)
class RetrievalSummary:
    n: int
    recall_page: dict[str, float]  # "@1", "@5", "@8"
    recall_anchor: dict[str, float]
    mrr: float
    ndcg8: float


def score_case(case: EvalCase, ranked: list[Chunk]) -> RetrievalRow:
    return RetrievalRow(
        case_id=case.id,
        bucket=case.bucket,
        page_rank=covered_at(case, ranked, anchor_level=False),
        anchor_rank=covered_at(case, ranked, anchor_level=True),
        ndcg8=ndcg(case, ranked, 8),
        retrieved=[c.id for c in ranked],
    )


def summarize(rows: list[RetrievalRow]) -> RetrievalSummary:
    n = len(rows)

    def recall(attr: str, k: int) -> float:
        return sum(1 for r in rows if (getattr(r, attr) or math.inf) <= k) / n if n else 0.0

    return RetrievalSummary(
        n=n,
        recall_page={f"@{k}": recall("page_rank", k) for k in KS},
        recall_anchor={f"@{k}": recall("anchor_rank", k) for k in KS},
        mrr=sum(1.0 / r.page_rank for r in rows if r.page_rank) / n if n else 0.0,
        ndcg8=sum(r.ndcg8 for r in rows) / n if n else 0.0,
    )


def summarize_by_bucket(rows: list[RetrievalRow]) -> dict[str, dict]:
    buckets: dict[str, list[RetrievalRow]] = defaultdict(list)
    for row in rows:
        buckets[row.bucket].append(row)
    out = {"all": asdict(summarize(rows))}
    out.update({b: asdict(summarize(rs)) for b, rs in sorted(buckets.items())})
    return out


def run_retrieval_eval(cases: list[EvalCase], services: Services, corpus: str, mode: str) -> list[RetrievalRow]:
    """One row per answerable case: its question (a follow-up with its history folded in, as the
    extractive pipeline does without an LLM) retrieved at k = 8 in ``mode``."""
    retrieval_mode, rerank = RETRIEVAL_MODES[mode]
    settings = RetrievalConfig(mode=retrieval_mode, rerank=rerank)
    rows = []
    for case in (c for c in cases if c.answerable):
        query = standalone_query_fallback(case.question, case.history)
        result = services.retriever.retrieve(corpus, query, max(KS), settings)
        rows.append(score_case(case, [h.chunk for h in result.hits]))
    return rows


# gate keys under [retrieval.min] -> (summary field, k)
_FLOOR_KEYS = {f"{level}_recall@{k}": (f"recall_{level}", f"@{k}") for level in ("page", "anchor") for k in KS}
_FLOOR_KEYS |= {"mrr": ("mrr", None), "ndcg@8": ("ndcg8", None)}


def check_retrieval_floors(summary: dict, gate_path: Path) -> list[str]:
    """Failures of ``summary`` (a ``summarize`` result as a dict, all cases) against the
    ``[retrieval.min]`` floors of a gate file; an empty list means it holds. An unknown key, or no
    floor at all, is a failure too, so a typo or a missing table cannot switch the gate off."""
    gate = tomllib.loads(gate_path.read_text(encoding="utf-8"))
    floors = gate.get("retrieval", {}).get("min", {})
    if not floors:
        return [f"{gate_path.name} has no [retrieval.min] floors; record the ones this run measured"]
    failures = []
    for key, bound in floors.items():
        if key not in _FLOOR_KEYS:
            failures.append(f"{gate_path.name}: unknown retrieval floor {key!r} (known: {', '.join(_FLOOR_KEYS)})")
            continue
        field, k = _FLOOR_KEYS[key]
        value = summary[field][k] if k else summary[field]
        if value < bound:
            failures.append(f"{GATED_MODE} {key} = {value:.3f} is below the gate's minimum {bound}")
    return failures
