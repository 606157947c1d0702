"""Shared fixtures: isolated homes, small docs folders, and the full Astro index (built once).

The full-corpus index is real: every chunk of the 420 Astro pages embedded with the bundled
MiniLM model into a real SQLite file. It takes a few minutes on a 2-core machine, so it is built
once per test session and shared by every test that needs it. Set ``CITEDOCS_TEST_INDEX_DIR`` to a
folder to keep that index between sessions while developing (the session then runs an
incremental ingest, which is a no-op when nothing changed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

import pytest

from citedocs import config

ROOT = Path(__file__).resolve().parent.parent
ASTRO_DOCS = config.bundled_astro_docs()
ASTRO_CORPUS = config.ASTRO_CORPUS_NAME
ASTRO_BASE_URL = config.ASTRO_BASE_URL
DEV_CASES = ROOT.parent / "shared" / "evals" / "astro-dev.jsonl"

# Short real Astro pages for the small fixture corpus (corpus-relative paths are kept).
SMALL_PAGES = (
    "guides/deploy/heroku.mdx",
    "recipes/add-yaml-support.mdx",
    "reference/errors/missing-sharp.mdx",
    "guides/backend/index.mdx",
)


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


@contextmanager
def running_server(home: Path, **env: str) -> Iterator[tuple[str, Path]]:
    """A real `citedocs serve` over ``home`` on a free loopback port, once its /readyz answers 200.

    Yields the base URL and the file its stderr (the JSON logs) goes to; stops the server after.
    """
    from fake_llm import free_port

    port = free_port()
    log_path = home / f"serve-{port}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "citedocs.cli", "serve", "--port", str(port)],
            env={**os.environ, "CITEDOCS_HOME": str(home), **env},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
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
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty CITEDOCS_HOME for this test (the database goes in here)."""
    home = tmp_path / "citedocs-home"
    home.mkdir()
    monkeypatch.setenv("CITEDOCS_HOME", str(home))
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
def astro_services(tmp_path_factory: pytest.TempPathFactory, astro_docs: Path):
    """``Services`` on a real index of the full Astro corpus, built once per session.

    The database is ``<home>/citedocs.sqlite3``, so ``astro_services.store.path.parent`` can be
    passed as CITEDOCS_HOME to a subprocess (CLI, server) to reuse the same index.
    """
    from citedocs.service import Services

    keep = os.environ.get("CITEDOCS_TEST_INDEX_DIR")
    home = Path(keep) if keep else tmp_path_factory.mktemp("astro-home")
    home.mkdir(parents=True, exist_ok=True)
    services = Services.open(home / "citedocs.sqlite3")
    report = services.ingest(astro_docs, ASTRO_CORPUS, ASTRO_BASE_URL)
    assert not report.skipped, f"reference pages were skipped: {report.skipped}"
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
def tenant_services(tmp_path_factory: pytest.TempPathFactory, astro_docs: Path):
    """``Services`` on a real index holding one small corpus per tenant in TENANT_CORPORA."""
    from citedocs.service import Services

    home = tmp_path_factory.mktemp("tenants-home")
    services = Services.open(home / "citedocs.sqlite3", backend="extractive")
    for tenant, (corpus, pages) in TENANT_CORPORA.items():
        docs = copy_astro_pages(home / "docs" / tenant, pages)
        services.ingest(docs, corpus, ASTRO_BASE_URL, tenant=tenant)
    yield services
    services.store.close()
