"""Ingest promises on a small real corpus (a few Astro pages), with the real model and SQLite.

Incremental: unchanged text keeps its ids and is never re-embedded. Crash-safe: a killed ingest
leaves the previous index answering. Forgiving: a bad file is skipped with a reason naming it,
the rest is ingested, and the last good version of a file that broke keeps being served.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from citedocs.cli import app
from citedocs.ingest.pipeline import IngestError
from citedocs.retrieve.hybrid import RetrievalConfig
from citedocs.retrieve.rerank import LateInteractionReranker
from citedocs.service import Services

from conftest import ASTRO_BASE_URL, BACKENDS, stored_rows, write_docs

CORPUS = "small"
HEROKU = "guides/deploy/heroku.mdx"
SHARP = "reference/errors/missing-sharp.mdx"
NO_RERANK = RetrievalConfig(rerank=False)


@pytest.fixture
def services(tmp_home: Path):
    services = Services.open()  # tmp_home's store: its SQLite file, or a fresh PostgreSQL database
    yield services
    services.store.close()


def ingest(services: Services, docs: Path, progress=None):
    return services.ingest(docs, CORPUS, ASTRO_BASE_URL, progress)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def ids_of(services: Services, doc_path: str) -> tuple[str, ...]:
    return services.store.documents(CORPUS)[doc_path].chunk_ids


def search_ids(services: Services, query: str, k: int = 5) -> list[str]:
    return [h.chunk.id for h in services.search(query, CORPUS, k, NO_RERANK).hits]


def cli_output(result) -> str:
    """Everything the CLI printed (stdout and stderr), with line wrapping undone."""
    return " ".join(result.output.split())


# --- ids and incremental updates ------------------------------------------------------------------


def test_unchanged_text_gets_the_same_ids_and_version_in_a_fresh_index(small_docs, tmp_path):
    first = Services.open(tmp_path / "a" / "citedocs.sqlite3")
    second = Services.open(tmp_path / "b" / "citedocs.sqlite3")
    try:
        report_a, report_b = ingest(first, small_docs), ingest(second, small_docs)
        assert report_a.version == report_b.version
        hashes = first.store.chunk_hashes(CORPUS)
        assert hashes == second.store.chunk_hashes(CORPUS)
        assert "guides/deploy/heroku#how-to-deploy/1" in hashes
        assert "reference/errors/missing-sharp#what-went-wrong/1" in hashes
        assert report_a.added == len(hashes) and report_a.changed == report_a.removed == 0
    finally:
        first.store.close()
        second.store.close()


def test_reingest_without_changes_embeds_nothing_and_keeps_the_version(services, small_docs):
    first = ingest(services, small_docs)
    phases: list[str] = []
    again = ingest(services, small_docs, lambda phase, done, total: phases.append(phase))
    assert (again.added, again.changed, again.removed) == (0, 0, 0)
    assert again.unchanged == first.added
    assert again.files_seen == 4 and again.files_parsed == 0
    assert "embed" not in phases  # not a single chunk went through the model
    assert again.version == first.version
    assert services.corpus(CORPUS).version == first.version


def test_editing_one_section_re_embeds_only_that_chunk(services, small_docs):
    first = ingest(services, small_docs)
    before = services.store.chunk_hashes(CORPUS)
    edit(small_docs / HEROKU, "Create a Heroku account by", "Create a free Heroku account (the Eco plan works) by")
    report = ingest(services, small_docs)
    assert (report.added, report.changed, report.removed) == (0, 1, 0)
    assert report.unchanged == first.added - 1
    assert report.files_parsed == 1
    after = services.store.chunk_hashes(CORPUS)
    assert after.keys() == before.keys()
    assert [cid for cid in after if after[cid] != before[cid]] == ["guides/deploy/heroku#how-to-deploy/1"]
    assert report.version != first.version
    assert search_ids(services, "Heroku Eco plan")[0] == "guides/deploy/heroku#how-to-deploy/1"


def test_adding_a_section_adds_a_chunk_without_renumbering_the_others(services, small_docs):
    ingest(services, small_docs)
    before = ids_of(services, HEROKU)
    edit(
        small_docs / HEROKU,
        "## How to deploy",
        "## Before you start\n\nYou need a Heroku account with billing enabled.\n\n## How to deploy",
    )
    report = ingest(services, small_docs)
    assert (report.added, report.changed, report.removed) == (1, 0, 0)
    after = ids_of(services, HEROKU)
    assert set(after) == set(before) | {"guides/deploy/heroku#before-you-start/1"}


def test_deleting_a_file_removes_its_chunks(services, small_docs):
    ingest(services, small_docs)
    sharp_ids = ids_of(services, SHARP)
    assert search_ids(services, "MissingSharp")[0] in sharp_ids
    (small_docs / SHARP).unlink()
    report = ingest(services, small_docs)
    assert (report.added, report.changed, report.removed) == (0, 0, len(sharp_ids))
    assert SHARP not in services.store.documents(CORPUS)
    assert not set(sharp_ids) & set(services.store.chunk_hashes(CORPUS))
    assert not set(search_ids(services, "MissingSharp")) & set(sharp_ids)
    assert services.corpus(CORPUS).chunk_count == len(services.store.chunk_hashes(CORPUS))


def test_rerank_uses_token_vectors_stored_at_ingest(services, small_docs):
    ingest(services, small_docs)
    ids = list(services.store.chunk_hashes(CORPUS))
    stored = services.store.token_vectors(CORPUS, ids)
    assert set(stored) == set(ids) and all(t.unpack(384).shape == (t.rows, 384) for t in stored.values())
    chunks = services.store.get_chunks(CORPUS, ids)
    query = services.retriever.encode_query("How do I deploy my Astro site to Heroku?")
    # no encoder: every chunk must be scored from the tokens the index stored
    from_index = LateInteractionReranker(None, services.store.token_vectors).score(query, chunks, CORPUS)
    recomputed = LateInteractionReranker(services.encoder, lambda corpus, ids: {}).score(query, chunks, CORPUS)
    assert np.allclose(from_index, recomputed, atol=0.01)  # int8 storage (the default) costs no ranking precision


def test_two_files_for_the_same_page_never_overwrite_each_other(services, tmp_path):
    # guides/deploy.mdx and guides/deploy/index.mdx both publish guides/deploy/: one is refused
    docs = write_docs(
        tmp_path / "docs",
        {
            "guides/deploy.mdx": "---\ntitle: Deploy A\n---\n\nAlpha text about deploying.\n",
            "guides/deploy/index.mdx": "---\ntitle: Deploy B\n---\n\nBravo text about deploying.\n",
        },
    )
    first = ingest(services, docs)
    (skipped,) = first.skipped
    assert "clash with another file" in skipped.reason and "guides/deploy#/1" in skipped.reason
    (served,) = services.store.get_chunks(CORPUS, ["guides/deploy#/1"])
    for _ in range(2):  # later runs keep refusing it instead of swapping the served text
        again = ingest(services, docs)
        assert [s.path for s in again.skipped] == [skipped.path]
        assert (again.added, again.changed, again.removed) == (0, 0, 0) and again.version == first.version
        assert services.store.get_chunks(CORPUS, ["guides/deploy#/1"]) == [served]
        claimed = [cid for doc in services.store.documents(CORPUS).values() for cid in doc.chunk_ids]
        assert len(claimed) == len(set(claimed))


# --- crash safety ---------------------------------------------------------------------------------


def _write_lock_held(services: Services) -> bool:
    """True when another connection holds the store's write lock (an open ingest transaction)."""
    if getattr(services.store, "url", None):  # PostgreSQL: the ingest's per-corpus advisory lock
        return bool(stored_rows(
            services,
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        ))
    conn = sqlite3.connect(services.store.path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return True
        raise
    finally:
        conn.close()


def _wait_inside_write_transaction(proc: subprocess.Popen, services: Services, timeout_s: float = 240.0) -> None:
    """Block until ``proc`` sits inside its write transaction (the lock is held and stays held)."""
    deadline = time.monotonic() + timeout_s
    held_since: float | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"ingest exited ({proc.returncode}) before it was killed:\n{out}\n{err}")
        if _write_lock_held(services):
            held_since = held_since or time.monotonic()
            if time.monotonic() - held_since >= 2.0:  # not a passing lock: the paused write
                return
        else:
            held_since = None
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the ingest never entered its write transaction")


@pytest.mark.parametrize("store_backend", BACKENDS, scope="session")
def test_killed_ingest_keeps_previous_index(services, small_docs, tmp_home):
    first = ingest(services, small_docs)
    old_hashes = services.store.chunk_hashes(CORPUS)

    # changes that need several chunk writes, so the fault pause lands mid-transaction
    edit(small_docs / HEROKU, "Create a Heroku account by", "Create a free Heroku account by")
    write_docs(small_docs, {"guides/new-page.mdx": "---\ntitle: Brand new page\n---\n\n## Zebra crossing\n\nA unique zebra paragraph.\n"})
    env = {**os.environ, "CITEDOCS_HOME": str(tmp_home), "CITEDOCS_FAULT_PAUSE_IN_WRITE": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "citedocs.cli", "ingest", str(small_docs), "--corpus", CORPUS],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_inside_write_transaction(proc, services)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

    services.store.close()
    reopened = Services.open()
    try:
        info = reopened.corpus(CORPUS)
        assert info.version == first.version
        assert reopened.store.chunk_hashes(CORPUS) == old_hashes
        assert "guides/new-page.mdx" not in reopened.store.documents(CORPUS)
        hits = reopened.search("MissingSharp image service", CORPUS, 3).hits  # the full hybrid+rerank path
        assert hits and hits[0].chunk.doc_path == SHARP
        assert not any(h.chunk.doc_path == "guides/new-page.mdx" for h in reopened.search("zebra", CORPUS, 5).hits)

        # the next ingest completes the interrupted update
        resumed = ingest(reopened, small_docs)
        assert resumed.changed == 1 and resumed.added == 1
        assert search_ids(reopened, "zebra crossing")[0] == "guides/new-page#zebra-crossing/1"
    finally:
        reopened.store.close()


# --- bad input ------------------------------------------------------------------------------------


def test_empty_folder_is_refused_and_nothing_is_written(services, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestError, match=r"no Markdown/MDX files \(\*\.md, \*\.mdx, \*\.markdown\) under .*empty"):
        ingest(services, tmp_path / "empty")
    assert services.store.list_corpora() == []


def test_missing_folder_is_refused_with_its_path(services, tmp_path):
    with pytest.raises(IngestError, match=r"folder not found: .*does-not-exist"):
        ingest(services, tmp_path / "does-not-exist")


def test_a_file_instead_of_a_folder_is_refused(services, small_docs):
    with pytest.raises(IngestError, match="not a folder"):
        ingest(services, small_docs / HEROKU)


@pytest.mark.parametrize(
    ("corpus", "base_url", "needle"),
    [("bad name!", ASTRO_BASE_URL, "invalid corpus name"), ("ok", "docs.example.com", "must be an http(s) URL")],
)
def test_bad_arguments_are_refused(services, small_docs, corpus, base_url, needle):
    with pytest.raises(IngestError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        services.ingest(small_docs, corpus, base_url)


BAD_FILES = {
    "assets/logo.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
    "guides/latin1.md": "---\ntitle: Caf\xe9\n---\n\nCaf\xe9 cr\xe8me.\n".encode("latin-1"),
    "guides/broken-yaml.mdx": "---\ntitle: [unclosed\ndescription: x\n---\n\nBody.\n",
}


def test_bad_files_are_skipped_with_a_reason_and_the_rest_is_ingested(services, small_docs):
    write_docs(small_docs, BAD_FILES)
    report = ingest(services, small_docs)
    reasons = {s.path: s.reason for s in report.skipped}
    assert set(reasons) == set(BAD_FILES)
    assert "binary file" in reasons["assets/logo.md"]
    assert "not valid UTF-8" in reasons["guides/latin1.md"]
    assert "broken YAML frontmatter" in reasons["guides/broken-yaml.mdx"]
    assert not any(s.kept_previous for s in report.skipped)
    assert report.files_seen == 7 and report.files_parsed == 4
    assert set(services.store.documents(CORPUS)) == {
        HEROKU,
        SHARP,
        "recipes/add-yaml-support.mdx",
        "guides/backend/index.mdx",
    }


def test_broken_file_keeps_its_previous_good_version(services, small_docs):
    first = ingest(services, small_docs)
    heroku_ids = ids_of(services, HEROKU)
    good = (small_docs / HEROKU).read_text(encoding="utf-8")
    (small_docs / HEROKU).write_text(good.replace("title: Deploy your Astro Site to Heroku", "title: [oops"), encoding="utf-8")
    report = ingest(services, small_docs)
    (skipped,) = report.skipped
    assert skipped.path == HEROKU and skipped.kept_previous
    assert "broken YAML frontmatter" in skipped.reason
    assert ids_of(services, HEROKU) == heroku_ids
    assert report.version == first.version and report.removed == 0
    assert search_ids(services, "heroku login credentials")[0] in heroku_ids

    (small_docs / HEROKU).write_text(good, encoding="utf-8")  # fixed again: back to the indexed text
    healed = ingest(services, small_docs)
    assert healed.skipped == [] and healed.version == first.version
    assert (healed.added, healed.changed, healed.removed) == (0, 0, 0)


# --- the command line -----------------------------------------------------------------------------


def test_cli_ingest_of_an_empty_folder_exits_2_naming_the_problem(tmp_home, tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "empty")], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    message = cli_output(result)
    assert "error:" in message and "no Markdown/MDX files" in message and "nothing was changed" in message
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_cli_ingest_of_a_missing_folder_exits_2(tmp_home, tmp_path):
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "nope")], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "folder not found" in cli_output(result)


def test_cli_ingest_reports_counts_and_names_each_skipped_file(tmp_home, small_docs):
    runner = CliRunner()
    args = ["ingest", str(small_docs), "--corpus", CORPUS]
    first = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert f"corpus {CORPUS} version" in cli_output(first) and "4 files (4 parsed, 0 skipped)" in cli_output(first)

    write_docs(small_docs, {"guides/broken-yaml.mdx": BAD_FILES["guides/broken-yaml.mdx"]})
    edit(small_docs / HEROKU, "title: Deploy your Astro Site to Heroku", "title: [oops")
    second = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert second.exit_code == 0, second.output
    out = cli_output(second)
    assert "skipped guides/broken-yaml.mdx: broken YAML frontmatter" in out
    assert f"skipped {HEROKU}: broken YAML frontmatter" in out and "(previous version kept)" in out
    assert "5 files (0 parsed, 2 skipped)" in out  # unchanged files are not re-parsed
    assert "0 added, 0 changed, 0 removed" in out
