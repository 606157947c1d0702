"""A disk that fills up during an ingest: the ingest stops with an error that says what happened and
what to do, the live version keeps answering, nothing of the failed ingest is stored, and the same
ingest succeeds once space is freed.

The full disk is real, not simulated: a small tmpfs mounted for the test and filled to the last
byte. On SQLite the citedocs home (the index file and its write-ahead log) lives on it; on
PostgreSQL a throwaway server keeps the citedocs database in a tablespace on it (the server's own
write-ahead log stays on the main disk: a PostgreSQL whose WAL disk fills stops for everyone, which
is for the operator's disk monitoring, not for citedocs). Mounting needs root, as CI runs: the test
fails, never skips, where it cannot mount.
"""

from __future__ import annotations

import errno
import os
import pwd
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from conftest import BACKENDS, copy_astro_pages, running_server, throwaway_postgres

CORPUS = "small"
FIRST = ("guides/deploy/heroku.mdx",)
# the retried ingest adds these: many chunks, so it needs far more room than the first left behind
ADDED = (
    "reference/errors/missing-sharp.mdx",
    "recipes/add-yaml-support.mdx",
    "guides/backend/index.mdx",
    "guides/routing.mdx",
    "guides/styling.mdx",
    "guides/images.mdx",
    "guides/markdown-content.mdx",
    "guides/integrations-guide/mdx.mdx",
)
SERVER_ENV = {"CITEDOCS_BACKEND": "extractive", "CITEDOCS_CORPUS": CORPUS, "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0"}
HEROKU = {"question": "How do I deploy my Astro site to Heroku?"}
SHARP = {"question": "What does the MissingSharp error mean and how do I fix it?"}
SERVER_USER = "citedocs-pg"  # scripts/local_postgres.py runs the server as this user when root starts it


@contextmanager
def small_disk(size_mb: int) -> Iterator[Path]:
    """A real filesystem of ``size_mb`` MB (tmpfs), unmounted after."""
    mount = Path(tempfile.mkdtemp(prefix="citedocs-small-disk-"))
    mount.chmod(0o755)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        mount.rmdir()
        pytest.fail(f"cannot mount a {size_mb} MB tmpfs for the full-disk test (it needs root, as CI runs): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=False)
        mount.rmdir()


def fill(disk: Path) -> Path:
    """Write a file on ``disk`` until the filesystem has no byte left; return it (delete it to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for block in (1 << 20, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\0" * block)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(fd)
    assert os.statvfs(disk).f_bavail == 0
    return filler


def ingest(docs: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "ingest", str(docs), "--corpus", CORPUS],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def ask(base: str, question: dict) -> dict:
    response = httpx.post(f"{base}/ask", json=question, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


def cited_pages(answer: dict) -> set[str]:
    return {citation["id"].split("#")[0] for citation in answer["citations"]}


@contextmanager
def store_on(disk: Path, store_backend: str, home: Path) -> Iterator[dict[str, str]]:
    """The environment of a citedocs whose store lives on ``disk``."""
    if store_backend == "sqlite":
        yield {"CITEDOCS_HOME": str(disk / "home"), "CITEDOCS_DATABASE_URL": ""}
        return
    import psycopg

    tablespace = disk / "tablespace"
    tablespace.mkdir()
    if os.geteuid() == 0:
        with throwaway_postgres() as server:  # creates the server user when it is missing
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(tablespace, entry.pw_uid, entry.pw_gid)
            with psycopg.connect(server.url, autocommit=True) as conn:
                conn.execute(f"CREATE TABLESPACE small_disk LOCATION '{tablespace}'")
                conn.execute("CREATE DATABASE citedocs_full_disk TABLESPACE small_disk")
            try:
                yield {"CITEDOCS_HOME": str(home), "CITEDOCS_DATABASE_URL": server.url.rsplit("/", 1)[0] + "/citedocs_full_disk"}
            finally:
                with psycopg.connect(server.url, autocommit=True) as conn:
                    conn.execute("DROP DATABASE IF EXISTS citedocs_full_disk WITH (FORCE)")
                    conn.execute("DROP TABLESPACE IF EXISTS small_disk")
        return
    pytest.fail("the full-disk test puts a PostgreSQL tablespace on a mounted disk: run it as root, as CI does")


def stored_state(env: dict[str, str]) -> tuple:
    """What the store holds for the corpus: its version and chunk count, and every chunk id with its hash."""
    done = subprocess.run(
        [sys.executable, "-c", (
            "from citedocs.service import Services\n"
            "s = Services.open()\n"
            f"info = s.store.get_corpus({CORPUS!r})\n"
            f"print(info.version, info.chunk_count, sorted(s.store.chunk_hashes({CORPUS!r}).items()))\n"
        )],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def trace_saved(env: dict[str, str], trace_id: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", f"from citedocs.service import Services; print(Services.open().store.get_trace({trace_id!r}) is not None)"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip() == "True"


@pytest.mark.parametrize("store_backend", BACKENDS, scope="session")
def test_a_full_disk_fails_the_ingest_clearly_and_the_live_version_keeps_answering(store_backend, tmp_path):
    docs = copy_astro_pages(tmp_path / "docs", FIRST)
    with small_disk(48) as disk, store_on(disk, store_backend, tmp_path / "home") as env:
        first = ingest(docs, env)
        assert first.returncode == 0, first.stdout + first.stderr
        live = stored_state(env)
        server_home = tmp_path / "server"
        server_home.mkdir()
        with running_server(server_home, **{**SERVER_ENV, **env}) as (base, log):
            before = ask(base, HEROKU)
            assert not before["refused"] and "guides/deploy/heroku" in cited_pages(before), before

            copy_astro_pages(docs, ADDED)
            filler = fill(disk)
            failed = ingest(docs, env)

            assert failed.returncode == 2, failed.stdout + failed.stderr
            message = " ".join(failed.stderr.split())  # the terminal wraps long lines
            assert "no space left on the disk" in message, message
            assert f"the ingest of corpus '{CORPUS}' was rolled back and its live version keeps serving" in message
            assert "free disk space there" in message and "run the ingest again" in message
            assert "Traceback" not in failed.stderr

            # the live version answers as before, with the disk still full, and holds nothing of the failed ingest
            during = ask(base, HEROKU)
            assert during["corpus_version"] == before["corpus_version"]
            assert during["answer"] == before["answer"] and during["citations"] == before["citations"]
            assert "reference/errors/missing-sharp" not in cited_pages(ask(base, SHARP))
            assert stored_state(env) == live
            # a trace is saved where the store still has room in its pages (PostgreSQL keeps the pages the
            # failed ingest added), else the answer goes out without it and the log says so
            trace_id = during["trace_id"]
            assert trace_saved(env, trace_id) or f"the trace {trace_id} of an answer was not saved" in log.read_text()

            filler.unlink()
            retried = ingest(docs, env)
            assert retried.returncode == 0, retried.stdout + retried.stderr
            after = ask(base, SHARP)
            assert after["corpus_version"] != before["corpus_version"]
            assert not after["refused"] and "reference/errors/missing-sharp" in cited_pages(after), after
