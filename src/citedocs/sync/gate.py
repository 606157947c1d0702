"""The docs release gate of a sync: a new docs version goes live only if it keeps answer quality.

A corpus whose source names an eval file and floors (``citedocs sources set --eval FILE --floor
metric=value``) is synced in three steps:

1. the new docs are ingested into a candidate corpus beside the live one (``<corpus>--candidate``,
   owned by the reserved tenant ``citedocs-gate``, so no tenant's key sees it): it is first brought
   to the live version by copying the chunks that differ (vectors included, nothing re-embedded),
   so only the changed docs are embedded;
2. the eval runs on the candidate and on the live version, with the deterministic extractive
   backend (the same figures every time);
3. if every floor holds on the candidate, its chunks that differ are copied to the live corpus in
   one transaction (the usual atomic switch); otherwise the job ends ``held`` and the live version
   keeps serving, with both versions' figures in the report.

The candidate is kept between syncs, so the next one is incremental too.
"""

from __future__ import annotations

from pathlib import Path

from ..eval.cases import load_cases
from ..eval.harness import run_eval
from ..index.store import CorpusInfo, IngestChanges, Store
from ..service import Services

GATE_TENANT = "citedocs-gate"
CANDIDATE_SUFFIX = "--candidate"


def candidate_name(corpus: str) -> str:
    return corpus + CANDIDATE_SUFFIX


def mirror(store: Store, source: str, target: str, info: CorpusInfo) -> int:
    """Make ``target`` hold ``source``'s chunks and documents, writing only what differs, in one
    transaction whose corpus row is ``info``; the number of chunks written."""
    wanted = dict(store.chunk_hashes(source))
    have = store.chunk_hashes(target)
    changed = {cid for cid, h in wanted.items() if have.get(cid) != h}
    chunks = [(chunk, vectors) for chunk, vectors in store.export_chunks(source) if chunk.id in changed]
    documents = store.documents(source)
    existing = store.documents(target)
    store.apply_ingest(
        IngestChanges(
            corpus=info,
            upsert_chunks=chunks,
            delete_chunk_ids=[cid for cid in have if cid not in wanted],
            upsert_documents=[d for p, d in documents.items() if existing.get(p) != d],
            delete_document_paths=[p for p in existing if p not in documents],
        )
    )
    return len(chunks)


def figures(services: Services, eval_file: Path, corpus: str, progress=None) -> dict[str, float]:
    """The eval's overall figures on ``corpus`` (extractive backend: deterministic)."""
    judge = Services(store=services.store, backend="extractive")
    judge.__dict__["encoder"] = services.encoder  # one bi-encoder per process
    run = run_eval(load_cases(eval_file), eval_file, judge, corpus, progress)
    return {k: v for k, v in run.summary["overall"].items() if isinstance(v, (int, float))}


def judge_release(floors: dict[str, float], candidate: dict[str, float], live: dict[str, float] | None) -> tuple[bool, list[str]]:
    """Whether every floor holds on the candidate, and one line per floor with both versions' figures."""
    ok, lines = True, []
    for metric, floor in sorted(floors.items()):
        value = candidate.get(metric)
        holds = value is not None and value >= floor
        ok &= holds
        before = "n/a" if not live or live.get(metric) is None else f"{live[metric]:.3f}"
        now = "n/a" if value is None else f"{value:.3f}"
        lines.append(f"{metric}: new {now} (live {before}), floor {floor:.3f}: {'holds' if holds else 'FAILS'}")
    return ok, lines
