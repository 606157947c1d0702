"""What users asked, made into something a docs team can act on (``citedocs insights``, GET /admin/insights).

Read from the stored traces and feedback of one tenant (or all, for the operator's CLI) in a time
range, optionally of one corpus:

- questions per day, answered and refused by reason, answer latency p50/p95;
- feedback up/down with its comments;
- the most-cited pages and the pages never cited;
- **docs gaps**: refused questions (a backend failure is not a gap) and down-voted answers, grouped
  by topic: each question's salient words (``salient_text``: without English stop words, the words
  every docs question shares, and the corpus's name) are encoded by the bi-encoder (MiniLM) and
  clustered by scikit-learn's agglomerative clustering (average linkage over cosine distance, cut at
  ``GAP_DISTANCE``, so the number of groups follows the data). Whole questions group by their shared
  phrasing ("how do I ... my Astro site") as much as by their topic; their salient words do not.
  Each group names its size, three example questions, the refusal reasons, the
  terms the question gate found the docs never mention, and the page that came nearest without answering;
- **weak answers** (``weak_answers``): of the newest answers, those whose retrieval cleared the
  refusal margin (``min_retrieval_margin`` above the corpus's floor, as it was when answered) by
  less than ``insights_weak_margin``: answered, but close to a refusal, so worth a writer's look
  beside the refusals and the answers voted down;
- **answers a docs change affected**: past answers whose cited chunks changed (another content
  hash) or vanished since; a trace keeps each cited chunk's hash, so this is exact. (Traces
  written before hashes were kept can only show vanished chunks.)

The counts are aggregated by the database over the columns kept beside each trace (``TraceColumns``,
the ``trace_citations`` table), never over the JSON payloads (benchmarks/bench_insights.py times
100k traces on both stores); only the gap questions' payloads and kept vectors are read.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import numpy as np

from .index.store import CorpusInfo, Store, TraceFilter, TraceRow

# cosine distance at which two groups of questions stop merging (MiniLM vectors of their salient words):
# chosen on one hand-labelled set (evals/gaps-topics.jsonl) and checked on held-out ones,
# docs/benchmarks/insights.md
GAP_DISTANCE = 0.85
GAP_LINKAGE = "average"  # how the distance of two groups is measured (scikit-learn's linkage)
# Words any question to a docs assistant may use whatever its topic (beside English stop words):
# left in, they pull questions together by how they are asked ("best way to add ... to my site").
QUESTION_FILLER = frozenset(
    "way best recommended possible use using support supported add make build create set setup want need like "
    "help site website app application project page pages docs documentation does work works".split()
)
_WORD = re.compile(r"\w[\w.+#-]*")
SHARED_SHARE, SHARED_MIN_QUESTIONS = 0.5, 6
TOP_PAGES = 10
LISTED = 20  # never-cited pages, comments and affected answers listed (their counts are complete)
_MISSING = re.compile(r"the docs don't mention (.+?)\.?$")
_SINCE = re.compile(r"([0-9]+)([dhw])")


class InvalidRange(ValueError):
    pass


def parse_since(value: str, name: str = "since") -> datetime:
    """``7d``, ``24h``, ``2w`` (before now) or an ISO date/time (UTC unless it says otherwise);
    ``name`` (since, until) is what an error calls it. A value past what a date can hold (9999999999d,
    a zone that moves year 1 before year 1) is ``InvalidRange`` too, like any other bad value."""
    match = _SINCE.fullmatch(value.strip())
    try:
        if match:
            digits, unit = match.group(1).lstrip("0") or "0", match.group(2)
            amount = int(digits[:11])  # past ten digits any amount overflows (and int() refuses thousands)
            return datetime.now(timezone.utc) - timedelta(**{{"d": "days", "h": "hours", "w": "weeks"}[unit]: amount})
        moment = datetime.fromisoformat(value.strip())
        return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    except OverflowError:
        raise InvalidRange(f"{name} {value[:40]!r} is out of range: dates run from the year 1 to 9999; use a shorter duration (7d, 24h, 2w) or a date in that span") from None
    except ValueError:
        raise InvalidRange(
            f"{name} {value[:40]!r} is neither a duration (7d, 24h, 2w) nor an ISO date (2026-11-01); use one of those"
        ) from None


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def _page(chunk_id: str) -> str:
    """The page of a chunk id (``<page path>#<anchor>/<n>``)."""
    return chunk_id.split("#", 1)[0]


def salient_text(question: str, corpus: str = "", shared: frozenset[str] = frozenset()) -> str:
    """The words of a question that say what it is about: lowercased, without English stop words,
    ``QUESTION_FILLER``, the parts of the corpus's name and the ``shared`` words (``shared_words``: a
    product name most questions repeat says nothing about their topic). A question of nothing but
    such words, or in a script without spaces, is kept whole."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    generic = ENGLISH_STOP_WORDS | QUESTION_FILLER | shared | set(re.split(r"[-_.\s]+", corpus.lower()))
    kept = [word for word in _words(question) if word not in generic]
    return " ".join(kept) or " ".join(question.lower().split())


# labels of a docs site's host that name where it is hosted, not what it is
_HOSTING = frozenset("www docs doc en github gitlab readthedocs netlify vercel pages io".split())


def corpus_words(name: str, base_url: str = "") -> str:
    """The corpus's name and its site's name (the host's labels, less the top-level domain and
    hosting words: ``docs.astro.build`` gives ``astro``): what users call the product."""
    labels = (urlsplit(base_url).hostname or "").split(".")[:-1]
    return " ".join([name, *(label for label in labels if label not in _HOSTING)])


def shared_words(questions: list[str]) -> frozenset[str]:
    """The words more than ``SHARED_SHARE`` of the questions hold, once there are ``SHARED_MIN_QUESTIONS``
    (what TF-IDF's ``max_df`` drops): the product's name, "docs", whatever every question repeats."""
    if len(questions) < SHARED_MIN_QUESTIONS:
        return frozenset()
    counts = Counter(word for question in questions for word in set(_words(question)))
    return frozenset(word for word, n in counts.items() if n > SHARED_SHARE * len(questions))


def _words(question: str) -> list[str]:
    """Lowercased words; a lone Latin letter (the ``s`` of "what's", the ``t`` of "don't") is none."""
    words = (word.strip(".+#-") for word in _WORD.findall(question.lower()))
    return [word for word in words if not (len(word) == 1 and word.isascii())]


def missing_terms(payload: dict) -> list[str]:
    """The terms the question gate found the docs never mention (older traces: read from the reason)."""
    if payload.get("missing_terms"):
        return list(payload["missing_terms"])
    reason = str(payload.get("refusal_reason") or "")
    if not reason.startswith("question_terms_not_in_docs"):
        return []
    match = _MISSING.search(reason)
    return [t.strip() for t in match.group(1).split(",")] if match else []


@dataclass
class InsightsRange:
    tenant: str | None
    corpus: str | None
    since: datetime
    until: datetime | None = None  # None: up to now, this very second included

    def filter(self) -> TraceFilter:
        return TraceFilter(self.tenant, self.corpus, _iso(self.since), _iso(self.until) if self.until else "9999")

    def describe(self) -> dict:
        return {"since": _iso(self.since), "until": _iso(self.until or datetime.now(timezone.utc)), "corpus": self.corpus}


class Insights:
    """The report over one range; ``encode`` turns questions into unit vectors (the bi-encoder)."""

    def __init__(self, store: Store, corpora: list[CorpusInfo], encode, gap_limit: int, weak_margin: float = 0.05) -> None:
        self.store = store
        self.corpora = {c.name: c for c in corpora}  # what the caller may see now
        self.encode = encode
        self.gap_limit = gap_limit
        self.weak_margin = weak_margin
        self._titles: dict[tuple[str, str], dict] = {}
        self._chunk_hashes: dict[str, dict[str, str]] = {}

    def report(self, scope: InsightsRange, gaps: bool = True) -> dict:
        where = scope.filter()
        # one read of every section (and one catch-up of the traces an older citedocs wrote)
        rows = self.store.insights_rows(where, ("counts", "latencies", "citations", "feedback"))
        counts, citations = rows["counts"], rows["citations"]
        in_scope = [scope.corpus] if scope.corpus else sorted(self.corpora)
        report = {
            "range": scope.describe(),
            **self._counts(counts, rows["latencies"]),
            "feedback": self._feedback(rows["feedback"]),
            "pages": self._pages(citations, [c for c in in_scope if c in self.corpora]),
            "affected_answers": self._affected(citations, where),
            "removed_corpora": sorted({corpus for _, _, corpus, *_ in counts} - self.corpora.keys()),
        }
        if not counts:
            report["message"] = (
                f"no questions were asked between {report['range']['since']} and {report['range']['until']}"
                + (f" of corpus {scope.corpus!r}" if scope.corpus else "")
                + "; widen the range (--since 30d) or check the corpus name"
            )
        if gaps:
            report["gaps"] = self.gaps(where)
            report["weak_answers"] = self.weak_answers(where)
        return report

    # counts ------------------------------------------------------------------------------------
    @staticmethod
    def _counts(counts: list[tuple], latencies: list[tuple]) -> dict:
        days: dict[str, Counter] = defaultdict(Counter)
        reasons: Counter = Counter()
        for _, day, _, refused, reason, n in counts:
            days[day]["questions"] += n
            days[day]["refused" if refused else "answered"] += n
            if refused:
                reasons[reason or "unknown"] += n
        measured = np.array([r[0] for r in latencies], dtype=np.float64)
        total = sum(n for *_, n in counts)
        return {
            "questions": total,
            "answered": total - sum(reasons.values()),
            "refused": sum(reasons.values()),
            "per_day": [
                {"day": day, "questions": c["questions"], "answered": c["answered"], "refused": c["refused"]}
                for day, c in sorted(days.items())
            ],
            "refused_by_reason": dict(reasons.most_common()),
            "latency_ms": {
                "p50": round(float(np.percentile(measured, 50)), 1) if measured.size else None,
                "p95": round(float(np.percentile(measured, 95)), 1) if measured.size else None,
                "measured": int(measured.size),
            },
        }

    def _feedback(self, feedback: list[tuple]) -> dict:
        verdicts = Counter(f[1] for f in feedback)
        comments = [
            {"trace_id": trace_id, "verdict": verdict, "comment": comment, "created_at": at}
            for trace_id, verdict, comment, at in reversed(feedback)
            if (comment or "").strip()
        ]
        self._with_questions(comments[:LISTED])
        return {"up": verdicts["up"], "down": verdicts["down"], "comments": comments[:LISTED], "comment_count": len(comments)}

    def _with_questions(self, items: list[dict]) -> None:
        """Add each listed item's question (from its trace)."""
        payloads = self.store.trace_payloads(list({i["trace_id"] for i in items}))
        for item in items:
            item["question"] = payloads.get(item["trace_id"], {}).get("question", "")

    # pages -------------------------------------------------------------------------------------
    def _describe(self, corpus: str, page: str, chunk_id: str) -> dict:
        """A page with its title and URL (from one of its chunks, if the corpus still has it)."""
        key = (corpus, page)
        if key not in self._titles:
            chunks = self.store.get_chunks(corpus, [chunk_id]) if corpus in self.corpora else []
            described = {"corpus": corpus, "page": page, "title": page, "url": None}
            if chunks:
                described.update(title=chunks[0].title, url=chunks[0].url.split("#", 1)[0])
            self._titles[key] = described
        return dict(self._titles[key])

    def _pages(self, citations: list[tuple], corpora: list[str]) -> dict:
        cited: Counter = Counter()
        example: dict[tuple[str, str], str] = {}
        for _, corpus, chunk_id, _, n in citations:
            key = (corpus, _page(chunk_id))
            cited[key] += n
            example.setdefault(key, chunk_id)
        most = [{**self._describe(*key, example[key]), "citations": n} for key, n in cited.most_common(TOP_PAGES)]
        never: list[tuple[str, str, str]] = []
        for corpus in corpora:
            first: dict[str, str] = {}
            for chunk_id in sorted(self._hashes(corpus)):
                first.setdefault(_page(chunk_id), chunk_id)
            never += [(corpus, page, cid) for page, cid in first.items() if (corpus, page) not in cited]
        return {
            "most_cited": most,
            "never_cited": [self._describe(*item) for item in never[:LISTED]],
            "never_cited_count": len(never),
        }

    # answers a docs change affected --------------------------------------------------------------
    def _hashes(self, corpus: str) -> dict[str, str]:
        if corpus not in self._chunk_hashes:
            self._chunk_hashes[corpus] = self.store.chunk_hashes(corpus)
        return self._chunk_hashes[corpus]

    def _affected(self, citations: list[tuple], where: TraceFilter) -> dict:
        """The answers whose cited chunks are gone or read otherwise now (exact: each citation kept its
        chunk's hash; an older trace without hashes can only show a chunk that is gone), newest first.
        Only corpora the caller still has: a removed corpus is named as such, not as every answer it gave."""
        changed: dict[tuple[str, str], str] = {}  # (corpus, chunk id) -> "removed" | "changed"
        stale: set[tuple[str, str, str | None]] = set()
        for _, corpus, chunk_id, cited_hash, _ in citations:
            if corpus not in self.corpora:
                continue
            current = self._hashes(corpus).get(chunk_id)
            if current is None or (cited_hash is not None and current != cited_hash):
                changed[(corpus, chunk_id)] = "removed" if current is None else "changed"
                stale.add((corpus, chunk_id, cited_hash))
        answers: dict[str, dict] = {}
        for corpus in sorted({c for c, _ in changed}):
            ids = sorted(cid for c, cid in changed if c == corpus)
            for trace_id, created_at, chunk_id, cited_hash in self.store.citing_traces(where, corpus, ids):
                if (corpus, chunk_id, cited_hash) in stale:
                    answer = answers.setdefault(trace_id, {"trace_id": trace_id, "corpus": corpus, "created_at": created_at, "chunks": []})
                    answer["chunks"].append({"id": chunk_id, "change": changed[(corpus, chunk_id)]})
        listed = sorted(answers.values(), key=lambda a: (a["created_at"], a["trace_id"]), reverse=True)[:LISTED]
        self._with_questions(listed)
        return {"count": len(answers), "answers": listed}

    # docs gaps ---------------------------------------------------------------------------------
    def gaps(self, where: TraceFilter) -> dict:
        rows = self.store.insights_rows(where, ("gap_candidates",), self.gap_limit + 1)["gap_candidates"]
        candidates = [TraceRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows[: self.gap_limit]]
        down = {r[0] for r in rows if r[7]}
        # dismissed by an admin, or resolved by a sync: listed apart, no longer grouped
        marks = self.store.gap_marks([r.trace_id for r in candidates]) if candidates else {}
        considered = [r for r in candidates if r.trace_id not in marks]
        resolved = [
            {"trace_id": r.trace_id, "question": r.question, "corpus": r.corpus, "job_id": marks[r.trace_id][1], "at": marks[r.trace_id][2]}
            for r in candidates if marks.get(r.trace_id, ("",))[0] == "resolved"
        ]
        # more than the limit: the oldest are left out (the newest questions say most about the docs now)
        result = {
            "considered": len(considered), "more": len(rows) > self.gap_limit, "limit": self.gap_limit, "groups": [],
            "dismissed": sum(1 for state, *_ in marks.values() if state == "dismissed"),
            "resolved": resolved[:LISTED], "resolved_count": len(resolved),
        }  # fmt: skip
        if not considered:
            return result
        payloads = self.store.trace_payloads([r.trace_id for r in considered])
        by_text: dict[str, list[TraceRow]] = defaultdict(list)
        shared = shared_words(list({row.question for row in considered}))
        for row in considered:
            info = self.corpora.get(row.corpus)
            by_text[salient_text(row.question, corpus_words(row.corpus, info.base_url if info else ""), shared)].append(row)
        texts = list(by_text)
        labels = cluster_questions(self.encode(texts)) if len(texts) > 1 else [0]
        groups: dict[int, list[TraceRow]] = defaultdict(list)
        for text, label in zip(texts, labels):
            groups[label].extend(by_text[text])
        result["groups"] = sorted(
            (self._group(members, payloads, down) for members in groups.values()), key=lambda g: -g["size"]
        )
        return result

    def weak_answers(self, where: TraceFilter) -> dict:
        """The newest answers (at most the gap limit) whose best passage cleared the refusal margin
        by less than ``weak_margin``, closest to a refusal first. Read from each trace's payload: the
        confidence, the corpus's floor and the margin needed when it was answered."""
        rows = self.store.trace_rows(replace(where, outcome="answered"), self.gap_limit)
        payloads = self.store.trace_payloads([r.trace_id for r in rows]) if rows else {}
        weak = []
        for row in rows:
            payload = payloads.get(row.trace_id, {})
            confidence, floor = payload.get("retrieval_confidence"), payload.get("retrieval_floor")
            needed = (payload.get("thresholds") or {}).get("min_retrieval_margin")
            if confidence is None or floor is None or needed is None:
                continue  # an older trace, or an answer that never retrieved: nothing to measure
            cleared = confidence - floor - needed
            if cleared < self.weak_margin:
                weak.append({"trace_id": row.trace_id, "corpus": row.corpus, "created_at": row.created_at,
                             "question": row.question, "cleared_by": round(cleared, 4)})
        weak.sort(key=lambda a: a["cleared_by"])
        return {"considered": len(rows), "margin": self.weak_margin, "count": len(weak), "answers": weak[:LISTED]}

    def _group(self, members: list[TraceRow], payloads: dict[str, dict], down: set[str]) -> dict:
        reasons = Counter(r.reason for r in members if r.refused)
        down_voted = sum(1 for r in members if r.trace_id in down)
        terms: Counter = Counter()
        nearest: Counter = Counter()
        example_chunk: dict[tuple[str, str], str] = {}
        for row in members:
            payload = payloads.get(row.trace_id, {})
            terms.update(dict.fromkeys(missing_terms(payload), 1))
            retrieved = payload.get("retrieved") or []
            if retrieved:
                key = (row.corpus, _page(retrieved[0]["id"]))
                nearest[key] += 1
                example_chunk.setdefault(key, retrieved[0]["id"])
        examples = list(dict.fromkeys(r.question for r in members))[:3]
        top = nearest.most_common(1)
        return {
            "size": len(members),
            "examples": examples,
            "reasons": dict(reasons.most_common()) | ({"thumbs_down": down_voted} if down_voted else {}),
            "missing_terms": [t for t, _ in terms.most_common(5)],
            "nearest_page": self._describe(*top[0][0], example_chunk[top[0][0]]) if top else None,
            "trace_ids": [r.trace_id for r in members[:LISTED]],
        }


def cluster_questions(vectors: np.ndarray, distance: float = GAP_DISTANCE, linkage: str = GAP_LINKAGE) -> list[int]:
    """Topic labels for question vectors: agglomerative clustering over cosine distance (``linkage``:
    how far apart two groups are), cut where groups are ``distance`` apart."""
    if len(vectors) == 1:
        return [0]
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(n_clusters=None, distance_threshold=distance, metric="cosine", linkage=linkage)
    return [int(label) for label in model.fit_predict(vectors)]


def report_rows(report: dict) -> list[tuple[str, str, object, str]]:
    """The report flattened to (section, item, value, detail) rows: ``--csv`` and the terminal view."""
    rows: list[tuple[str, str, object, str]] = [
        ("totals", "questions", report["questions"], ""),
        ("totals", "answered", report["answered"], ""),
        ("totals", "refused", report["refused"], ""),
    ]
    rows += [("per_day", d["day"], d["questions"], f"answered {d['answered']}, refused {d['refused']}") for d in report["per_day"]]
    rows += [("refused_by_reason", reason, n, "") for reason, n in report["refused_by_reason"].items()]
    latency = report["latency_ms"]
    rows += [("latency_ms", p, latency[p], f"over {latency['measured']} answers") for p in ("p50", "p95")]
    feedback = report["feedback"]
    rows += [("feedback", "up", feedback["up"], ""), ("feedback", "down", feedback["down"], "")]
    rows += [("feedback_comment", c["verdict"], c["trace_id"], f"{c['comment']} (on: {c['question']})") for c in feedback["comments"]]
    pages = report["pages"]
    rows += [("most_cited", p["title"], p["citations"], p["url"] or p["page"]) for p in pages["most_cited"]]
    rows += [("never_cited", p["title"], "", p["url"] or p["page"]) for p in pages["never_cited"]]
    rows.append(("never_cited", "total", pages["never_cited_count"], ""))
    for group in (report.get("gaps") or {}).get("groups", []):
        nearest = group["nearest_page"]
        detail = "; ".join(
            part
            for part in (
                " | ".join(group["examples"]),
                "reasons: " + ", ".join(f"{r} {n}" for r, n in group["reasons"].items()),
                "docs never mention: " + ", ".join(group["missing_terms"]) if group["missing_terms"] else "",
                f"nearest page: {nearest['title']} ({nearest['url'] or nearest['page']})" if nearest else "",
            )
            if part
        )
        rows.append(("gap", group["examples"][0], group["size"], detail))
    weak = report.get("weak_answers") or {}
    rows += [
        ("weak_answer", a["question"], a["trace_id"], f"cleared the refusal margin by {a['cleared_by']:.3f} ({a['corpus']})")
        for a in weak.get("answers", [])
    ]
    affected = report["affected_answers"]
    rows += [
        ("affected_answer", a["question"], a["trace_id"], ", ".join(f"{c['id']} {c['change']}" for c in a["chunks"]))
        for a in affected["answers"]
    ]
    rows.append(("affected_answer", "total", affected["count"], ""))
    rows += [("removed_corpus", name, "", "traces of a corpus that no longer exists") for name in report["removed_corpora"]]
    return rows


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def _md(text: str) -> str:
    """User text as inert Markdown: specials escaped, no @mention, one line."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split())).replace("@", "@\u200b")


def gaps_markdown(report: dict) -> str:
    """The docs gaps and weak answers as a Markdown issue body a writer can paste into a tracker:
    one section a gap (its questions, why they were refused, what the docs never mention, the page
    nearest to answering), then the answers to review. Questions are user text: escaped, never markup."""
    span = report["range"]
    gaps = report.get("gaps") or {"groups": [], "considered": 0}
    lines = [
        f"## Docs gaps, {span['since'][:10]} to {span['until'][:10]}" + (f" ({_md(span['corpus'])})" if span.get("corpus") else ""),
        "",
        f"{len(gaps['groups'])} topics from {gaps['considered']} refused or down-voted questions.",
    ]
    for n, group in enumerate(gaps["groups"], start=1):
        lines += ["", f"### {n}. {_md(group['examples'][0])} ({group['size']} question{'s' if group['size'] != 1 else ''})", ""]
        lines += [f"- {_md(q)}" for q in group["examples"]]
        lines.append("")
        lines.append("Why: " + ", ".join(f"{reason.replace('_', ' ')} ({n})" for reason, n in group["reasons"].items()))
        if group["missing_terms"]:
            lines.append("The docs never mention: " + ", ".join(_md(t) for t in group["missing_terms"]))
        nearest = group.get("nearest_page")
        if nearest:
            where = f" <{nearest['url']}>" if nearest.get("url") else f" ({_md(nearest['page'])})"
            lines.append(f"Nearest page: {_md(nearest['title'])}{where}")
    weak = report.get("weak_answers") or {}
    if weak.get("answers"):
        lines += ["", f"## Answers to review ({weak['count']} answered close to a refusal)", ""]
        lines += [f"- {_md(a['question'])} (trace {a['trace_id']}, cleared by {a['cleared_by']:.3f})" for a in weak["answers"]]
    return "\n".join(lines) + "\n"


# LLM accounting ------------------------------------------------------------------------------------
def llm_spend(store: Store, where: TraceFilter) -> dict:
    """Tokens and cost of the LLM calls in range, in total and per day, corpus, tenant, provider and
    route, from each trace's ``llm_usage`` (generate/accounting.py). Read from the payloads, so
    it costs one payload read per trace in range."""
    rows = store.trace_rows(where)
    payloads = store.trace_payloads([r.trace_id for r in rows]) if rows else {}
    groups: dict[str, dict[str, dict]] = {"per_day": {}, "per_corpus": {}, "per_tenant": {}, "per_provider": {}, "per_route": {}}
    totals = _spend_row()
    for row in rows:
        payload = payloads.get(row.trace_id) or {}
        usage = payload.get("llm_usage")
        if not usage:
            continue
        keys = {
            "per_day": row.created_at[:10],
            "per_corpus": row.corpus,
            "per_tenant": str(payload.get("tenant") or "unknown"),
            "per_route": str(payload.get("route") or "default"),
        }
        for name, key in keys.items():
            _add_spend(groups[name].setdefault(key, _spend_row()), usage)
        for model in usage.get("by_model", []):
            _add_spend(groups["per_provider"].setdefault(f"{model['provider']} / {model['model']}", _spend_row()), model, calls=model["calls"])
        _add_spend(totals, usage)
    return {**totals, **{name: [{"key": k, **v} for k, v in sorted(g.items())] for name, g in groups.items()}}


def _spend_row() -> dict:
    return {"answers": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "estimated": False}


def _add_spend(row: dict, usage: dict, calls: int = 1) -> None:
    row["answers"] += calls
    row["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
    row["completion_tokens"] += int(usage.get("completion_tokens") or 0)
    row["cost_usd"] = round(row["cost_usd"] + float(usage.get("cost_usd") or 0.0), 8)
    row["estimated"] = row["estimated"] or bool(usage.get("estimated"))


def llm_spend_rows(spend: dict | None) -> list[tuple[str, str, object, str]]:
    """``llm_spend`` as (section, item, value, detail) rows, like ``report_rows``."""
    if not spend:
        return []
    detail = lambda r: f"{r['prompt_tokens']} prompt + {r['completion_tokens']} completion tokens" + (  # noqa: E731
        " (some estimated)" if r["estimated"] else ""
    )
    rows: list[tuple[str, str, object, str]] = [("llm_cost_usd", "total", spend["cost_usd"], detail(spend))]
    for name in ("per_day", "per_corpus", "per_tenant", "per_provider", "per_route"):
        rows += [(f"llm_cost_usd_{name}", r["key"], r["cost_usd"], detail(r)) for r in spend[name]]
    return rows
