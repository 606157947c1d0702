"""What every reader hands the chunker: a page as titled sections of blocks, with the site's anchors.

Readers differ (MDX, MkDocs Markdown, VitePress, reST, HTML); what they produce does not. A reader
owns the dialect's syntax, its slug algorithm and its URL rule; the chunker owns only packing
blocks into chunks. Splitting there never needs to know the source format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import quote

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


class DocumentError(ValueError):
    """A page that cannot be ingested; the message says why."""


class ReaderUnavailable(RuntimeError):
    """A reader cannot read any page here (a tool it needs is missing); the message says what to do."""


def estimate_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text))


@dataclass
class Block:
    """One unit of text the chunker never cuts inside (a paragraph, a list, a fence, a note)."""

    text: str
    splittable_after: bool = True  # False while a component or container is still open after this block


@dataclass
class Section:
    heading_path: tuple[str, ...]  # headings from the page's top down to this section
    anchor: str  # the section's own anchor on the live site ("" = page top)
    anchor_path: tuple[str, ...]  # anchors of the enclosing sections, outermost first, own last
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class ParsedPage:
    doc_path: str  # corpus-relative source path
    page: str  # the page part of chunk ids, e.g. guides/deploy
    url: str  # the page's public URL, without an anchor
    title: str
    description: str
    frontmatter: dict
    sections: list[Section]
    notes: tuple[str, ...] = ()  # what the reader dropped or could not resolve, for the ingest report
    # what a browser does not show (readers/visibility.py), dropped: (reason, elements that held text)
    hidden: tuple[tuple[str, int], ...] = ()


def page_path(doc_path: str) -> str:
    """``guides/deploy/index.mdx`` -> ``guides/deploy``; ``getting-started.mdx`` -> ``getting-started``.

    Percent-encoded (``my notes [v2].md`` -> ``my%20notes%20%5Bv2%5D``): the result is both the
    page part of chunk ids, which answers cite in ``[...]`` markers, and part of the page's URL, so
    it must be URL-safe and free of spaces, brackets and newlines whatever the file is called.
    Plain names are unchanged, so existing ids stay stable.
    """
    path = PurePosixPath(doc_path).with_suffix("")
    if path.name == "index" and str(path.parent) != ".":
        path = path.parent
    return quote(str(path), safe="/-._~")


def directory_url(base_url: str, doc_path: str) -> str:
    """URL of a page on a site that serves each page as a folder (``.../page/``)."""
    path = page_path(doc_path)
    base = base_url if base_url.endswith("/") else base_url + "/"
    return base if path == "index" else f"{base}{path}/"


def file_url(base_url: str, doc_path: str) -> str:
    """URL of a page on a site that serves each page as an ``.html`` file (``.../page.html``)."""
    path = PurePosixPath(quote(doc_path, safe="/-._~")).with_suffix(".html")
    base = base_url if base_url.endswith("/") else base_url + "/"
    return f"{base}{path}"
