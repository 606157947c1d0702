"""Crawl a published docs site into a local mirror that the HTML reader then ingests like a folder.

The crawl is polite and bounded: it fetches only same-origin URLs under the start URL's folder
(plus that origin's ``robots.txt`` and in-scope sitemaps), obeys ``robots.txt`` (stdlib parser,
``Crawl-delay`` included), limits concurrency and request rate, stops at ``max_pages``, follows a
redirect only when its target is in scope, and honours ``<link rel=canonical>`` only when it is an
http(s) URL in scope (a ``file://`` canonical, as in locally built Sphinx docs, is ignored).

Why a mirror: each page is stored under ``<home>/crawl/<corpus>/site/`` with its validators
(ETag / Last-Modified) beside it, so a re-crawl sends conditional requests, an unchanged site
answers 304 everywhere, the mirrored bytes stay as they were, and the incremental folder ingest
finds nothing to re-embed. Every URL gets an outcome in the report; a failed fetch (500,
timeout) keeps the page's last good copy, and only a 404/410 removes it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import httpx
import lxml.html
from lxml import etree

from .. import __version__ as CITEDOCS_VERSION

HTML_TYPES = ("text/html", "application/xhtml+xml")
REDIRECTS = (301, 302, 303, 307, 308)
GONE = (404, 410)


class CrawlError(ValueError):
    """The crawl cannot start (bad URL, site unreachable); nothing was changed."""


@dataclass(frozen=True)
class CrawlSettings:
    max_pages: int = 1000  # HTML pages fetched or revalidated, in total
    concurrency: int = 2  # requests in flight at once
    rate: float = 4.0  # requests per second at most (raised to the site's Crawl-delay if it asks for more)
    timeout_s: float = 15.0  # per request
    max_bytes: int = 10 * 2**20  # a larger response is not mirrored
    user_agent: str = f"citedocs/{CITEDOCS_VERSION} (docs assistant crawler)"


@dataclass(frozen=True)
class UrlOutcome:
    url: str
    outcome: str  # fetched | not_modified | redirect | skipped | failed | removed
    detail: str = ""  # status code, redirect target, or why it was skipped or failed
    path: str = ""  # the mirrored file, relative to the mirror folder


@dataclass
class CrawlReport:
    start_url: str
    scope: str  # every fetched URL starts with this
    folder: Path  # the mirror the ingest reads
    outcomes: list[UrlOutcome] = field(default_factory=list)
    truncated: bool = False  # stopped at max_pages with URLs still to visit
    seconds: float = 0.0

    def counts(self) -> Counter[str]:
        return Counter(o.outcome for o in self.outcomes)

    def problems(self) -> list[UrlOutcome]:
        return [o for o in self.outcomes if o.outcome in ("failed", "skipped", "removed")]

    def write(self, path: Path) -> None:
        body = asdict(self) | {"folder": str(self.folder), "counts": dict(self.counts())}
        _write_if_changed(path, (json.dumps(body, indent=2) + "\n").encode("utf-8"))


def crawl_scope(start_url: str) -> str:
    """The folder of the start URL: ``https://h/docs/`` for ``/docs/``, ``/docs/index.html`` or ``/docs``."""
    parts = urlsplit(start_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CrawlError(f"not an http(s) URL: {start_url!r}. Pass the docs site's start page, e.g. https://docs.example.com/")
    path = parts.path or "/"
    if not path.endswith("/"):
        last = path.rsplit("/", 1)[-1]
        path = path[: len(path) - len(last)] if "." in last else path + "/"
    return f"{parts.scheme}://{parts.netloc}{path}"


def mirror_path(url: str, scope: str) -> str | None:
    """Where a page under ``scope`` is mirrored (relative POSIX path), or None if it cannot be stored safely."""
    rel = unquote(urlsplit(url).path)[len(urlsplit(scope).path) :]
    if rel == "" or rel.endswith("/"):
        rel += "index.html"
    elif not rel.lower().endswith((".html", ".htm")):
        rel += "/index.html"  # a folder-style URL served without its slash
    parts = rel.split("/")
    if any(p in ("", ".", "..") or "\x00" in p or "\\" in p for p in parts):
        return None
    return rel


def _write_if_changed(path: Path, data: bytes) -> None:
    """Atomic write that leaves an identical file untouched (same bytes, same mtime)."""
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _links(html: str, page_url: str) -> tuple[list[str], str | None]:
    """Absolute link targets (fragments dropped) and the page's canonical URL, if any."""
    try:
        doc = lxml.html.document_fromstring(html.encode("utf-8"))
    except (etree.ParserError, ValueError):
        return [], None
    base_el = doc.find(".//base[@href]")
    base = urljoin(page_url, base_el.get("href")) if base_el is not None else page_url
    links = [urldefrag(urljoin(base, a.get("href").strip()))[0] for a in doc.iter("a") if a.get("href")]
    canonical = next(
        (urljoin(base, el.get("href")) for el in doc.iter("link") if "canonical" in (el.get("rel") or "").split() and el.get("href")),
        None,
    )
    return links, canonical


def _sitemap_locs(xml: bytes) -> tuple[list[str], list[str]]:
    """(page URLs, nested sitemap URLs) of a sitemap or sitemap index."""
    try:
        root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        return [], []
    locs = [el.text.strip() for el in root.iter("{*}loc") if el.text]
    return ([], locs) if etree.QName(root).localname == "sitemapindex" else (locs, [])


class _Crawler:
    def __init__(self, start_url: str, folder: Path, settings: CrawlSettings) -> None:
        self.scope = crawl_scope(start_url)
        start = urldefrag(start_url)[0]
        self.start_url = self.scope if start + "/" == self.scope else start  # /docs is the folder /docs/
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.scope))
        self.settings = settings
        self.site = folder / "site"
        self.validators_file = folder / "validators.json"
        self.validators: dict[str, dict] = (
            json.loads(self.validators_file.read_text(encoding="utf-8")) if self.validators_file.is_file() else {}
        )
        self.report = CrawlReport(self.start_url, self.scope, self.site)
        self.seen: set[str] = set()
        self.stored: dict[str, str] = {}  # mirrored path -> URL it came from
        self.reached_paths: set[str] = set()  # mirror files this crawl confirmed or must keep
        self.budget = settings.max_pages
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.robots = RobotFileParser()
        self.interval = 1.0 / settings.rate if settings.rate > 0 else 0.0
        self.next_slot = 0.0
        self.slot_lock = asyncio.Lock()

    # scope and politeness -------------------------------------------------------------------
    def in_scope(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and url.startswith(self.scope) and not parts.query

    async def _wait_turn(self) -> None:
        async with self.slot_lock:
            now = time.monotonic()
            wait = self.next_slot - now
            self.next_slot = max(now, self.next_slot) + self.interval
        if wait > 0:
            await asyncio.sleep(wait)

    def _outcome(self, url: str, outcome: str, detail: str = "", path: str = "") -> None:
        self.report.outcomes.append(UrlOutcome(url, outcome, detail, path))

    def enqueue(self, url: str) -> None:
        if url in self.seen or not self.in_scope(url):
            return
        self.seen.add(url)
        if not self.robots.can_fetch(self.settings.user_agent, url):
            self._outcome(url, "skipped", "disallowed by robots.txt")
            return
        if self.budget <= 0:
            self.report.truncated = True
            return
        self.budget -= 1
        self.queue.put_nowait(url)

    # fetching ---------------------------------------------------------------------------------
    async def _get(self, client: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None) -> tuple[httpx.Response, bytes]:
        await self._wait_turn()
        async with client.stream("GET", url, headers=headers) as response:
            body = bytearray()
            if response.status_code == 200:
                async for piece in response.aiter_bytes():
                    body += piece
                    if len(body) > self.settings.max_bytes:
                        raise _TooLarge(f"larger than {self.settings.max_bytes} bytes")
            return response, bytes(body)

    async def read_robots(self, client: httpx.AsyncClient) -> None:
        """robots.txt decides everything else, so an unreachable site fails here, before any change."""
        try:
            response, body = await self._get(client, f"{self.origin}/robots.txt")
        except httpx.TransportError as exc:
            raise CrawlError(
                f"cannot reach {self.origin} ({type(exc).__name__}: {exc or 'no answer'}); nothing was changed. "
                "Check the URL and that the site is up."
            ) from exc
        if response.status_code in (401, 403):
            self.robots.disallow_all = True
        elif response.status_code == 200:
            self.robots.parse(body.decode("utf-8", "replace").splitlines())
        elif response.status_code >= 500:  # as the stdlib parser reads it: no permission until it answers
            raise CrawlError(f"{self.origin}/robots.txt answered HTTP {response.status_code}; nothing was fetched. Try later.")
        else:
            self.robots.allow_all = True
        delay = self.robots.crawl_delay(self.settings.user_agent)
        if delay:
            self.interval = max(self.interval, float(delay))
        if not self.robots.can_fetch(self.settings.user_agent, self.start_url):
            raise CrawlError(f"robots.txt of {self.origin} disallows {self.start_url}; nothing was fetched")

    async def read_sitemaps(self, client: httpx.AsyncClient) -> None:
        pending = [f"{self.scope}sitemap.xml"]
        pending += [u for u in self.robots.site_maps() or [] if u.startswith(self.origin + "/")]
        done: set[str] = set()
        while pending and len(done) < 20:
            url = pending.pop(0)
            if url in done:
                continue
            done.add(url)
            try:
                response, body = await self._get(client, url)
            except (httpx.HTTPError, _TooLarge):
                continue
            if response.status_code != 200:
                continue
            pages, nested = _sitemap_locs(body)
            pending += [u for u in nested if u.startswith(self.origin + "/")]
            for page in pages:
                self.enqueue(urldefrag(page)[0])

    async def fetch(self, client: httpx.AsyncClient, url: str) -> None:
        known = self.validators.get(url, {})
        headers = {}
        if known.get("path") and (self.site / known["path"]).is_file():
            if known.get("etag"):
                headers["If-None-Match"] = known["etag"]
            if known.get("last_modified"):
                headers["If-Modified-Since"] = known["last_modified"]
        try:
            response, body = await self._get(client, url, headers)
        except httpx.TimeoutException:
            return self._failed(url, known, f"timed out after {self.settings.timeout_s:g}s")
        except httpx.HTTPError as exc:
            return self._failed(url, known, f"{type(exc).__name__}: {exc}")
        except _TooLarge as exc:
            return self._failed(url, known, str(exc))
        status = response.status_code
        if status == 304 and headers:
            self.reached_paths.add(known["path"])
            self.stored.setdefault(known["path"], url)
            self._outcome(url, "not_modified", "304", known["path"])
            html = (self.site / known["path"]).read_text(encoding="utf-8")
            return self._follow(html, url)
        if status in REDIRECTS:
            target = urldefrag(urljoin(url, response.headers.get("location", "")))[0]
            if not self.in_scope(target):
                return self._outcome(url, "skipped", f"{status} redirect out of scope to {target}: not followed")
            self._outcome(url, "redirect", f"{status} to {target}")
            return self.enqueue(target)
        if status in GONE:
            return self._gone(url, known, status)
        if status != 200:
            return self._failed(url, known, f"HTTP {status}")
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in HTML_TYPES:
            return self._outcome(url, "skipped", f"not HTML ({kind or 'no content type'})")
        html = body.decode(response.encoding or "utf-8", "replace")
        links, canonical = _links(html, url)
        stored_as = url
        if canonical and canonical != url and self.in_scope(canonical):  # http(s) and in scope only
            stored_as = canonical
            self.seen.add(canonical)
        path = mirror_path(stored_as, self.scope)
        if path is None:
            return self._outcome(url, "skipped", "no safe file name for this URL")
        if path in self.stored:
            self._outcome(url, "skipped", f"same page as {self.stored[path]}")
            return self._follow_links(links)
        self.stored[path] = url
        self.reached_paths.add(path)
        _write_if_changed(self.site / path, html.encode("utf-8"))
        self.validators[url] = {
            "path": path,
            "etag": response.headers.get("etag"),
            "last_modified": response.headers.get("last-modified"),
        }
        self._outcome(url, "fetched", "200", path)
        self._follow_links(links)

    def _follow(self, html: str, url: str) -> None:
        self._follow_links(_links(html, url)[0])

    def _follow_links(self, links: list[str]) -> None:
        for link in links:
            self.enqueue(link)

    def _failed(self, url: str, known: dict, detail: str) -> None:
        """A transient failure: the last good copy (if any) stays in the mirror."""
        if known.get("path"):
            self.reached_paths.add(known["path"])
            detail += "; previous copy kept"
        self._outcome(url, "failed", detail, known.get("path", ""))

    def _gone(self, url: str, known: dict, status: int) -> None:
        path = known.get("path")
        if path and (self.site / path).is_file():
            (self.site / path).unlink()
            self.validators.pop(url, None)
            return self._outcome(url, "removed", f"HTTP {status}: the page is gone, its mirrored copy removed", path)
        self._outcome(url, "skipped", f"HTTP {status}: no such page (a broken link)")

    async def worker(self, client: httpx.AsyncClient) -> None:
        while True:
            url = await self.queue.get()
            try:
                await self.fetch(client, url)
            except Exception as exc:  # one page's trouble (a disk error) must not stall the crawl
                self._failed(url, self.validators.get(url, {}), f"{type(exc).__name__}: {exc}")
            finally:
                self.queue.task_done()

    async def run(self) -> CrawlReport:
        started = time.monotonic()
        timeout = httpx.Timeout(self.settings.timeout_s)
        headers = {"User-Agent": self.settings.user_agent}
        async with httpx.AsyncClient(timeout=timeout, headers=headers, follow_redirects=False) as client:
            await self.read_robots(client)
            self.enqueue(self.start_url)
            await self.read_sitemaps(client)
            workers = [asyncio.create_task(self.worker(client)) for _ in range(max(1, self.settings.concurrency))]
            await self.queue.join()
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        if not self.report.truncated and not self.report.counts()["failed"]:  # a failure may hide links
            self._drop_unreached()
        self.validators_file.parent.mkdir(parents=True, exist_ok=True)
        kept = {u: v for u, v in self.validators.items() if v.get("path") in self.reached_paths}
        _write_if_changed(self.validators_file, (json.dumps(kept, indent=1, sort_keys=True) + "\n").encode("utf-8"))
        self.report.seconds = time.monotonic() - started
        return self.report

    def _drop_unreached(self) -> None:
        """After a complete, failure-free crawl, a mirrored page nothing links to any more is gone from the site."""
        if not self.site.is_dir():
            return
        for path in sorted(self.site.rglob("*")):
            rel = path.relative_to(self.site).as_posix()
            if path.is_file() and rel not in self.reached_paths:
                path.unlink()
                self._outcome(urljoin(self.scope, rel), "removed", "no longer linked from the site")


class _TooLarge(Exception):
    pass


def crawl(start_url: str, folder: Path, settings: CrawlSettings = CrawlSettings()) -> CrawlReport:
    """Mirror the site under ``start_url``'s folder into ``folder/site`` (see the module docstring)."""
    if settings.max_pages < 1 or settings.concurrency < 1 or settings.rate <= 0 or settings.timeout_s <= 0:
        raise CrawlError("--max-pages and --concurrency must be at least 1; --rate and --timeout must be positive")
    report = asyncio.run(_Crawler(start_url, folder, settings).run())
    report.write(folder / "report.json")
    return report


def is_url(source: str) -> bool:
    """Whether an ingest source names a site to crawl rather than a folder."""
    return urlsplit(source).scheme in ("http", "https")
