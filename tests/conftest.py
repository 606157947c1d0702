"""Shared fixtures: isolated homes, small docs folders, and the full Astro index (built once).

The full-corpus index is real: every chunk of the 420 Astro pages embedded with the bundled
MiniLM model into a real SQLite file. It takes a few minutes on a 2-core machine, so it is built
once per test session and shared by every test that needs it. Set ``CITEDOCS_TEST_INDEX_DIR`` to a
folder to keep that index between sessions while developing (the session then runs an
incremental ingest, which is a no-op when nothing changed).

Both store backends: the suites in BACKEND_SUITES run every test that touches a store twice,
once on SQLite and once on PostgreSQL + pgvector (``store_backend``). The PostgreSQL server is
the one at ``CITEDOCS_TEST_POSTGRES_URL`` (CI starts one), else a throwaway server this session
starts (scripts/local_postgres.py: Debian's PostgreSQL 15 with pgvector built for plain x86-64 by
scripts/install_pgvector.sh); each store gets a fresh database. A server that cannot start or whose
pgvector does not run fails the PostgreSQL tests: they never skip. The PostgreSQL copy of the Astro index is copied from the SQLite one (vectors
included, as `citedocs copy-index` does), then re-ingested, which must find nothing to change.
"""

from __future__ import annotations

import os
import shutil
import itertools
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

import pytest

from citedocs import config

ROOT = Path(__file__).resolve().parent.parent
ASTRO_DOCS = config.bundled_astro_docs()
ASTRO_CORPUS = config.ASTRO_CORPUS_NAME
ASTRO_BASE_URL = config.ASTRO_BASE_URL
DEV_CASES = ROOT / "evals" / "astro-dev.jsonl"

# Short real Astro pages for the small fixture corpus (corpus-relative paths are kept).
SMALL_PAGES = (
    "guides/deploy/heroku.mdx",
    "recipes/add-yaml-support.mdx",
    "reference/errors/missing-sharp.mdx",
    "guides/backend/index.mdx",
)


def copy_of_small_home(small_home: Path, home: Path) -> Path:
    """A private copy of the small corpus's index and config at ``home``: keys, jobs and traces a
    test makes there do not leak into other modules' servers."""
    home.mkdir(parents=True, exist_ok=True)
    for name in ("citedocs.sqlite3", "config.toml"):
        shutil.copy(small_home / name, home / name)
    return home


def write_docs(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``{relative path: text or bytes}`` under ``root`` and return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def copy_astro_pages(root: Path, pages: tuple[str, ...] = SMALL_PAGES) -> Path:
    """Copy real Astro pages into ``root``, keeping their corpus-relative paths."""
    for rel in pages:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ASTRO_DOCS / rel, target)
    return root


BACKENDS = ("sqlite", "postgres")
BACKEND_SUITES = {"test_retrieval", "test_api", "test_tenants"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``store_backend``: both backends in BACKEND_SUITES, SQLite elsewhere, unless a test names its own.

    Every test gets it as a session-scoped parameter (never from a plain fixture) so that a
    session fixture built for one backend is torn down, not reused, when tests of the other run.
    """
    if "store_backend" not in metafunc.fixturenames:
        return
    if any("store_backend" in str(m.args[0]) for m in metafunc.definition.iter_markers("parametrize")):
        return
    in_suite = metafunc.module.__name__.rsplit(".", 1)[-1] in BACKEND_SUITES
    metafunc.parametrize("store_backend", BACKENDS if in_suite else ("sqlite",), scope="session")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server with pgvector (its ``postgres`` database): the one at
    ``CITEDOCS_TEST_POSTGRES_URL``, else a throwaway one started for this session."""
    given = os.environ.get("CITEDOCS_TEST_POSTGRES_URL")
    if given:
        _require_working_pgvector(given)
        yield given
        return
    with throwaway_postgres() as server:
        _require_working_pgvector(server.url)
        yield server.url


@dataclass
class LocalPostgres:
    """A throwaway PostgreSQL server of scripts/local_postgres.py that a test may stop and start again."""

    data: Path
    port: int
    fast: bool = True

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        started = subprocess.run(
            [*LOCAL_POSTGRES, "start", str(self.data), "--port", str(self.port), *(["--fast"] if self.fast else [])],
            capture_output=True, text=True,
        )
        if started.returncode != 0:
            pytest.fail(f"the test PostgreSQL server did not start: {started.stderr.strip()[-1500:]}")

    def stop(self) -> None:
        subprocess.run([*LOCAL_POSTGRES, "stop", str(self.data)], check=False, capture_output=True)


@contextmanager
def throwaway_postgres(fast: bool = True) -> Iterator[LocalPostgres]:
    """A PostgreSQL server of its own on a free loopback port (scripts/local_postgres.py: Debian's
    PostgreSQL 15 with the portable pgvector build), stopped and deleted after; fails, never skips,
    when it cannot start."""
    from fake_llm import free_port

    # Not under pytest's tmp dirs: those are 0700 and, as root, the server runs as another user.
    server = LocalPostgres(Path(tempfile.mkdtemp(prefix="citedocs-test-pg-")) / "data", free_port(), fast)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.data.parent, ignore_errors=True)


LOCAL_POSTGRES = [sys.executable, str(ROOT / "scripts" / "local_postgres.py")]


def _require_working_pgvector(server_url: str) -> None:
    """Fail (never skip) when the server's pgvector cannot build and search an HNSW index: a pgvector
    compiled for instructions this CPU lacks (AVX-512) dies with SIGILL here, taking every connection
    with it, and a PostgreSQL suite that skipped would let CI pass without the scale path."""
    import psycopg

    probe = fresh_database(server_url, "probe")
    try:
        with psycopg.connect(probe, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE TABLE v (e vector(8))")
            conn.execute("INSERT INTO v SELECT array_fill(random()::real, ARRAY[8])::vector FROM generate_series(1, 64)")
            conn.execute("CREATE INDEX ON v USING hnsw (e vector_ip_ops)")
            conn.execute("SELECT e <#> e FROM v LIMIT 1").fetchall()
    except psycopg.Error as exc:
        pytest.fail(f"the PostgreSQL server's pgvector does not work ({exc}); a server started by "
                    "scripts/local_postgres.py after scripts/install_pgvector.sh runs on every x86-64 CPU")


_database_numbers = itertools.count()


def fresh_database(server_url: str, label: str) -> str:
    """Create an empty database on the server and return its URL."""
    import psycopg

    name = f"citedocs_{label}_{os.getpid()}_{next(_database_numbers)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name


def store_env(services) -> dict[str, str]:
    """Environment that points a citedocs subprocess (CLI, server) at the same store as ``services``."""
    url = getattr(services.store, "url", None)
    if url:
        return {"CITEDOCS_DATABASE_URL": url}
    return {"CITEDOCS_HOME": str(services.store.path.parent), "CITEDOCS_DATABASE_URL": ""}


def open_services(request: pytest.FixtureRequest, store_backend: str, home: Path, label: str, **kwargs):
    """``Services`` over a new store of the given backend (SQLite in ``home``, else a fresh database)."""
    from citedocs.index.postgres import PostgresStore
    from citedocs.service import Services

    if store_backend == "postgres":
        return Services(store=PostgresStore(fresh_database(request.getfixturevalue("postgres_server"), label)), **kwargs)
    return Services.open(home / "citedocs.sqlite3", **kwargs)


def stored_rows(services, sql: str, params: tuple = ()) -> list[tuple]:
    """Raw rows from the store's own database (``?`` placeholders), to check what is kept at rest."""
    url = getattr(services.store, "url", None)
    if url:
        import psycopg

        with psycopg.connect(url) as conn:
            return conn.execute(sql.replace("?", "%s"), params).fetchall()
    import sqlite3

    with sqlite3.connect(services.store.path) as db:
        return db.execute(sql, params).fetchall()


@contextmanager
def running_server(home: Path, ready_timeout_s: float = 300, **env: str) -> Iterator[tuple[str, Path]]:
    """A real `citedocs serve` over ``home`` on a free loopback port, once its /readyz answers 200
    (within ``ready_timeout_s``: a server that loads a local LLM first needs longer).

    Yields the base URL and the file its stderr (the JSON logs) goes to; stops the server after.
    """
    from fake_llm import free_port

    port = free_port()
    log_path = home / f"serve-{port}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "citedocs.cli", "serve", "--port", str(port)],
            # one worker unless a test asks for more: the gate, the rate limit and these tests' counts are per process
            env={**os.environ, "CITEDOCS_HOME": str(home), "CITEDOCS_WORKERS": "1", **env},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + ready_timeout_s
        while time.time() < deadline:
            if process.poll() is not None:
                pytest.fail(f"citedocs serve exited: {log_path.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("citedocs serve did not become ready")
        yield base, log_path
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, store_backend: str) -> Path:
    """A fresh, empty CITEDOCS_HOME for this test, with an empty store of the backend under test
    (the SQLite file goes in the home; a PostgreSQL store is a fresh database)."""
    home = tmp_path / "citedocs-home"
    home.mkdir()
    monkeypatch.setenv("CITEDOCS_HOME", str(home))
    if store_backend == "postgres":
        monkeypatch.setenv("CITEDOCS_DATABASE_URL", fresh_database(request.getfixturevalue("postgres_server"), "home"))
    else:
        monkeypatch.delenv("CITEDOCS_DATABASE_URL", raising=False)
    monkeypatch.delenv("CITEDOCS_CORPUS", raising=False)
    monkeypatch.delenv("CITEDOCS_FAULT_PAUSE_IN_WRITE", raising=False)
    return home


@pytest.fixture
def small_docs(tmp_path: Path) -> Path:
    """A folder holding a few short real Astro pages."""
    return copy_astro_pages(tmp_path / "docs")


@pytest.fixture(scope="session")
def astro_docs() -> Path:
    if not ASTRO_DOCS.is_dir():
        pytest.fail(f"the Astro reference corpus is missing at {ASTRO_DOCS}; set CITEDOCS_ASTRO_DOCS")
    return ASTRO_DOCS


@pytest.fixture(scope="session")
def astro_sqlite_services(tmp_path_factory: pytest.TempPathFactory, astro_docs: Path):
    """``Services`` on a real SQLite index of the full Astro corpus, built once per session."""
    from citedocs.service import Services

    keep = os.environ.get("CITEDOCS_TEST_INDEX_DIR")
    home = Path(keep) if keep else tmp_path_factory.mktemp("astro-home")
    home.mkdir(parents=True, exist_ok=True)
    services = Services.open(home / "citedocs.sqlite3")
    report = services.ingest(astro_docs, ASTRO_CORPUS, ASTRO_BASE_URL)
    assert not report.skipped, f"reference pages were skipped: {report.skipped}"
    yield services
    services.store.close()


@pytest.fixture(scope="session")
def astro_services(request: pytest.FixtureRequest, store_backend: str, astro_sqlite_services, astro_docs: Path):
    """``Services`` on the full Astro index in the backend under test (``store_env`` points a
    subprocess at the same store)."""
    if store_backend == "sqlite":
        yield astro_sqlite_services
        return
    from citedocs.index import copy_corpus

    services = open_services(request, store_backend, Path(), "astro")
    copy_corpus(astro_sqlite_services.store, services.store, ASTRO_CORPUS)
    report = services.ingest(astro_docs, ASTRO_CORPUS, ASTRO_BASE_URL)
    assert (report.added, report.changed, report.removed) == (0, 0, 0), "the copy differs from a fresh ingest"
    assert report.version == astro_sqlite_services.corpus(ASTRO_CORPUS).version
    yield services
    services.store.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs the full Astro index is `slow` (deselect with ``-m "not slow"``)."""
    for item in items:
        if "astro_services" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


# Two tenants, each owning a small corpus of different real Astro pages.
TENANT_CORPORA = {
    "acme": ("acme-docs", ("guides/deploy/heroku.mdx", "recipes/add-yaml-support.mdx")),
    "globex": ("globex-docs", ("reference/errors/missing-sharp.mdx", "guides/backend/index.mdx")),
}


@pytest.fixture(scope="session")
def tenant_services(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, store_backend: str, astro_docs: Path
):
    """``Services`` on a real index holding one small corpus per tenant in TENANT_CORPORA."""
    home = tmp_path_factory.mktemp("tenants-home")
    services = open_services(request, store_backend, home, "tenants", backend="extractive")
    for tenant, (corpus, pages) in TENANT_CORPORA.items():
        docs = copy_astro_pages(home / "docs" / tenant, pages)
        services.ingest(docs, corpus, ASTRO_BASE_URL, tenant=tenant)
    yield services
    services.store.close()


# A doc whose text is hostile markup: the widget and the chat page must show it as text, never run it.
HOSTILE_PAGE = """---
title: 'Hostile <img src=x onerror="window.__citedocsXss=3"> markup'
---

# Hostile markup in a page

The hostile page holds an image tag `<img src=x onerror="window.__citedocsXss=1">` right inside its text.

The hostile page also links to [a script URL](javascript:window.__citedocsXss=2) that must never run.
"""
SMALL_CORPUS = "small-docs"


@pytest.fixture(scope="session")
def small_home(tmp_path_factory: pytest.TempPathFactory, astro_docs: Path) -> Path:
    """A CITEDOCS_HOME whose SQLite index holds SMALL_CORPUS (SMALL_PAGES plus HOSTILE_PAGE), the
    default corpus there: fast to build, for the integration tests (MCP, OpenAI facade, widget)."""
    from citedocs.service import Services

    home = tmp_path_factory.mktemp("small-home")
    docs = copy_astro_pages(home / "docs")
    write_docs(docs, {"hostile/markup.md": HOSTILE_PAGE})
    services = Services.open(home / "citedocs.sqlite3")
    report = services.ingest(docs, SMALL_CORPUS, ASTRO_BASE_URL)
    assert not report.skipped, report.skipped
    services.store.close()
    (home / "config.toml").write_text(f'corpus = "{SMALL_CORPUS}"\nbackend = "extractive"\n')
    return home


@dataclass(frozen=True)
class IntegrationServer:
    base: str  # the citedocs server
    allowed_origin: str  # the one origin in its cors_origins (the widget tests serve a docs site there)
    allowed_port: int


@pytest.fixture(scope="session")
def integration_server(small_home: Path) -> Iterator[IntegrationServer]:
    """One real `citedocs serve` over ``small_home`` (auth off, extractive), allowing one cross-origin
    page, shared by the MCP, OpenAI-facade and widget tests."""
    from fake_llm import free_port

    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    with running_server(small_home, CITEDOCS_DATABASE_URL="", CITEDOCS_CORS_ORIGINS=origin) as (base, _):
        yield IntegrationServer(base, origin, port)
