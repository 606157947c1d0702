"""The HTML reader on the real published Python 3.11 docs (every page, parsed, no model).

The promises: every citation URL opens at a ``¶`` permalink that exists on that page (a section
id or an API entry's ``<dt>`` id, never a ``<span id>`` label or ``index-N``); every anchor the dev
set expects is citable; the site's chrome (navigation, sidebar, footer, search, ``¶``) is never
text; code blocks come through verbatim; generated pages contribute nothing and say why.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import lxml.html
import pytest

from citedocs.ingest.chunker import chunk_page
from citedocs.ingest.document import ParsedPage
from citedocs.ingest.readers import SourceFile, reader_named
from citedocs.ingest.readers.html import HTML
from citedocs.types import Chunk
from citedocs.markers import CHUNK_ID
from pydocs import DEV_CASES, PUBLIC_BASE_URL, python_docs_html

# Text that only the theme's chrome carries (checked absent from the docs' own sources).
CHROME = (
    "Quick search",
    "Previous topic",
    "Next topic",
    "Show Source",
    "Report a Bug",
    "Please donate",
    "Created using",
    "Last updated on October",
    "Found a bug",
    "3.11.2 Documentation »",
)


@dataclass
class ReadPage:
    page: ParsedPage
    chunks: list[Chunk]
    html: lxml.html.HtmlElement


@pytest.fixture(scope="module")
def folder() -> Path:
    return python_docs_html()


@pytest.fixture(scope="module")
def site(folder: Path) -> dict[str, ReadPage]:
    """Every .html page of the folder, read and chunked once for this module."""
    pages = {}
    for path in sorted(folder.rglob("*.html")):
        rel = path.relative_to(folder).as_posix()
        text = path.read_text(encoding="utf-8")
        page = HTML.read(SourceFile(rel, text, folder, PUBLIC_BASE_URL))
        pages[rel] = ReadPage(page, chunk_page(page), lxml.html.document_fromstring(text.encode("utf-8")))
    return pages


def _permalink_targets(html: lxml.html.HtmlElement) -> dict[str, str]:
    """id -> tag of the element each ``¶`` link (``a.headerlink``) points to, computed independently."""
    ids = {el.get("id"): el.tag for el in html.iter() if isinstance(el.tag, str) and el.get("id")}
    hrefs = {a.get("href")[1:] for a in html.iter("a") if "headerlink" in (a.get("class") or "").split()}
    return {target: ids[target] for target in hrefs if target in ids}


def test_the_reader_is_registered_as_html():
    assert reader_named("html") is HTML
    assert HTML.suffixes == (".html", ".htm")


def test_every_chunk_anchor_is_a_permalink_target_on_its_page(site):
    checked = 0
    for rel, read in site.items():
        targets = _permalink_targets(read.html)
        sectioned = "section" in targets.values()
        for chunk in read.chunks:
            if not chunk.anchor:  # a page without sections is cited as a whole
                assert not sectioned and chunk.url == read.page.url, f"{chunk.id}: text outside every section"
                continue
            assert chunk.anchor in targets, f"{chunk.id}: #{chunk.anchor} is not a ¶ target on {rel}"
            assert targets[chunk.anchor] in ("section", "dt"), f"{chunk.id}: #{chunk.anchor} is a <{targets[chunk.anchor]}>"
            assert chunk.url == f"{read.page.url}#{chunk.anchor}"
            assert all(a in targets for a in chunk.anchor_path), chunk.anchor_path
            checked += 1
    assert checked > 10_000  # the whole site, not a sample


def test_chunk_ids_are_unique_citable_and_urls_follow_the_public_site(site):
    seen: set[str] = set()
    for rel, read in site.items():
        assert read.page.page == rel.removesuffix(".html")
        for chunk in read.chunks:
            assert CHUNK_ID.match(chunk.id), chunk.id
            assert chunk.id not in seen, chunk.id
            seen.add(chunk.id)
    assert site["library/functools.html"].page.url == "https://docs.python.org/3.11/library/functools.html"
    assert site["library/index.html"].page.url == "https://docs.python.org/3.11/library/"
    assert site["index.html"].page.url == "https://docs.python.org/3.11/"


def test_every_anchor_the_dev_set_expects_is_a_chunk_anchor(site):
    expected = [
        source
        for line in DEV_CASES.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for source in json.loads(line)["expected_sources"]
    ]
    assert len(expected) >= 15
    anchors: dict[str, set[str]] = defaultdict(set)
    for rel, read in site.items():
        for chunk in read.chunks:
            anchors[chunk.doc_path].update(chunk.anchor_path)
    for source in expected:
        path, _, anchor = source.partition("#")
        assert anchor in anchors[path], f"{source} is not the anchor of any chunk"


def test_an_api_entry_covers_its_dl_and_nested_members(site):
    lru = next(c for c in site["library/functools.html"].chunks if c.id == "library/functools#functools.lru_cache/1")
    assert lru.heading_path == ("@functools.lru_cache(user_function)",)  # the page title is not repeated
    assert lru.anchor_path == ("module-functools", "functools.lru_cache")
    assert lru.text.startswith("@functools.lru_cache(user_function)\n\n@functools.lru_cache(maxsize=128, typed=False)")
    member = next(c for c in site["library/functools.html"].chunks if c.anchor == "functools.partial.func")
    assert member.anchor_path == ("module-functools", "partial-objects", "functools.partial.func")
    counter = [c for c in site["library/collections.html"].chunks if "collections.Counter.most_common" in c.anchor_path]
    assert counter and "most_common" in counter[0].text


def test_inline_code_is_one_token_run_not_spaced_pieces(site):
    text = "\n".join(c.text for c in site["library/functools.html"].chunks)
    assert "`f(a=1, b=2)`" in text  # <code><span class="pre">f(a=1,</span> <span class="pre">b=2)</span></code>
    assert "`lru_cache(maxsize=None)`" in text
    headings = {h for c in site["library/functools.html"].chunks for h in c.heading_path}
    assert "functools.partial(func, /, *args, **keywords)" in headings  # a signature's spans joined as written


def test_every_code_block_is_fenced_verbatim_with_prompts_and_indentation(site):
    """The reader's blocks; the chunker may later cut a sample too long for the embedder at line ends."""
    blocks = 0
    for rel, read in site.items():
        if not read.chunks:
            continue
        text = "\n".join(b.text for section in read.page.sections for b in section.blocks)
        main = read.html.xpath("//*[@role='main']")[0]
        for pre in main.iter("pre"):
            code = "".join(pre.itertext()).strip("\n")
            if code.strip():
                assert f"\n{code}\n```" in text, f"{rel}: a code block is not verbatim:\n{code[:200]}"
                blocks += 1
    assert blocks > 3000
    tutorial = "\n".join(c.text for c in site["tutorial/controlflow.html"].chunks)
    assert ">>> for w in words:\n...     print(w, len(w))" in tutorial


def test_site_chrome_and_permalink_marks_are_never_text(site, folder):
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (folder / "_sources").rglob("*.txt"))
    for phrase in CHROME:
        assert phrase not in sources  # so finding it in a chunk can only mean chrome leaked
    for rel, read in site.items():
        for chunk in read.chunks:
            text = chunk.embedding_text()
            assert "¶" not in text, chunk.id
            leaked = [phrase for phrase in CHROME if phrase in text]
            assert not leaked, f"{chunk.id} carries chrome: {leaked}"
        assert "¶" not in read.page.title


def test_scripts_styles_and_comments_are_never_text(tmp_path):
    page = """<!DOCTYPE html><html><head><title>Widgets &#8212; Acme docs</title>
    <style>.x { color: red }</style></head><body>
    <header><a href="/">Acme home</a></header>
    <nav class="breadcrumbs">Docs / Widgets</nav>
    <aside><h3>On this page</h3></aside>
    <h1 id="widgets">Widgets<a class="headerlink" href="#widgets">¶</a></h1>
    <p>Intro text.<!-- a draft note --></p>
    <script>var secret = "tracking";</script>
    <h2 id="make-one">Make one<a class="headerlink" href="#make-one">¶</a></h2>
    <p>Call <code>make()</code>.</p><span id="legacy-label"></span>
    <h3 id="sizes">Sizes</h3><p>Small or large.</p>
    <h2 id="delete">Delete</h2><p>Call <code>drop()</code>.</p>
    <form role="search"><input name="q"> Search the docs</form>
    <footer>Copyright Acme</footer></body></html>"""
    read = HTML.read(SourceFile("widgets.html", page, tmp_path, "https://acme.test/docs/"))
    chunks = chunk_page(read)
    text = "\n".join(c.embedding_text() for c in chunks)
    for chrome in ("color: red", "tracking", "draft note", "Acme home", "Docs / Widgets", "On this page", "Search the docs", "Copyright"):
        assert chrome not in text
    assert read.title == "Widgets"
    assert [(c.anchor, c.anchor_path, c.heading_path) for c in chunks] == [
        ("widgets", ("widgets",), ()),
        ("make-one", ("widgets", "make-one"), ("Make one",)),
        ("sizes", ("widgets", "make-one", "sizes"), ("Make one", "Sizes")),
        ("delete", ("widgets", "delete"), ("Delete",)),
    ]
    assert chunks[1].url == "https://acme.test/docs/widgets.html#make-one"


def test_generated_pages_contribute_nothing_and_say_why(site):
    for rel in ("genindex.html", "genindex-A.html", "py-modindex.html", "search.html"):
        assert site[rel].chunks == [], rel
        assert site[rel].page.notes and "not documentation" in site[rel].page.notes[0]
    assert not any(rel.startswith(("_sources/", "_static/")) for rel in site if site[rel].chunks)
    toc = "\n".join(c.text for c in site["contents.html"].chunks)
    assert "Whetting Your Appetite" not in toc  # a toctree is navigation, not content
