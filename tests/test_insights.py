"""Insights: what users asked, turned into counts, docs gaps and answers a docs change affected, on
both stores, over real answers (extractive backend) to real Astro pages; never across tenants."""

from __future__ import annotations

import json
import sqlite3

import pytest

from citedocs.contract import AskRequest
from citedocs.index.sqlite import SQLiteStore
from citedocs.index.store import INSIGHTS_SQL, CorpusInfo, TraceFilter
from citedocs.insights import InvalidRange
from citedocs.service import Services

from conftest import ASTRO_BASE_URL, BACKENDS, copy_astro_pages, open_services, stored_rows

ACME, GLOBEX = "acme-docs", "globex-docs"
ACME_PAGES = ("guides/deploy/heroku.mdx", "recipes/add-yaml-support.mdx")
GLOBEX_PAGES = ("reference/errors/missing-sharp.mdx", "guides/backend/index.mdx")
ANSWERED = ("How do I deploy my Astro site to Heroku?", "How do I install a Vite plugin in Astro?")
KUBERNETES = (
    "How do I configure Kubernetes autoscaling for my Astro pods?",
    "Can I run Astro on Kubernetes with Helm charts?",
    "How do I deploy Astro to a Kubernetes cluster?",
)
STRIPE = ("How do I take Stripe payments in Astro?", "How do I refund a Stripe charge?")


def ask(services: Services, question: str, corpus: str) -> str:
    return services.ask(AskRequest(question=question, corpus=corpus)).trace_id


@pytest.fixture(scope="module")
def history(request, store_backend, tmp_path_factory):
    """Two tenants' corpora; acme's users asked answerable and unanswerable questions and voted."""
    home = tmp_path_factory.mktemp("insights-home")
    services = open_services(request, store_backend, home, "insights", backend="extractive")
    services.ingest(copy_astro_pages(home / "acme", ACME_PAGES), ACME, ASTRO_BASE_URL, tenant="acme")
    services.ingest(copy_astro_pages(home / "globex", GLOBEX_PAGES), GLOBEX, ASTRO_BASE_URL, tenant="globex")
    ids = {q: ask(services, q, ACME) for q in (*ANSWERED, *KUBERNETES, *STRIPE)}
    ids["globex"] = ask(services, "How do I use Kubernetes secrets with Astro?", GLOBEX)
    services.add_feedback(ids[ANSWERED[0]], "up", None)
    services.add_feedback(ids[ANSWERED[1]], "down", "it never says where the plugin config goes")
    yield services, ids
    services.store.close()


both_stores = pytest.mark.parametrize("store_backend", BACKENDS, scope="module")


@both_stores
def test_insights_count_questions_per_day_refusals_by_reason_and_latency(history):
    services, _ = history
    report = services.insights("acme")
    assert (report["questions"], report["answered"], report["refused"]) == (7, 2, 5)
    assert sum(report["refused_by_reason"].values()) == 5
    assert "question_terms_not_in_docs" in report["refused_by_reason"]
    assert [d["questions"] for d in report["per_day"]] == [7]
    latency = report["latency_ms"]
    assert latency["measured"] == 7 and 0 < latency["p50"] <= latency["p95"]


@both_stores
def test_feedback_is_counted_and_its_comments_name_the_question(history):
    services, _ = history
    feedback = services.insights("acme", gaps=False)["feedback"]
    assert (feedback["up"], feedback["down"]) == (1, 1)
    [comment] = feedback["comments"]
    assert comment["comment"] == "it never says where the plugin config goes" and comment["question"] == ANSWERED[1]


@both_stores
def test_most_cited_and_never_cited_pages_are_named_with_titles_and_urls(history):
    services, _ = history
    pages = services.insights("acme", gaps=False)["pages"]
    cited = {p["page"]: p for p in pages["most_cited"]}
    assert set(cited) == {"guides/deploy/heroku", "recipes/add-yaml-support"}
    assert cited["guides/deploy/heroku"]["title"] == "Deploy your Astro Site to Heroku"
    assert cited["guides/deploy/heroku"]["url"] == ASTRO_BASE_URL.rstrip("/") + "/guides/deploy/heroku/"
    assert pages["never_cited_count"] == 0  # acme's two pages both answered; globex's pages are not acme's


@both_stores
def test_refused_questions_group_by_topic_with_the_terms_the_docs_never_mention(history):
    services, ids = history
    groups = services.insights("acme")["gaps"]["groups"]
    by_question = {q: g for g in groups for q in g["examples"]}
    kubernetes = by_question[KUBERNETES[0]]
    assert set(KUBERNETES) == set(kubernetes["examples"]) and kubernetes["size"] == 3
    assert "Kubernetes" in kubernetes["missing_terms"]
    assert kubernetes["nearest_page"]["corpus"] == ACME and kubernetes["nearest_page"]["title"]
    stripe = by_question[STRIPE[0]]
    assert stripe is not kubernetes and set(stripe["examples"]) == set(STRIPE)
    assert sum(stripe["reasons"].values()) == 2  # refused before the gate looked for the terms (weak retrieval)
    down_voted = by_question[ANSWERED[1]]
    assert down_voted["reasons"] == {"thumbs_down": 1}
    assert ANSWERED[0] not in by_question  # an answer voted up is no gap
    assert all(ids["globex"] not in g["trace_ids"] for g in groups)


@both_stores
def test_a_tenant_sees_only_its_own_questions_pages_and_gaps(history):
    services, ids = history
    report = services.insights("globex")
    assert report["questions"] == 1
    assert {p["corpus"] for p in report["pages"]["never_cited"]} == {GLOBEX}
    assert [g["trace_ids"] for g in report["gaps"]["groups"]] == [[ids["globex"]]]
    assert all(q not in json.dumps(report) for q in (*ANSWERED, *KUBERNETES, *STRIPE))
    assert services.insights("initech")["questions"] == 0


@both_stores
def test_a_range_with_no_traces_says_so_and_still_lists_the_pages(history):
    services, _ = history
    report = services.insights("acme", since="2020-01-01", until="2020-02-01")
    assert report["questions"] == 0 and report["per_day"] == [] and report["gaps"]["groups"] == []
    assert report["latency_ms"] == {"p50": None, "p95": None, "measured": 0}
    assert "no questions were asked between 2020-01-01" in report["message"]
    assert report["pages"]["never_cited_count"] == 2


@both_stores
def test_an_unreadable_range_is_explained(history):
    services, _ = history
    with pytest.raises(InvalidRange, match=r"neither a duration \(7d, 24h, 2w\) nor an ISO date"):
        services.insights("acme", since="last tuesday")


@both_stores
def test_answers_a_docs_change_affected_are_listed_exactly(request, store_backend, tmp_path):
    services = open_services(request, store_backend, tmp_path, "affected", backend="extractive")
    try:
        docs = copy_astro_pages(tmp_path / "docs", ACME_PAGES)
        services.ingest(docs, ACME, ASTRO_BASE_URL)
        heroku, plugin = (ask(services, q, ACME) for q in ANSWERED)
        untouched = services.trace(heroku)["cited_ids"]
        assert services.insights(None, gaps=False)["affected_answers"]["count"] == 0
        page = docs / "guides/deploy/heroku.mdx"
        text = page.read_text()
        head, body = text.split("## How to deploy", 1)
        page.write_text(head.rstrip() + "\n\nHeroku's free plan ended in 2022.\n\n## How to deploy" + body)
        (docs / "recipes/add-yaml-support.mdx").unlink()
        services.ingest(docs, ACME, ASTRO_BASE_URL)
        affected = services.insights(None, gaps=False)["affected_answers"]
        assert affected["count"] == 2
        changes = {a["trace_id"]: {c["id"]: c["change"] for c in a["chunks"]} for a in affected["answers"]}
        assert changes[heroku] == {"guides/deploy/heroku#/1": "changed"} and "guides/deploy/heroku#/1" in untouched
        assert set(changes[plugin].values()) == {"removed"}
        assert set(changes[plugin]) == set(services.trace(plugin)["cited_ids"])
    finally:
        services.store.close()


@both_stores
def test_a_corpus_removed_since_its_traces_is_named_not_reported_as_changed(request, store_backend, tmp_path):
    services = open_services(request, store_backend, tmp_path, "removed")
    try:
        gone = CorpusInfo("old-docs", ASTRO_BASE_URL, "/nowhere", "v1", "p", 1, "2026-01-01T00:00:00+00:00", "acme")
        services.store.save_trace("t-old", gone, "2026-11-01T00:00:00+00:00", {
            "question": "How do I deploy?", "refused": False, "cited_ids": ["deploy#/1"], "cited_hashes": {"deploy#/1": "abc"},
            "latency_ms": {"total": 12.0},
        })
        report = services.insights("acme", since="2026-10-01", gaps=False)
        assert report["removed_corpora"] == ["old-docs"] and report["questions"] == 1
        assert report["affected_answers"]["count"] == 0
        assert report["pages"]["most_cited"] == [
            {"corpus": "old-docs", "page": "deploy", "title": "deploy", "url": None, "citations": 1}
        ]
        assert services.insights("globex", since="2026-10-01", gaps=False)["removed_corpora"] == []
    finally:
        services.store.close()


# The traces table and payload of the release before insights: no summary columns, no citation
# table, no cited_hashes or missing_terms in the payload.
OLD_TRACES = """
CREATE TABLE traces (trace_id TEXT PRIMARY KEY, corpus TEXT NOT NULL, created_at TEXT NOT NULL, payload TEXT NOT NULL,
                     tenant TEXT NOT NULL DEFAULT 'default');
CREATE TABLE feedback (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL REFERENCES traces(trace_id), verdict TEXT NOT NULL,
                       comment TEXT, created_at TEXT NOT NULL);
"""
OLD_REFUSAL = {
    "question": "How do I use Kubernetes with Astro?",
    "refused": True,
    "refusal_reason": "question_terms_not_in_docs: the docs don't mention Kubernetes.",
    "cited_ids": [],
    "retrieved": [{"id": "guides/deploy/heroku#/1", "score": 0.1}],
    "latency_ms": {"total": 40.0},
}
OLD_ANSWER = {
    "question": "How do I deploy to Heroku?",
    "refused": False,
    "refusal_reason": None,
    "cited_ids": ["guides/deploy/heroku#/1", "guides/deploy/heroku#gone/1"],
    "latency_ms": {"total": 900.0},
}


def test_traces_written_by_an_older_citedocs_are_summarised_and_read(tmp_path):
    path = tmp_path / "citedocs.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_TRACES)
        for trace_id, payload in (("old-refusal", OLD_REFUSAL), ("old-answer", OLD_ANSWER)):
            db.execute("INSERT INTO traces VALUES (?, 'acme-docs', '2026-11-20T10:00:00+00:00', ?, 'acme')",
                       (trace_id, json.dumps(payload)))
        db.execute("INSERT INTO feedback (trace_id, verdict, comment, created_at) VALUES ('old-answer', 'down', 'stale', '2026-11-20')")
    services = Services(store=SQLiteStore(path), backend="extractive")
    try:
        docs = copy_astro_pages(tmp_path / "docs", ACME_PAGES)
        services.ingest(docs, ACME, ASTRO_BASE_URL, tenant="acme")
        report = services.insights("acme", since="2026-11-01")
        assert (report["questions"], report["answered"], report["refused_by_reason"]) == (2, 1, {"question_terms_not_in_docs": 1})
        assert report["latency_ms"]["p50"] == 470.0
        # both are gaps (the two may share a group: both are about deploying somewhere)
        gaps = {q: g for g in report["gaps"]["groups"] for q in g["examples"]}
        assert gaps[OLD_REFUSAL["question"]]["missing_terms"] == ["Kubernetes"]  # read from the reason's words
        assert gaps[OLD_ANSWER["question"]]["reasons"]["thumbs_down"] == 1
        # without the hashes an older trace lacks, only a chunk that vanished can be named
        [affected] = report["affected_answers"]["answers"]
        assert affected["chunks"] == [{"id": "guides/deploy/heroku#gone/1", "change": "removed"}]
    finally:
        services.store.close()


@both_stores
def test_a_trace_an_older_process_writes_after_the_upgrade_is_read_too(history, store_backend):
    """A rolling upgrade: an old process keeps writing traces without the summary columns."""
    services, _ = history
    before = services.insights("acme", gaps=False)["questions"]
    payload = {**OLD_REFUSAL, "question": "How do I use Nomad with Astro?"}
    created = services.trace(history[1][ANSWERED[0]])["created_at"]
    if getattr(services.store, "url", None):
        import psycopg

        with psycopg.connect(services.store.url, autocommit=True) as conn:
            conn.execute("INSERT INTO traces (trace_id, corpus, created_at, payload, tenant) VALUES (%s, %s, %s, %s, 'acme')",
                         ("rolling", ACME, created, json.dumps(payload)))
    else:
        with sqlite3.connect(services.store.path) as db:
            db.execute("INSERT INTO traces (trace_id, corpus, created_at, payload, tenant) VALUES (?, ?, ?, ?, 'acme')",
                       ("rolling", ACME, created, json.dumps(payload)))
    report = services.insights("acme", gaps=False)
    assert report["questions"] == before + 1
    assert stored_rows(services, "SELECT reason FROM traces WHERE trace_id = ?", ("rolling",)) == [("question_terms_not_in_docs",)]


@pytest.mark.parametrize("where", [TraceFilter("acme", None, "2026-11-01"), TraceFilter(None, None, "2026-11-01T12:00:00+00:00")])
def test_the_summary_counts_traces_and_citations_in_index_order_without_sorting_them(tmp_path, where):
    """What keeps 100k traces under a second (benchmarks/bench_insights.py): each count reads a
    covering index in the order it groups by, so no read sorts every trace or citation in range."""
    SQLiteStore(tmp_path / "citedocs.sqlite3").close()
    with sqlite3.connect(tmp_path / "citedocs.sqlite3") as db:
        for query in ("counts", "latencies", "citations"):
            sql, params = INSIGHTS_SQL[query].render(where)
            plan = " | ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN " + sql, params))
            assert "COVERING INDEX" in plan and "TEMP B-TREE" not in plan, (query, plan)


def test_the_insights_cli_prints_json_csv_and_a_readable_report(tmp_path, monkeypatch):
    import csv
    import io

    from typer.testing import CliRunner

    from citedocs.cli import app as cli

    monkeypatch.setenv("CITEDOCS_HOME", str(tmp_path))
    monkeypatch.delenv("CITEDOCS_DATABASE_URL", raising=False)
    services = Services.open(tmp_path / "citedocs.sqlite3", backend="extractive")
    services.ingest(copy_astro_pages(tmp_path / "docs", ACME_PAGES), ACME, ASTRO_BASE_URL)
    ask(services, ANSWERED[0], ACME)
    ask(services, KUBERNETES[0], ACME)
    services.store.close()
    runner = CliRunner()
    as_json = runner.invoke(cli, ["insights", "--json", "--corpus", ACME])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["questions"] == 2
    as_csv = runner.invoke(cli, ["insights", "--csv", "--no-gaps"])
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert rows[0] == ["section", "item", "value", "detail"] and ["totals", "questions", "2", ""] in rows
    text = runner.invoke(cli, ["insights"], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "refused by reason" in text.output and KUBERNETES[0] in text.output
    bad = runner.invoke(cli, ["insights", "--since", "last week"])
    assert bad.exit_code == 2 and "7d, 24h, 2w" in bad.output
    both = runner.invoke(cli, ["insights", "--json", "--csv"])
    assert both.exit_code == 2 and "pick one" in both.output
    issue = runner.invoke(cli, ["insights", "--markdown", "--corpus", ACME])
    assert issue.exit_code == 0 and issue.stdout.startswith("## Docs gaps, ") and KUBERNETES[0] in issue.stdout


def test_gaps_group_questions_by_what_they_ask_about_not_by_how_they_are_asked():
    """Whole questions group by their shared phrasing ("what's the best way to ... on my site");
    their salient words group by topic, with the product name every question repeats left out."""
    from citedocs.insights import cluster_questions, salient_text, shared_words
    from citedocs.models.encoders import bi_encoder

    questions = [
        "What's the best way to send emails from my Acme site?",
        "How do I configure SMTP for the contact form in Acme?",
        "What's the best way to accept payments on my Acme site?",
        "Can Acme charge credit cards with Stripe?",
        "What's the best way to run Acme on Kubernetes?",
        "Is there a Helm chart for Acme on k8s?",
    ]
    shared = shared_words(questions)
    assert "acme" in shared and "kubernetes" not in shared
    labels = cluster_questions(bi_encoder().encode([salient_text(q, "docs", shared) for q in questions]))
    assert labels[0] == labels[1] and labels[2] == labels[3] and labels[4] == labels[5]
    assert len({labels[0], labels[2], labels[4]}) == 3


def test_salient_words_keep_every_script():
    from citedocs.insights import salient_text

    assert salient_text("Как настроить Kubernetes для сайта?") == "как настроить kubernetes для сайта"
    assert salient_text("如何部署到Kubernetes集群？") == "如何部署到kubernetes集群"
    assert salient_text("كيف أنشر الموقع على Kubernetes؟", "astro") == "كيف أنشر الموقع على kubernetes"
    assert salient_text("How do I do it?") == "how do i do it?"  # nothing salient: the question whole


@both_stores
def test_answers_close_to_a_refusal_are_listed_for_review(history):
    """Answered, but the best passage only just cleared the refusal margin: a writer should look."""
    from citedocs.insights import Insights, InsightsRange, parse_since

    services, ids = history
    where = InsightsRange("acme", None, parse_since("7d")).filter()

    def weak(margin: float) -> dict:
        return Insights(services.store, services.corpora("acme"), services.question_vectors.encode, 500, margin).weak_answers(where)

    everything = weak(10.0)  # every answer cleared the margin by less than 10
    assert everything["considered"] == 2 and everything["count"] == 2
    assert {a["question"] for a in everything["answers"]} == set(ANSWERED)
    cleared = [a["cleared_by"] for a in everything["answers"]]
    assert cleared == sorted(cleared) and all(c >= 0 for c in cleared)  # closest to a refusal first; none below it
    assert weak(min(cleared) / 2 if min(cleared) > 0 else 1e-9)["count"] == 0
    assert services.insights("acme")["weak_answers"]["margin"] == 0.05  # the setting's default


def test_the_insights_cli_writes_the_gaps_as_a_markdown_issue_body():
    """User text in the issue body is inert: Markdown specials escaped, no @mentions."""
    from typer.testing import CliRunner

    from citedocs.cli import app as cli
    from citedocs.insights import gaps_markdown

    body = gaps_markdown({
        "range": {"since": "2026-11-01T00:00:00+00:00", "until": "2026-11-08T00:00:00+00:00", "corpus": None},
        "gaps": {"considered": 1, "groups": [{"size": 1, "examples": ["Does @team know [a](javascript:x) <b>?"],
                 "reasons": {"low_retrieval_confidence": 1}, "missing_terms": [], "nearest_page": None}]},
        "weak_answers": {"count": 0, "answers": []},
    })
    assert "@\u200bteam" in body and "\\[a\\]\\(javascript:x\\)" in body and "\\<b\\>" in body
    refused = CliRunner().invoke(cli, ["insights", "--markdown", "--no-gaps"])
    assert refused.exit_code == 2 and "cannot be used with --no-gaps" in refused.output


@both_stores
def test_a_dismissed_question_leaves_the_docs_gaps_and_the_audit_log_says_who(history):
    """Runs last on its history: the Kubernetes gap loses one question for good."""
    from citedocs.service import UnknownTrace

    services, ids = history
    with pytest.raises(UnknownTrace):  # another tenant's question is not acme's to dismiss
        services.dismiss_gaps([ids["globex"]], tenant="acme")
    assert services.insights("globex")["gaps"]["dismissed"] == 0
    assert services.dismiss_gaps([ids[KUBERNETES[1]]], tenant="acme") == 1
    gaps = services.insights("acme")["gaps"]
    assert gaps["dismissed"] == 1 and all(KUBERNETES[1] not in g["examples"] for g in gaps["groups"])
    assert any(set(g["examples"]) == {KUBERNETES[0], KUBERNETES[2]} for g in gaps["groups"])
    done, refused = services.admin_actions("acme", 2)  # newest first
    assert (done.action, done.outcome, done.target) == ("gap.dismiss", "ok", ids[KUBERNETES[1]])
    assert (refused.action, refused.outcome) == ("gap.dismiss", "unknown_trace")
