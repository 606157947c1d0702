"""One reader per docs format, behind one interface: source file in, ``ParsedPage`` out."""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..document import ParsedPage


@dataclass(frozen=True)
class SourceFile:
    rel_path: str  # corpus-relative, POSIX separators
    text: str
    root: Path  # the corpus root: includes and snippets may be read only from inside it
    base_url: str


@dataclass(frozen=True)
class MystOptions:
    """A Sphinx site's MyST Markdown pages: the suffixes Sphinx parses as MyST (``.md``, plus any
    ``source_suffix`` maps to ``markdown``) and ``conf.py``'s ``myst_*`` settings, as JSON values,
    which myst-parser reads as Sphinx hands them over (``myst_enable_extensions``, ...)."""

    suffixes: tuple[str, ...] = (".md",)
    settings: tuple[tuple[str, str], ...] = ()  # (("myst_heading_anchors", "3"), ...)


@dataclass(frozen=True)
class DocusaurusSite:
    """What a ``docusaurus.config.*`` sets that moves a doc's URL or its anchors; the defaults are
    Docusaurus's own (3.x, the classic preset's docs plugin)."""

    route_base: str = "docs"  # the docs plugin's ``routeBasePath``: docs are served below it
    trailing_slash: bool | None = None  # ``trailingSlash``: None leaves each URL as its slug ends
    maintain_case: bool = False  # ``markdown.anchors.maintainCase``: anchors keep the heading's case


@dataclass(frozen=True)
class SiteOptions:
    """Settings in a site generator's config that change a page's URL or its anchors.

    The defaults are the generator's own, so a site without such settings reads exactly as before.
    MkDocs has them (``use_directory_urls``, ``toc``'s ``slugify`` and ``separator``, whether ``def_list``
    is enabled); for Sphinx, the
    builder (``dirhtml`` or ``html``) decides the URL layout and ``conf.py`` whether ``.md`` pages are
    MyST; for VitePress, ``cleanUrls``; a Docusaurus site has its own (``docusaurus``)."""

    # pages served without ``.html``: ``page/`` (MkDocs' default, Sphinx dirhtml) or ``page`` (VitePress
    # cleanUrls); False: ``page.html``
    directory_urls: bool = True
    toc_slugify: str = ""  # dotted name of ``toc``'s slug function; "" is Python-Markdown's own
    toc_slugify_options: tuple[tuple[str, object], ...] = ()  # its keyword arguments (``case: lower``)
    toc_separator: str = "-"
    myst: MystOptions | None = field(default=None, repr=False)  # a Sphinx site that enables MyST
    docusaurus: DocusaurusSite | None = field(default=None, repr=False)  # a Docusaurus site's URL and anchor rules
    # Python-Markdown's ``def_list`` (``:   definition``): MkDocs reads it only where the config's
    # ``markdown_extensions`` enables it; elsewhere such a line is paragraph text, as the site shows it
    definition_lists: bool = field(default=True, repr=False)
    # MkDocs' ``nav``: (page path in the docs folder, its title there); a nav title names the page
    nav_titles: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def fingerprint(self) -> str:
        """Short and stable; part of the reader's version, so changing a setting rebuilds the index.
        ``html.`` leads when pages are ``.html`` files: a later ingest reads the layout back from the
        corpus's pipeline (``remembered_directory_urls``), since a flag may have chosen it. MyST and
        Docusaurus settings and nav titles join only where a site has them, so every other site keeps its fingerprint
        (and index). ``nodl.`` marks a site without definition lists, read back the same way
        (``remembered_definition_lists``)."""
        described = repr(self) + "".join(repr(extra) for extra in (self.myst, self.docusaurus, self.nav_titles) if extra)
        digest = hashlib.sha256(described.encode()).hexdigest()[:8]
        return ("" if self.directory_urls else "html.") + ("" if self.definition_lists else "nodl.") + digest


def remembered_directory_urls(pipeline: str) -> bool:
    """Whether a corpus was ingested with ``page/`` URLs, read from its pipeline string."""
    return ".html." not in pipeline.split("+", 1)[0]


def remembered_definition_lists(pipeline: str) -> bool:
    """Whether a corpus was ingested with definition lists read, from its pipeline string."""
    return ".nodl." not in pipeline.split("+", 1)[0]


class Reader(Protocol):
    name: str  # what --format names, and part of the index's pipeline version
    label: str  # how messages name the format ("Markdown/MDX", "reStructuredText")
    suffixes: tuple[str, ...]  # source files this reader reads
    version: str  # bumped when its output changes, so existing indexes rebuild

    def read(self, source: SourceFile) -> ParsedPage: ...


# --format name -> (module, object): a reader's module is imported when it is named (the
# reStructuredText one loads docutils and myst-parser, a second of a no-change sync of MDX docs)
_READERS = {
    "mdx": (".mdx", "MDX"),
    "mkdocs": (".mkdocs", "MKDOCS"),
    "vitepress": (".vitepress", "VITEPRESS"),
    "rst": (".rst", "RST"),
    "html": (".html", "HTML"),
}


def available_readers() -> dict[str, Reader]:
    return {name: reader_named(name) for name in _READERS}


def for_site(reader: Reader, site: SiteOptions) -> Reader:
    """``reader`` with the site's settings applied; a reader whose dialect has none is returned as it is."""
    configure = getattr(reader, "for_site", None)
    return configure(site) if configure is not None and site != SiteOptions() else reader


def reader_named(name: str) -> Reader:
    if name not in _READERS:
        raise ValueError(f"unknown docs format {name!r}; use one of: {', '.join(sorted(_READERS))}")
    module, reader = _READERS[name]
    return getattr(importlib.import_module(module, __package__), reader)
