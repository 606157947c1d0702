"""The HTML reader on other generators' themes: what a page of a built MkDocs (Material or the
default theme) or Docusaurus site holds beside its content is not text. The page skeletons below
are cut down from real builds (``mkdocs build`` of Starlette's and PyMdown Extensions' docs)."""

from __future__ import annotations

from pathlib import Path

from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers.html import HTML, not_documentation

MATERIAL_PAGE = """<!doctype html><html><body><div class="md-container">
<main class="md-main"><div class="md-main__inner md-grid">
  <div class="md-sidebar md-sidebar--primary"><div class="md-sidebar__scrollwrap"><div class="md-sidebar__inner">
    <li class="md-nav__item"><a class="md-nav__link" href="../responses/"><span class="md-ellipsis">Responses</span></a></li>
    <li class="md-nav__item"><a class="md-nav__link" href="../websockets/"><span class="md-ellipsis">WebSockets</span></a></li>
  </div></div></div>
  <div class="md-sidebar md-sidebar--secondary"><div class="md-sidebar__inner"><label>Table of contents</label></div></div>
  <div class="md-content"><article class="md-content__inner md-typeset">
    <h1 id="requests">Requests</h1>
    <p>Starlette includes a <code>Request</code> class that gives you a nicer interface.</p>
    <h2 id="method">Method<a class="headerlink" href="#method">&para;</a></h2>
    <p>The request method is accessed as <code>request.method</code>.</p>
  </article></div>
</div></main></div>
</body></html>"""


def read(html: str, rel: str = "requests/index.html"):
    return HTML.read(SourceFile(rel_path=rel, text=html, root=Path("/nonexistent"), base_url="https://docs.example.com/"))


def test_navigation_beside_a_lone_article_inside_main_is_not_text():
    page = read(MATERIAL_PAGE)
    text = "\n".join(block.text for section in page.sections for block in section.blocks)
    assert "WebSockets" not in text and "Responses" not in text and "Table of contents" not in text
    assert [(s.anchor, s.blocks[0].text) for s in page.sections if s.blocks] == [
        ("requests", "Starlette includes a `Request` class that gives you a nicer interface."),
        ("method", "The request method is accessed as `request.method`."),
    ]


def test_a_themes_modal_dialog_is_neither_text_nor_a_section():
    # MkDocs' default theme: no <main>, so the whole body is read, and its shortcuts dialog sits there
    page = read(
        "<html><body><div class='container'><h1 id='keys'>Keys</h1><p>Keys renders keyboard keys.</p></div>"
        '<div class="modal" id="mkdocs_keyboard_modal" role="dialog"><h4 id="keyboardModalLabel">Keyboard '
        "Shortcuts</h4><p>Next: press n</p></div></body></html>"
    )
    assert [s.anchor for s in page.sections if s.blocks] == ["keys"]
    assert not any("press n" in block.text for section in page.sections for block in section.blocks)


def test_a_listing_of_several_articles_is_read_from_main():
    listing = (
        "<html><body><nav>Home</nav><main><article><h2 id='a'>First post</h2><p>Alpha text here.</p></article>"
        "<article><h2 id='b'>Second post</h2><p>Beta text here.</p></article></main></body></html>"
    )
    assert [s.anchor for s in read(listing, "blog/index.html").sections if s.blocks] == ["a", "b"]


def test_a_generators_404_page_is_not_documentation():
    assert not_documentation("404.html") == "a generated index, search or 404 page"
    assert not_documentation("guide/404-errors.html") is None
