"""Corpora that stay in sync: a corpus remembers its source, `sync` re-reads it incrementally, a job
records what happened, and whatever goes wrong with a source the live version keeps answering.

Real parts throughout: real Astro pages, the real model, real SQLite and PostgreSQL stores, real git
repositories, a real (closed) port for the unreachable site."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app as cli
from citedocs.index.store import SyncJob
from citedocs.service import Services, UnknownCorpus
from citedocs.sync.service import Syncs, now, stamp
from citedocs.sync.sources import SourceError, parse_every
from citedocs.sync.worker import JobRunner, schedule_due

from conftest import ASTRO_BASE_URL, BACKENDS, open_services, write_docs
from fake_llm import free_port

CORPUS = "synced"
HEROKU = "guides/deploy/heroku.mdx"
NEW_PAGE = "guides/zebra.mdx"
ZEBRA = "---\ntitle: Zebra crossings\n---\n\n## Zebra crossing\n\nA unique zebra paragraph about striped crossings.\n"


@pytest.fixture
def syncs(request, store_backend, tmp_home: Path) -> Syncs:
    services = Services.open()
    yield Syncs(services)
    services.store.close()


def run_sync(syncs: Syncs, corpus: str = CORPUS) -> SyncJob:
    """What `citedocs sync CORPUS` does: a job this process claims and runs."""
    job, created = syncs.start(corpus, "cli", queue=False)
    assert created
    return JobRunner(syncs, job.worker).run(job)


def ingested(syncs: Syncs, docs: Path) -> str:
    syncs.services.ingest(docs, CORPUS, ASTRO_BASE_URL)
    syncs.remember_ingested(CORPUS, "folder", str(docs), "default", {"base_url": ASTRO_BASE_URL})
    return syncs.services.corpus(CORPUS).version


@pytest.mark.parametrize("store_backend", BACKENDS, scope="session")
def test_a_sync_re_reads_the_folder_and_reports_the_chunks_that_changed(syncs, small_docs):
    live = ingested(syncs, small_docs)
    unchanged = run_sync(syncs)
    assert unchanged.status == "succeeded" and unchanged.attempts == 1
    assert unchanged.report["version"] == live and not unchanged.report["switched"]
    assert unchanged.report["changed_chunk_ids"] == [] and unchanged.report["removed_chunk_ids"] == []

    page = small_docs / HEROKU
    page.write_text(page.read_text().replace("Create a Heroku account by", "Create a free Heroku account by", 1))
    write_docs(small_docs, {NEW_PAGE: ZEBRA})
    (small_docs / "recipes/add-yaml-support.mdx").unlink()
    edited = run_sync(syncs)
    report = edited.report
    assert edited.status == "succeeded" and report["switched"] and report["version_before"] == live
    assert report["chunks"]["added"] == 1 and report["chunks"]["changed"] == 1 and report["chunks"]["removed"] >= 1
    assert "guides/zebra#zebra-crossing/1" in report["changed_chunk_ids"]
    assert any(i.startswith("guides/deploy/heroku#") for i in report["changed_chunk_ids"])
    assert all(i.startswith("recipes/add-yaml-support#") for i in report["removed_chunk_ids"])
    hits = syncs.services.search("zebra crossing", CORPUS, 3).hits
    assert hits[0].chunk.id == "guides/zebra#zebra-crossing/1"
    assert [j.id for j in syncs.jobs(corpus=CORPUS)] == [edited.id, unchanged.id]


@pytest.mark.parametrize("store_backend", BACKENDS, scope="session")
def test_a_sync_that_answers_a_refused_question_marks_its_gap_resolved_by_that_job(syncs, small_docs):
    from citedocs.contract import AskRequest

    ingested(syncs, small_docs)
    services = syncs.services
    question = "What is a zebra crossing with striped crossings?"
    refused = services.ask(AskRequest(question=question, corpus=CORPUS))
    assert refused.refused and refused.refusal_reason.startswith("low_retrieval_confidence")
    unchanged = run_sync(syncs)  # nothing new: no version switched, nothing checked
    assert "resolved_gaps" not in unchanged.report
    write_docs(small_docs, {NEW_PAGE: ZEBRA})
    job = run_sync(syncs)
    assert job.status == "succeeded" and job.report["resolved_gaps"] == {"checked": 1, "resolved": 1}
    gaps = services.insights(None, CORPUS)["gaps"]
    assert gaps["groups"] == [] and gaps["resolved_count"] == 1
    [resolved] = gaps["resolved"]
    assert (resolved["question"], resolved["job_id"], resolved["trace_id"]) == (question, job.id, refused.trace_id)


def test_a_sync_while_one_is_queued_or_running_returns_that_job(syncs, small_docs):
    ingested(syncs, small_docs)
    first, created = syncs.start(CORPUS, "admin")
    again, created_again = syncs.start(CORPUS, "webhook")
    assert created and not created_again and again.id == first.id and again.status == "queued"
    claimed = syncs.store.claim_job("test-worker", stamp())
    assert claimed.id == first.id and claimed.status == "running" and claimed.attempts == 1
    while_running, created = syncs.start(CORPUS, "cli")
    assert not created and while_running.id == first.id and while_running.status == "running"
    assert syncs.store.claim_job("another-worker", stamp()) is None  # one job per corpus


def test_a_sync_of_an_unknown_corpus_names_the_known_ones(syncs, small_docs):
    ingested(syncs, small_docs)
    with pytest.raises(UnknownCorpus, match=f"indexed corpora: {CORPUS}"):
        syncs.start("nope", "cli")
    assert syncs.jobs() == []


def test_another_tenants_corpus_is_unknown_to_a_tenant(syncs, small_docs):
    ingested(syncs, small_docs)
    with pytest.raises(UnknownCorpus):
        syncs.start(CORPUS, "admin", tenant="acme")


def test_a_vanished_source_folder_fails_the_job_and_the_live_version_keeps_answering(syncs, small_docs, tmp_path):
    moved = tmp_path / "elsewhere"
    live = ingested(syncs, small_docs)
    small_docs.rename(moved)
    job = run_sync(syncs)
    assert job.status == "failed" and "is gone" in job.error and "keeps serving" in job.error
    ended = syncs.services.admin_actions()[0]  # the audit log says how the job ended, and which job
    assert (ended.action, ended.target, ended.outcome) == ("job.ended", CORPUS, "failed")
    assert ended.detail.startswith(f"job {job.id} (cli): ") and "is gone" in ended.detail
    assert syncs.services.corpus(CORPUS).version == live
    assert syncs.services.search("Heroku deploy", CORPUS, 3).hits


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True, capture_output=True, text=True,
    ).stdout


@pytest.fixture
def git_docs(tmp_path: Path, small_docs: Path) -> tuple[Path, Path]:
    """(a bare origin with the docs on branch main, a clone of it: the server's working tree)."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--bare", "-b", "main", str(origin)], check=True, capture_output=True)
    author = tmp_path / "author"
    subprocess.run(["git", "clone", str(origin), str(author)], check=True, capture_output=True)
    subprocess.run(["cp", "-r", f"{small_docs}/.", str(author)], check=True)
    _git(author, "checkout", "-b", "main")
    _git(author, "add", "-A")
    _git(author, "commit", "-m", "docs")
    _git(author, "push", "origin", "main")
    tree = tmp_path / "served"
    subprocess.run(["git", "clone", "-b", "main", str(origin), str(tree)], check=True, capture_output=True)
    return author, tree


def test_a_git_source_is_pulled_only_when_the_operator_allows_it(syncs, git_docs):
    author, tree = git_docs
    syncs.services.ingest(tree, CORPUS, ASTRO_BASE_URL)
    syncs.set_source(CORPUS, "git", str(tree), {"branch": "main"})
    write_docs(author, {NEW_PAGE: ZEBRA})
    _git(author, "add", "-A")
    _git(author, "commit", "-m", "zebra")
    _git(author, "push", "origin", "main")

    as_is = run_sync(syncs)
    assert as_is.status == "succeeded" and "as is" in as_is.report["source"]["note"]
    assert as_is.report["changed_chunk_ids"] == []

    syncs.set_source(CORPUS, "git", str(tree), {"branch": "main", "pull": True})
    pulled = run_sync(syncs)
    assert pulled.status == "succeeded" and "pulled main" in pulled.report["source"]["note"]
    assert "guides/zebra#zebra-crossing/1" in pulled.report["changed_chunk_ids"]


def test_a_git_tree_with_local_changes_is_an_error_and_nothing_changes(syncs, git_docs):
    _, tree = git_docs
    syncs.services.ingest(tree, CORPUS, ASTRO_BASE_URL)
    live = syncs.services.corpus(CORPUS).version
    syncs.set_source(CORPUS, "git", str(tree), {"branch": "main", "pull": True})
    write_docs(tree, {NEW_PAGE: ZEBRA})  # an edit made on the server, never committed
    job = run_sync(syncs)
    assert job.status == "failed" and "local changes" in job.error and NEW_PAGE in job.error
    assert syncs.services.corpus(CORPUS).version == live


def test_an_unreachable_site_fails_the_sync_and_the_live_version_keeps_answering(syncs, small_docs):
    live = ingested(syncs, small_docs)
    syncs.set_source(CORPUS, "crawl", f"http://127.0.0.1:{free_port()}/docs/", {"timeout_s": 2.0})
    job = run_sync(syncs)
    assert job.status == "failed" and "cannot reach" in job.error and "nothing was changed" in job.error
    assert syncs.services.corpus(CORPUS).version == live
    assert syncs.services.search("Heroku deploy", CORPUS, 3).hits


def test_a_due_schedule_starts_one_sync_and_moves_the_next_date_about_one_period_ahead(syncs, small_docs):
    ingested(syncs, small_docs)
    source = syncs.set_source(CORPUS, "folder", str(small_docs), {"every": "6h"})
    period = timedelta(hours=6)
    assert stamp(now() + period * 0.89) < source.next_sync_at < stamp(now() + period * 1.11)
    syncs.store.move_next_sync(CORPUS, source.next_sync_at, stamp(now() - timedelta(seconds=1)))
    schedule_due(syncs)
    schedule_due(syncs)  # a second worker's round: the date moved, nothing more starts
    jobs = syncs.jobs(corpus=CORPUS)
    assert [(j.trigger, j.status) for j in jobs] == [("schedule", "queued")]
    assert syncs.store.get_source(CORPUS).next_sync_at > stamp(now() + period * 0.89)


@pytest.mark.parametrize("text", ["6", "h", "-1h", "10s", "every day", "99999999999d", "400d"])
def test_a_bad_schedule_says_how_to_write_one(text):
    with pytest.raises(SourceError, match="30m|minute|365d"):
        parse_every(text)


def test_cli_ingest_remembers_the_folder_and_sync_reads_it_again(tmp_home, small_docs):
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    done = runner.invoke(cli, ["ingest", str(small_docs), "-c", CORPUS, "--base-url", ASTRO_BASE_URL], env=env)
    assert done.exit_code == 0, done.output
    write_docs(small_docs, {NEW_PAGE: ZEBRA})
    synced = runner.invoke(cli, ["sync", CORPUS], env=env)
    assert synced.exit_code == 0, synced.output
    assert "succeeded" in synced.output and "1 added" in synced.output
    listed = runner.invoke(cli, ["jobs", "list", "--json"], env=env)
    assert '"status": "succeeded"' in listed.output
    unknown = runner.invoke(cli, ["sync", "nope"], env=env)
    assert unknown.exit_code == 2 and "unknown corpus 'nope'" in unknown.output


def test_a_sync_that_finds_nothing_changed_loads_no_model_runtime(tmp_home, small_docs):
    """A no-change sync from cron or CI reads and hashes the files; the model (and torch, onnxruntime,
    scipy, the reStructuredText reader) is for text that must be embedded, and none is."""
    done = CliRunner().invoke(cli, ["ingest", str(small_docs), "-c", CORPUS, "--base-url", ASTRO_BASE_URL])
    assert done.exit_code == 0, done.output
    probe = (
        "import sys\n"
        "from citedocs.cli import main\n"
        "sys.argv = ['citedocs', 'sync', '%s']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "heavy = sorted(m for m in ('torch', 'onnxruntime', 'sentence_transformers', 'scipy', 'docutils') if m in sys.modules)\n"
        "print('loaded:', heavy)\n"
    ) % CORPUS
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=os.environ | {"COLUMNS": "200"}, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "0 added, 0 changed, 0 removed" in run.stdout and "loaded: []" in run.stdout, run.stdout


def test_the_operators_syncs_and_webhook_secrets_are_in_the_audit_log(syncs, small_docs):
    ingested(syncs, small_docs)
    run_sync(syncs)
    with pytest.raises(UnknownCorpus):
        syncs.start("nope", "cli")
    syncs.rotate_webhook_secret(CORPUS)
    syncs.start(CORPUS, "schedule")  # not someone's action: not in the log
    # the actor: the key id, "cli", or for a job's end its worker ("worker:cli:<host>:<pid>")
    newest = [(a.action, a.target, ":".join(a.key_id.split(":")[:2]), a.outcome) for a in syncs.services.admin_actions()]
    assert newest == [
        ("webhook.secret", CORPUS, "cli", "ok"),
        ("corpus.sync", "nope", "cli", "unknown_corpus"),
        ("job.ended", CORPUS, "worker:cli", "succeeded"),
        ("corpus.sync", CORPUS, "cli", "ok"),
    ]


GATE_CASES = [
    {"id": "gate-1", "question": "How do I deploy my Astro site to Heroku?", "bucket": "answerable", "should_refuse": False,
     "expected_sources": [HEROKU]},
    {"id": "gate-2", "question": "How can I import YAML files in Astro?", "bucket": "answerable", "should_refuse": False,
     "expected_sources": ["recipes/add-yaml-support.mdx"]},
]


def test_the_release_gate_switches_a_version_that_holds_its_floors_and_holds_one_that_does_not(syncs, small_docs, tmp_path):
    import json

    cases = tmp_path / "gate.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in GATE_CASES))
    live = ingested(syncs, small_docs)
    syncs.set_source(CORPUS, "folder", str(small_docs), {"eval": str(cases), "floors": {"retrieval_recall@8": 1.0}})

    write_docs(small_docs, {NEW_PAGE: ZEBRA})
    passed = run_sync(syncs)
    gate = passed.report["gate"]
    assert passed.status == "succeeded" and gate["passed"] and gate["candidate"] == {"retrieval_recall@8": 1.0}
    assert gate["live"] == {"retrieval_recall@8": 1.0} and passed.report["switched"]
    switched = syncs.services.corpus(CORPUS).version
    assert switched != live and switched == passed.report["version"]
    assert syncs.services.search("zebra crossing", CORPUS, 3).hits[0].chunk.doc_path == NEW_PAGE

    (small_docs / HEROKU).unlink()  # a docs change that loses an answer
    held = run_sync(syncs)
    gate = held.report["gate"]
    assert held.status == "held" and not gate["passed"] and not held.report["switched"]
    assert gate["candidate"]["retrieval_recall@8"] == 0.5 and gate["live"]["retrieval_recall@8"] == 1.0
    assert any("FAILS" in line and "live 1.000" in line for line in gate["lines"])
    assert syncs.services.corpus(CORPUS).version == switched == held.report["version"]
    assert held.report["candidate_version"] != switched
    assert any(h.chunk.doc_path == HEROKU for h in syncs.services.search("deploy to Heroku", CORPUS, 3).hits)
    assert [c.name for c in syncs.services.corpora("default")] == [CORPUS]  # the candidate is no tenant's


def test_a_release_gate_needs_known_floor_metrics():
    from citedocs.sync.service import release_floors

    with pytest.raises(SourceError, match="unknown floor metric 'accuracy'"):
        release_floors(["accuracy=0.9"], Path("cases.jsonl"))
    with pytest.raises(SourceError, match="--floor needs --eval"):
        release_floors(["mrr=0.5"], None)
    assert release_floors(["mrr=0.5", "refusal_recall=0.8"], Path("cases.jsonl")) == {"mrr": 0.5, "refusal_recall": 0.8}


def test_cli_sets_a_source_queues_a_sync_a_worker_runs_and_a_held_or_failed_sync_exits_1(tmp_home, small_docs, tmp_path):
    import json
    import os
    import sys

    runner = CliRunner()
    env = {"COLUMNS": "200"}
    assert runner.invoke(cli, ["ingest", str(small_docs), "-c", CORPUS, "--base-url", ASTRO_BASE_URL], env=env).exit_code == 0
    both = runner.invoke(cli, ["sources", "set", CORPUS, "--folder", str(small_docs), "--url", "https://x.example/"], env=env)
    assert both.exit_code == 2 and "exactly one of --folder, --git or --url" in both.output
    bad = runner.invoke(cli, ["sources", "set", CORPUS, "--folder", str(small_docs), "--every", "soon"], env=env)
    assert bad.exit_code == 2 and "invalid schedule 'soon'" in bad.output
    done = runner.invoke(cli, ["sources", "set", CORPUS, "--folder", str(small_docs), "--every", "1d"], env=env)
    assert done.exit_code == 0 and "next scheduled sync at" in done.output
    secret = runner.invoke(cli, ["sources", "webhook-secret", CORPUS], env=env)
    assert secret.exit_code == 0 and secret.stdout.strip().startswith("whsec_")
    listed = json.loads(runner.invoke(cli, ["sources", "list", "--json"], env=env).stdout)["corpora"][0]
    assert listed["source"]["every"] == "1d" and listed["source"]["webhook"] and "whsec_" not in json.dumps(listed)

    write_docs(small_docs, {NEW_PAGE: ZEBRA})
    queued = runner.invoke(cli, ["sync", CORPUS, "--queue"], env=env)
    assert queued.exit_code == 0 and "queued job_" in queued.output
    job_id = queued.output.split("queued ")[1].split()[0]
    worker = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "worker", "--once"], env={**os.environ}, capture_output=True, text=True, timeout=300
    )
    assert worker.returncode == 0, worker.stderr[-2000:]
    shown = json.loads(runner.invoke(cli, ["jobs", "show", job_id, "--follow"], env=env).stdout)
    assert shown["status"] == "succeeded" and shown["trigger"] == "cli" and "guides/zebra#zebra-crossing/1" in shown["report"]["changed_chunk_ids"]

    small_docs.rename(tmp_path / "gone")
    failed = runner.invoke(cli, ["sync", CORPUS], env=env)
    assert failed.exit_code == 1 and "failed: the source folder of corpus" in failed.output


def test_a_store_error_mid_sync_queues_the_job_again_and_keeps_the_live_version(syncs, small_docs, monkeypatch):
    import sqlite3

    live = ingested(syncs, small_docs)
    write_docs(small_docs, {NEW_PAGE: ZEBRA})
    real_apply = syncs.store.apply_ingest

    def database_gone(changes):  # fault injection: the database drops the ingest's write
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(syncs.store, "apply_ingest", database_gone)
    first = run_sync(syncs)
    assert first.status == "queued" and "the database went away" in first.error and first.attempts == 1
    assert syncs.services.corpus(CORPUS).version == live
    monkeypatch.setattr(syncs.store, "apply_ingest", real_apply)
    retried = JobRunner(syncs, "test-worker").run(syncs.store.claim_job("test-worker", stamp()))
    assert retried.status == "succeeded" and retried.attempts == 2 and retried.error is None
    assert "guides/zebra#zebra-crossing/1" in retried.report["changed_chunk_ids"]


PAGE_HTML = """<!doctype html><html><head><title>{title}</title></head><body><main><h1>{title}</h1>
<h2 id="{anchor}">{heading}</h2><p>{text}</p><p><a href="other.html">other</a></p></main></body></html>"""


def test_a_crawl_source_is_crawled_again_and_an_edited_page_synced(syncs, tmp_path):
    import os
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    site = tmp_path / "site" / "docs"
    write_docs(site, {
        "index.html": PAGE_HTML.format(title="Start", anchor="setup", heading="Setup", text="Install the tool with the installer."),
        "other.html": PAGE_HTML.format(title="Other", anchor="tuning", heading="Tuning", text="Tune the cache size for speed."),
    })
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), partial(Quiet, directory=str(site.parent)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/docs/"
        syncs.set_source(CORPUS, "crawl", url, {"max_pages": 20})
        first = run_sync(syncs)
        assert first.status == "succeeded" and first.report["source"]["kind"] == "crawl", first.error
        assert "crawled" in first.report["source"]["note"] and first.report["chunks"]["added"] >= 2
        edited = site / "other.html"
        edited.write_text(PAGE_HTML.format(title="Other", anchor="tuning", heading="Tuning", text="Tune the zebra cache size for speed."))
        later = edited.stat().st_mtime + 2  # Last-Modified has 1 s resolution: an edit in the same second would answer 304
        os.utime(edited, (later, later))
        second = run_sync(syncs)
        assert second.status == "succeeded" and second.report["chunks"]["changed"] == 1
        assert all(i.startswith("other") for i in second.report["changed_chunk_ids"])
    finally:
        server.shutdown()
