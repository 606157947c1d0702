"""Human reports for an eval run: Markdown, and a self-contained HTML page with SVG charts.

The Markdown holds the questions and claims as written (it is also printed on the terminal); the HTML
page escapes everything it shows exactly once."""

from __future__ import annotations

from html import escape

METRIC_ROWS = (
    ("retrieval_recall@8", "retrieval recall@{top_k} (page)"),
    ("retrieval_anchor_recall@5", "retrieval recall@5 (anchor)"),
    ("mrr", "MRR"),
    ("cite_coverage", "cite-coverage"),
    ("cite_correctness", "cite-correctness (lexical judge)"),
    ("cite_correctness_llm", "cite-correctness (LLM judge)"),
    ("judge_agreement", "LLM / lexical judge agreement"),
    ("invented_citation_rate", "invented-citation rate"),
    ("refusal_precision", "refusal precision"),
    ("refusal_recall", "refusal recall"),
    ("refusal_f1", "refusal F1"),
    ("keyword_correctness", "keyword correctness (answered)"),
)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _metric_rows(summary: dict) -> list[tuple[str, str]]:
    """METRIC_ROWS labelled with the run's real k: ``retrieval_recall@8`` of a run that retrieved 6
    chunks per case is recall at 6 (the key stays, for the gates that name it)."""
    top_k = summary.get("top_k", "top_k")
    return [(key, label.format(top_k=top_k)) for key, label in METRIC_ROWS]


def render_markdown(summary: dict, rows: list[dict]) -> str:
    overall, buckets = summary["overall"], summary["buckets"]
    config = summary["config"]
    lines = [
        f"# citedocs eval: {summary['dataset']}",
        "",
        f"backend `{config['backend']}` · model `{config['model']}` · prompt `{config['prompt_version']}` · "
        f"config {config['hash']} · dataset {summary['dataset_hash']} · corpus {summary['corpus_version']}",
        "",
        "| metric | overall | " + " | ".join(buckets) + " |",
        "|---|---|" + "---|" * len(buckets),
    ]
    for key, label in _metric_rows(summary):
        lines.append(f"| {label} | {_fmt(overall.get(key))} | " + " | ".join(_fmt(b.get(key)) for b in buckets.values()) + " |")
    refusal = overall["refusal"]
    lines += [
        "",
        "## Refusals (positive class: refuse)",
        "",
        "| | refused | answered |",
        "|---|---|---|",
        f"| should refuse | {refusal['tp']} (TP) | {refusal['fn']} (FN) |",
        f"| should answer | {refusal['fp']} (FP) | {refusal['tn']} (TN) |",
        "",
        "## Latency (ms)",
        "",
        "| stage | p50 | p95 |",
        "|---|---|---|",
    ]
    for stage, values in sorted(overall["latency_ms"].items()):
        lines.append(f"| {stage} | {values['p50']:.0f} | {values['p95']:.0f} |")
    if summary.get("baseline_comparison"):
        lines += ["", "## Against baseline", "", "| metric | baseline | now | delta |", "|---|---|---|---|"]
        for item in summary["baseline_comparison"]:
            delta = "n/a" if item["delta"] is None else f"{item['delta']:+.3f}"
            lines.append(f"| {item['metric']} | {_fmt(item['baseline'])} | {_fmt(item['current'])} | {delta} |")
    disagreements = [
        (row["case_id"], v) for row in rows for v in row.get("claim_verdicts", []) if "llm_entailed" in v and v["llm_entailed"] != v["entailed"]
    ]
    if any("llm_entailed" in v for row in rows for v in row.get("claim_verdicts", [])):
        lines += ["", f"## Judges disagree ({len(disagreements)} claims)", ""]
        for case_id, v in disagreements[:12]:
            p = "n/a" if v["llm_p_backed"] is None else f"{v['llm_p_backed']:.2f}"
            lines.append(
                f"- `{case_id}` lexical {'yes' if v['entailed'] else 'no'}, LLM {'yes' if v['llm_entailed'] else 'no'} "
                f"(P {p}): {v['claim'][:160]} [{', '.join(v['ids'])}]"
            )
    failing = [r for r in rows if not all(r["pass"].values())]
    lines += ["", f"## Failing cases ({len(failing)})", ""]
    for row in failing:
        failed = ", ".join(k for k, ok in row["pass"].items() if not ok)
        lines.append(f"- `{row['case_id']}` ({row['bucket']}): {failed} — {row['question'][:120]}")
    return "\n".join(lines) + "\n"


def _bars(title: str, values: dict[str, float | None], width: int = 520) -> str:
    height = 24 * len(values) + 30
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{escape(title)}">']
    parts.append(f'<text x="0" y="14" font-weight="bold">{escape(title)}</text>')
    for n, (label, value) in enumerate(values.items()):
        y = 24 + n * 24
        bar = 0 if value is None else max(0.0, min(1.0, value)) * (width - 240)
        parts.append(f'<text x="0" y="{y + 13}" font-size="12">{escape(label)}</text>')
        parts.append(f'<rect x="160" y="{y}" width="{bar:.1f}" height="16" fill="#3b6fd8"/>')
        parts.append(f'<text x="{165 + bar:.1f}" y="{y + 13}" font-size="12">{_fmt(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(summary: dict, rows: list[dict]) -> str:
    charts = []
    for key, label in _metric_rows(summary):
        values = {"overall": summary["overall"].get(key)} | {b: s.get(key) for b, s in summary["buckets"].items()}
        charts.append(_bars(label, values))
    latency = summary["overall"]["latency_ms"]
    total = max((v["p95"] for v in latency.values()), default=1) or 1
    charts.append(_bars("latency p50 / slowest p95 (ms, share)", {s: v["p50"] / total for s, v in latency.items()}))
    body = "\n".join(f"<section>{chart}</section>" for chart in charts)
    markdown = escape(render_markdown(summary, rows))
    return (
        "<!doctype html><html lang='en'><meta charset='utf-8'><title>citedocs eval</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:60rem}section{margin:1rem 0}"
        "pre{background:#f5f5f5;padding:1rem;overflow:auto}</style>"
        f"<h1>citedocs eval</h1>{body}<h2>Report</h2><pre>{markdown}</pre></html>"
    )
