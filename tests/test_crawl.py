"""Crawling a published docs site from a real loopback HTTP server, then ingesting the mirror.

The server (stdlib ``http.server`` on 127.0.0.1) serves real Python 3.11 doc pages under /docs/
and around them everything a crawler meets: a ``robots.txt`` that disallows a folder, a sitemap,
a redirect in scope and one out of it, a 500, a page slower than the timeout, a JSON file, a
broken link and links to other folders and origins. It records every request it receives, so
"never fetched" is checked at the source.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app as cli
from citedocs.ingest.crawl import CrawlError, CrawlSettings, crawl_scope, mirror_path
from citedocs.service import Services
from fake_llm import free_port
from pydocs import python_docs_html

REAL_PAGES = ("library/functools.html", "tutorial/venv.html", "howto/sorting.html")
SLOW_S = 3.0
FAST = CrawlSettings(concurrency=4, rate=200.0, timeout_s=1.0)  # loopback: no need to be gentle
CORPUS = "pydocs-crawl"

LANDING = """<!DOCTYPE html><html><head><title>Docs home</title></head><body>
<div role="main"><section id="docs-home"><h1>Docs home<a class="headerlink" href="#docs-home">¶</a></h1>
<p>Start with <a href="library/functools.html">functools</a> or <a href="old/venv.html">virtual environments</a>.</p>
<ul>
<li><a href="private/secret.html">internal notes</a></li>
<li><a href="away.html">moved away</a></li>
<li><a href="broken.html">broken</a></li>
<li><a href="slow.html">slow</a></li>
<li><a href="data.json">data</a></li>
<li><a href="missing.html">missing</a></li>
<li><a href="/outside/page.html">another folder</a></li>
<li><a href="http://example.invalid/docs/page.html">another origin</a></li>
</ul></section></div></body></html>
"""


@dataclass
class Site:
    base: str  # http://127.0.0.1:PORT
    root: Path  # the served folder (pages live in root/docs)
    requests: list[tuple[str, str | None, str | None]] = field(default_factory=list)  # path, If-None-Match, If-Modified-Since

    @property
    def start(self) -> str:
        return f"{self.base}/docs/"

    def paths(self) -> set[str]:
        return {path for path, _, _ in self.requests}


def _handler(site: Site) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site.root), **kwargs)

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def _reply(self, status: int, body: bytes = b"", **headers: str) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            site.requests.append((self.path, self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")))
            if self.path == "/robots.txt":
                return self._reply(200, b"User-agent: *\nDisallow: /docs/private/\n", Content_Type="text/plain")
            if self.path == "/docs/old/venv.html":
                return self._reply(301, Location="/docs/tutorial/venv.html")
            if self.path == "/docs/away.html":
                return self._reply(302, Location=f"{site.base}/elsewhere/page.html")
            if self.path == "/docs/broken.html":
                return self._reply(500, b"internal error", Content_Type="text/plain")
            if self.path == "/docs/slow.html":
                time.sleep(SLOW_S)
                try:
                    return self._reply(200, b"<html><body><p>late</p></body></html>", Content_Type="text/html")
                except (BrokenPipeError, ConnectionResetError):
                    return None  # the crawler gave up waiting, as it should
            file = site.root / self.path.lstrip("/")
            if file.is_dir():
                file = file / "index.html"
            if file.is_file():  # an ETag as well as the stdlib's Last-Modified / If-Modified-Since
                etag = '"' + hashlib.sha256(file.read_bytes()).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    return self._reply(304, ETag=etag)
                self._etag = etag
            return super().do_GET()

        def end_headers(self) -> None:
            if getattr(self, "_etag", None):
                self.send_header("ETag", self._etag)
            super().end_headers()

    return Handler


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    pages = python_docs_html()
    root = tmp_path_factory.mktemp("www")
    docs = root / "docs"
    for rel in REAL_PAGES:
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pages / rel, docs / rel)
    (docs / "index.html").write_text(LANDING, encoding="utf-8")
    (docs / "data.json").write_text('{"not": "html"}', encoding="utf-8")
    (docs / "private").mkdir()
    (docs / "private" / "secret.html").write_text("<p>never fetched</p>", encoding="utf-8")
    (root / "outside").mkdir()
    (root / "outside" / "page.html").write_text("<p>out of scope</p>", encoding="utf-8")
    port = free_port()
    site = Site(f"http://127.0.0.1:{port}", root)
    # howto/sorting.html is linked from nowhere: only the sitemap leads to it
    (docs / "sitemap.xml").write_text(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.start}howto/sorting.html</loc></url>"
        f"<url><loc>{site.base}/outside/page.html</loc></url></urlset>",
        encoding="utf-8",
    )
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(site))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield site
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("crawl-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CITEDOCS_HOME", str(home))
        mp.delenv("CITEDOCS_DATABASE_URL", raising=False)
        yield home


@pytest.fixture(scope="module")
def services(home: Path) -> Iterator[Services]:
    services = Services.open()
    yield services
    services.store.close()


@pytest.fixture(scope="module")
def first(site: Site, services: Services):
    """The first crawl + ingest of the site (shared by the tests below, which only read it)."""
    crawled, report = services.crawl_and_ingest(site.start, CORPUS, FAST)
    return crawled, report, list(site.requests)


def _outcome(crawled, url: str):
    return next(o for o in crawled.outcomes if o.url == url)


def test_scope_is_the_start_urls_folder():
    assert crawl_scope("https://docs.example.com/start/") == "https://docs.example.com/start/"
    assert crawl_scope("https://docs.example.com/start/index.html") == "https://docs.example.com/start/"
    assert crawl_scope("https://docs.example.com/start") == "https://docs.example.com/start/"
    assert mirror_path("https://docs.example.com/start/a/b.html", "https://docs.example.com/start/") == "a/b.html"
    assert mirror_path("https://docs.example.com/start/guide/", "https://docs.example.com/start/") == "guide/index.html"
    assert mirror_path("https://docs.example.com/start/a/%2e%2e/b.html", "https://docs.example.com/start/") is None
    with pytest.raises(CrawlError, match="not an http"):
        crawl_scope("file:///usr/share/doc/python3.11/html/index.html")


def test_nothing_outside_the_start_folder_or_disallowed_by_robots_is_fetched(first, site):
    crawled, _, requests = first
    fetched = {path for path, _, _ in requests}
    assert "/robots.txt" in fetched
    assert all(p.startswith("/docs/") or p == "/robots.txt" for p in fetched), sorted(fetched)
    assert "/docs/private/secret.html" not in fetched
    assert _outcome(crawled, f"{site.start}private/secret.html").detail == "disallowed by robots.txt"
    assert not any("example.invalid" in o.url or "/outside/" in o.url for o in crawled.outcomes)


def test_every_url_gets_an_outcome_and_failures_do_not_stop_the_crawl(first, site):
    crawled, _, _ = first
    assert _outcome(crawled, f"{site.start}broken.html").detail == "HTTP 500"
    assert "timed out" in _outcome(crawled, f"{site.start}slow.html").detail
    assert _outcome(crawled, f"{site.start}data.json").detail == "not HTML (application/json)"
    assert "no such page" in _outcome(crawled, f"{site.start}missing.html").detail
    away = _outcome(crawled, f"{site.start}away.html")
    assert away.outcome == "skipped" and "out of scope" in away.detail
    assert _outcome(crawled, f"{site.start}old/venv.html").detail == f"301 to {site.start}tutorial/venv.html"
    mirrored = sorted(p.relative_to(crawled.folder).as_posix() for p in crawled.folder.rglob("*") if p.is_file())
    assert mirrored == ["howto/sorting.html", "index.html", "library/functools.html", "tutorial/venv.html"]
    # the real pages' own navigation links (genindex, sibling modules) are 404 here: reported, not fatal
    assert crawled.counts()["fetched"] == 4


def test_the_mirror_is_ingested_with_live_urls_and_api_anchors(first, site, services):
    _, report, _ = first
    assert report.added > 30 and not report.skipped
    chunks = services.store.documents(CORPUS)["library/functools.html"].chunk_ids
    assert "library/functools#functools.lru_cache/1" in chunks
    hit = services.search("lru_cache cache_info hits misses", CORPUS, 5).hits[0].chunk
    assert hit.url.startswith(f"{site.start}library/functools.html#functools.")  # the file:// canonical is ignored
    landing = services.store.documents(CORPUS)["index.html"].chunk_ids
    assert landing == ("index#docs-home/1",)


def test_a_recrawl_of_an_unchanged_site_downloads_and_embeds_nothing(first, site, services):
    crawled, _, _ = first
    files = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in crawled.folder.rglob("*") if p.is_file()}
    site.requests.clear()
    again, report = services.crawl_and_ingest(site.start, CORPUS, FAST)
    conditional = {path: (etag, since) for path, etag, since in site.requests}
    for rel in (*REAL_PAGES, ""):
        etag, since = conditional[f"/docs/{rel}"]
        assert etag and since, f"{rel}: the re-crawl did not send If-None-Match and If-Modified-Since"
    assert again.counts()["not_modified"] == 4 and again.counts()["fetched"] == 0
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in again.folder.rglob("*") if p.is_file()} == files
    assert (report.added, report.changed, report.removed) == (0, 0, 0)

    # one page changes on the site: only it is downloaded and only its chunks are re-embedded
    sorting = site.root / "docs" / "howto" / "sorting.html"
    sorting.write_text(sorting.read_text(encoding="utf-8").replace("Sorting HOW TO", "Sorting HOWTO"), encoding="utf-8")
    changed, report = services.crawl_and_ingest(site.start, CORPUS, FAST)
    assert [o.url for o in changed.outcomes if o.outcome == "fetched"] == [f"{site.start}howto/sorting.html"]
    assert report.changed > 0 and report.added == report.removed == 0


def test_max_pages_stops_the_crawl(site, home):
    from citedocs.ingest.crawl import crawl

    site.requests.clear()
    crawled = crawl(site.start, home / "crawl" / "capped", CrawlSettings(max_pages=2, rate=200.0, timeout_s=1.0))
    assert crawled.truncated
    pages = [path for path, _, _ in site.requests if path not in ("/robots.txt", "/docs/sitemap.xml")]
    assert len(pages) == 2 and crawled.counts()["fetched"] == 2


def test_a_site_with_no_fetchable_page_is_a_clear_error(site, services):
    with pytest.raises(CrawlError, match="no HTML page could be fetched under .*/docs/nothing/ .*HTTP 404"):
        services.crawl_and_ingest(f"{site.start}nothing/", "pydocs-broken", FAST)
    assert services.store.get_corpus("pydocs-broken") is None


def test_an_unreachable_site_is_a_clear_error_and_loses_nothing(first, services):
    before = services.store.chunk_hashes(CORPUS)
    dead = f"http://127.0.0.1:{free_port()}/docs/"
    with pytest.raises(CrawlError, match="cannot reach http://127.0.0.1:.*nothing was changed"):
        services.crawl_and_ingest(dead, CORPUS, FAST)
    assert services.store.chunk_hashes(CORPUS) == before
    # another site than the corpus's source: --replace-source, or it is refused before any crawl
    result = CliRunner().invoke(cli, ["ingest", dead, "--corpus", CORPUS, "--replace-source"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "cannot reach" in result.output and "Check the URL" in result.output
    assert services.store.chunk_hashes(CORPUS) == before
