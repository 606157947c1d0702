"""Docusaurus's own rules for a doc's URL and its heading ids, applied to the MDX reader when a
``docusaurus.config.*`` is found (checked against ``docusaurus build`` 3.10, classic preset).

URLs (``@docusaurus/plugin-content-docs``, ``lib/slug.js`` and ``lib/docs.js``):
* a doc is served at ``<baseUrl><routeBasePath>/<slug>``; its slug is its folder (number prefixes
  such as ``01-`` stripped from every part) plus its id, which is frontmatter ``id`` or the file name
  without its number prefix (``02-setup/01-install.md`` -> ``setup/install``);
* frontmatter ``slug`` wins: ``/x`` from the docs root, otherwise resolved against the folder;
* ``index.md``, ``README.md`` or a file named as its folder is the folder's page (``hard/`` keeps its
  slash); ``trailingSlash: true``/``false`` adds or removes the last ``/`` everywhere;
* files and folders starting with ``_`` (partials) and ``draft: true`` docs are not published.
Heading ids (``@docusaurus/mdx-loader``, ``lib/remark/headings``): an explicit id, ``{#id}`` at the end
of the heading or a last ``{/* #id */}`` / ``<!-- #id -->`` comment, is used as written and never
counted; every other heading gets github-slugger's slug of its text (inline code, link text and
image alt text included, HTML tags left out), ``-1``, ``-2`` for repeats. The theme shows h1 headings
without their id (``@theme/Heading``), so an h1's section is cited by the page's URL.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import quote, urljoin

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from ..slugs import DocusaurusSlugger
from . import DocusaurusSite

_NUMBER_PREFIX = re.compile(r"^(\d+)\s*[-_.]+\s*([^-_.\s].*)$")
_NOT_A_NUMBER_PREFIX = re.compile(r"^\d+[-_.]\d+")  # a date or a version: 2021-11-foo, 7.0-foo
_CLASSIC_ID = re.compile(r"\s*\{#((?:.(?!\{#|\}))*.)\}$")
_MDX_COMMENT = re.compile(r"\s*\{/\*(.*?)\*/\}$", re.S)
_HTML_COMMENT = re.compile(r"^<!--(.*)-->$", re.S)


def strip_number_prefix(name: str) -> str:
    """``01-intro`` -> ``intro`` (Docusaurus's default number prefix parser); ``2021-11-notes`` stays."""
    if _NOT_A_NUMBER_PREFIX.match(name):
        return name
    match = _NUMBER_PREFIX.match(name)
    return match.group(2) if match else name


def not_published(doc_path: str, meta: dict) -> str:
    """Why Docusaurus does not publish this file as a doc ("" when it does)."""
    if any(part.startswith("_") for part in PurePosixPath(doc_path).parts):
        return "Docusaurus does not publish files or folders whose name starts with _ (partials)"
    if meta.get("draft") is True:
        return "a draft (draft: true), which Docusaurus does not publish"
    return ""


def doc_slug(doc_path: str, meta: dict) -> str:
    """The doc's slug below the docs route: ``/setup/install``, ``/hard/`` for a folder's index."""
    path = PurePosixPath(doc_path)
    folder = "/".join(strip_number_prefix(part) for part in path.parent.parts)
    folder_slug = f"/{folder}/" if folder else "/"
    slug = meta.get("slug")
    if isinstance(slug, str) and slug.startswith("/"):
        return slug
    index_names = ("index", "readme", path.parent.name.lower())
    if not slug and path.stem.lower() in index_names:
        return folder_slug
    doc_id = meta.get("id")
    base_id = str(doc_id) if doc_id is not None else strip_number_prefix(path.stem)
    target = slug if isinstance(slug, str) and slug else base_id
    return urljoin(f"http://docs.invalid{folder_slug}", target).removeprefix("http://docs.invalid")


def page_url(site: DocusaurusSite, base_url: str, doc_path: str, meta: dict) -> str:
    """``<base><routeBasePath><slug>``, with ``trailingSlash`` applied."""
    path = "/".join(part for part in (site.route_base.strip("/"), doc_slug(doc_path, meta).lstrip("/")) if part)
    if site.trailing_slash is True and not path.endswith("/"):
        path += "/"
    elif site.trailing_slash is False:
        path = path.rstrip("/")
    base = base_url if base_url.endswith("/") else base_url + "/"
    return base + quote(path, safe="/-._~")


def _comment_id(comment: str) -> str | None:
    """``#my-id`` as the first word of a comment is an id; any other comment is not."""
    first = comment.strip().split(" ")[0]
    return (first[1:] or None) if first.startswith("#") else None


def _take_comment_id(children: list[Token]) -> str | None:
    """A last ``{/* #id */}`` or ``<!-- #id -->``: its id, removed from the heading with the space before it."""
    last = children[-1] if children else None
    if last is None:
        return None
    if last.type == "html_inline" and (match := _HTML_COMMENT.match(last.content)):
        heading_id = _comment_id(match.group(1))
        if heading_id:
            children.pop()
            if children and children[-1].type == "text":
                children[-1].content = children[-1].content.rstrip()
        return heading_id
    if last.type == "text" and (match := _MDX_COMMENT.search(last.content)):
        heading_id = _comment_id(match.group(1))
        if heading_id:
            last.content = last.content[: match.start()]
        return heading_id
    return None


def _to_string(children: list[Token]) -> str:
    """mdast-util-to-string of the heading without its HTML: text, inline code, image alt text."""
    return "".join(c.content for c in children if c.type in ("text", "text_special", "code_inline", "image"))


def _take_classic_id(children: list[Token]) -> str | None:
    """``Title {#id}``: the id (trimmed), removed from the last text of the heading."""
    match = _CLASSIC_ID.search(_to_string(children))
    last = children[-1] if children else None
    if not match or last is None or last.type != "text":
        return None
    own = _CLASSIC_ID.search(last.content)
    if own:
        last.content = last.content[: own.start()]
    return match.group(1).strip()


def heading_ids(state: StateCore) -> None:
    """Each heading's explicit id (``attrs["id"]``) and the text its slug is made from (``meta``)."""
    for n, token in enumerate(state.tokens[:-1]):
        if token.type != "heading_open" or not state.tokens[n + 1].children:
            continue
        children = state.tokens[n + 1].children
        heading_id = _take_comment_id(children) or _take_classic_id(children)
        if heading_id:
            token.attrSet("id", heading_id)
        # the theme renders every h1 without its id (only h2-h6 are linkable): the page is the citation
        token.meta = {**(token.meta or {}), "slug_text": _to_string(children), "no_id": token.tag == "h1"}


def site_fields(site: DocusaurusSite, parser: MarkdownIt) -> dict:
    """The MDX reader's fields for a Docusaurus site: its heading ids, slugger, URLs, unpublished files."""
    parser.core.ruler.push("docusaurus_heading_ids", heading_ids)
    return {
        "parser": parser,
        "split_heading_id": lambda heading: (heading, None),  # read by ``heading_ids``
        "new_slugger": lambda _explicit_ids: DocusaurusSlugger(site.maintain_case),
        "page_url": lambda base_url, doc_path, meta: page_url(site, base_url, doc_path, meta),
        "not_published": not_published,
    }
