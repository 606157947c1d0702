"""The PostgreSQL + pgvector backend: shared by several servers, reachable by copy, clear when down.

The retrieval, API and tenant suites already run on both backends (see conftest); these are the
promises specific to choosing a store.
"""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest
from typer.testing import CliRunner

from citedocs.cli import app
from citedocs.index import open_store
from citedocs.service import Services

from conftest import ASTRO_BASE_URL, BACKENDS, fresh_database, running_server

CORPUS = "small"
QUESTION = "How do I deploy my Astro site to Heroku?"
pg_only = pytest.mark.parametrize("store_backend", ["postgres"], scope="session")
both = pytest.mark.parametrize("store_backend", BACKENDS, scope="session")


def cli(*args: str):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result, " ".join(result.output.split())


@pg_only
def test_two_server_processes_on_one_postgres_answer_consistently(tmp_home, small_docs, tmp_path):
    assert cli("ingest", str(small_docs), "--corpus", CORPUS)[0].exit_code == 0
    env = {"CITEDOCS_BACKEND": "extractive", "CITEDOCS_CORPUS": CORPUS, "CITEDOCS_AUTH": "required"}
    result, _ = cli("keys", "create", "--tenant", "default", "--name", "both servers")
    secret = result.stdout.strip().splitlines()[-1]
    auth = {"Authorization": f"Bearer {secret}"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with running_server(tmp_path / "a", **env) as (first, _), running_server(tmp_path / "b", **env) as (second, _):
        one = httpx.post(f"{first}/ask", json={"question": QUESTION}, headers=auth, timeout=60).json()
        two = httpx.post(f"{second}/ask", json={"question": QUESTION}, headers=auth, timeout=60).json()
        assert one["refused"] is False and one["citations"]
        assert (one["answer"], one["citations"], one["corpus_version"]) == (
            two["answer"], two["citations"], two["corpus_version"]
        )
        # what one process writes, the other reads: traces, feedback, key revocation
        posted = httpx.post(f"{second}/traces/{one['trace_id']}/feedback", json={"verdict": "up"}, headers=auth)
        assert posted.status_code == 200, posted.text
        assert httpx.get(f"{first}/traces/{one['trace_id']}", headers=auth).json()["feedback"][0]["verdict"] == "up"
        key_id = Services.open().keys("default")[0].key_id
        assert cli("keys", "revoke", key_id)[0].exit_code == 0
        for base in (first, second):
            assert httpx.get(f"{base}/corpora", headers=auth).status_code == 403


@both
def test_copy_index_moves_a_corpus_to_the_other_backend_without_reembedding(
    tmp_home, small_docs, tmp_path, request, store_backend
):
    assert cli("ingest", str(small_docs), "--corpus", CORPUS)[0].exit_code == 0
    source = Services.open()
    if store_backend == "sqlite":
        target = fresh_database(request.getfixturevalue("postgres_server"), "copy")
    else:
        target = str(tmp_path / "copy" / "citedocs.sqlite3")
    result, out = cli("copy-index", "--to", target)
    assert result.exit_code == 0, out
    assert f"copied corpus {CORPUS}: {source.corpus(CORPUS).chunk_count} chunks" in out

    copied = Services(store=open_store(target))
    try:
        assert copied.corpus(CORPUS).version == source.corpus(CORPUS).version
        assert copied.store.chunk_hashes(CORPUS) == source.store.chunk_hashes(CORPUS)
        ids = list(source.store.chunk_hashes(CORPUS))
        # the same packed bytes in either backend
        assert copied.store.token_vectors(CORPUS, ids) == source.store.token_vectors(CORPUS, ids)
        # the copy is a working index: ingesting the same folder into it finds nothing to do
        report = copied.ingest(small_docs, CORPUS, ASTRO_BASE_URL)
        assert (report.added, report.changed, report.removed) == (0, 0, 0)
        assert copied.search(QUESTION, CORPUS, 3).hits[0].chunk.doc_path == "guides/deploy/heroku.mdx"
    finally:
        copied.store.close()
        source.store.close()


@both
def test_search_text_cannot_inject_query_syntax(tmp_home, small_docs):
    services = Services.open()
    try:
        services.ingest(small_docs, CORPUS, ASTRO_BASE_URL)
        for question in ("heroku' | 'x", "heroku & !yaml:* <-> (", "it's \\ heroku's \"git push\" -- ;", "' OR 1=1 --"):
            assert services.search(question, CORPUS, 3).hits, question
    finally:
        services.store.close()


def run_citedocs(*args: str, **env: str) -> tuple[int, str]:
    """The real entry point in a subprocess (its top-level error handling included)."""
    done = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", *args], env={**os.environ, "COLUMNS": "200", **env},
        capture_output=True, text=True, timeout=120,
    )
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def test_unreachable_database_is_a_clear_error_that_hides_the_password(tmp_home):
    code, out = run_citedocs("search", "anything", CITEDOCS_DATABASE_URL="postgresql://reader:s3cret@127.0.0.1:1/docs")
    assert code == 2, out
    assert "cannot open PostgreSQL at postgresql://reader:***@127.0.0.1:1/docs" in out and "Connection refused" in out
    assert "CITEDOCS_DATABASE_URL" in out
    assert "s3cret" not in out and "Traceback" not in out


def test_a_database_url_that_is_not_postgresql_is_rejected_naming_the_setting(tmp_home):
    code, out = run_citedocs("keys", "list", CITEDOCS_DATABASE_URL="mysql://localhost/docs")
    assert code == 2, out
    assert "CITEDOCS_DATABASE_URL" in out and "postgresql://" in out and "Traceback" not in out
