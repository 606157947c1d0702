"""The MDX reader: an MDX-aware markdown-it parser.

MDX differs from CommonMark in ways that matter for chunking:
* top-level ``import``/``export`` statements are code, not prose;
* a line holding only a JSX tag (``<Steps>``, ``</Fragment>``, ``<Image ... />``) opens or closes
  a component whose children are still Markdown, whereas CommonMark would swallow the following
  lines as a raw HTML block (including fenced code inside ``<PackageManagerTabs>``);
* there are no indented code blocks, so a fence nested inside an indented component is still a fence;
* ``{/* ... */}`` expressions are comments.

The rules below are markdown-it block rules, so fences, lists and containers keep being parsed by
markdown-it itself; the JSX lines become ``jsx_tag`` tokens the chunker can label or ignore.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from ..document import directory_url
from ..slugs import Slugger, split_explicit_id
from . import SiteOptions, docusaurus
from .jsx import parse_jsx_tag, scan_tag_end
from .markdown import MarkdownReader

ADMONITIONS = ("note", "tip", "caution", "danger", "warning", "important")


def _line_text(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _line_of(state: StateBlock, pos: int, start_line: int, end_line: int) -> int:
    line = start_line
    while line < end_line and state.eMarks[line] < pos:
        line += 1
    return line


def _jsx_tag_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """A line (or lines) holding nothing but one JSX tag."""
    text = _line_text(state, start_line)
    if not (text.startswith("<") and len(text) > 1 and (text[1].isalpha() or text[1] in "/>")):
        return False
    start = state.bMarks[start_line] + state.tShift[start_line]
    end = scan_tag_end(state.src, start)
    if end is None:
        return False
    last_line = _line_of(state, end - 1, start_line, end_line)
    if last_line >= end_line or state.src[end : state.eMarks[last_line]].strip():
        return False  # text follows the tag on its line: leave it to the inline parser
    if silent:
        return True
    raw = state.src[start:end]
    token = state.push("jsx_tag", "", 0)
    token.content = raw
    token.meta = {"tag": parse_jsx_tag(raw)}
    token.map = [start_line, last_line + 1]
    state.line = last_line + 1
    return True


def _esm_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """Top-level ``import``/``export`` statements, up to the next blank line."""
    if state.blkIndent != 0 or state.level != 0:
        return False
    text = _line_text(state, start_line)
    if not re.match(r"(import|export)\b", text):
        return False
    if silent:
        return True
    line = start_line + 1
    while line < end_line and not state.isEmpty(line):
        line += 1
    token = state.push("mdx_esm", "", 0)
    token.content = state.getLines(start_line, line, 0, False)
    token.map = [start_line, line]
    state.line = line
    return True


def _expression_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """A block-level ``{...}`` expression (in the docs: ``{/* comments */}``), dropped from text."""
    text = _line_text(state, start_line)
    if not text.startswith("{"):
        return False
    start = state.bMarks[start_line] + state.tShift[start_line]
    depth, i = 0, start
    while i < len(state.src):
        if state.src[i] == "{":
            depth += 1
        elif state.src[i] == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    else:
        return False
    last_line = _line_of(state, i, start_line, end_line)
    if last_line >= end_line or state.src[i + 1 : state.eMarks[last_line]].strip():
        return False
    if silent:
        return True
    token = state.push("mdx_expression", "", 0)
    token.content = state.src[start : i + 1]
    token.map = [start_line, last_line + 1]
    state.line = last_line + 1
    return True


def _admonition_validator(name: str):
    """``:::tip``, ``:::tip[Title]`` and Docusaurus 3's ``:::tip Title`` (its ``mdx1Compat.admonitions``,
    on unless the site opts into ``future.v4``)."""
    pattern = re.compile(rf"^{name}(\[.*\]|\s+\S.*)?\s*$")

    def validate(params: str, *_args) -> bool:
        return bool(pattern.match(params.strip()))

    return validate


def build_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table").disable(["code", "html_block"])
    front_matter_plugin(md)
    for name in ADMONITIONS:
        container_plugin(md, name, validate=_admonition_validator(name))
    alt = ["paragraph", "reference", "blockquote", "list"]
    md.block.ruler.before("fence", "mdx_esm", _esm_rule, {"alt": alt})
    md.block.ruler.before("fence", "jsx_tag", _jsx_tag_rule, {"alt": alt})
    md.block.ruler.before("fence", "mdx_expression", _expression_rule, {"alt": alt})
    return md


def mdx_page_url(base_url: str, doc_path: str, meta: dict) -> str:
    """Folder URLs, unless frontmatter moves the page: Docusaurus/Starlight ``slug`` (absolute from the
    site root with a leading ``/``, else relative to the page's folder) or Docusaurus ``id`` (replaces
    the file name)."""
    slug, doc_id = meta.get("slug"), meta.get("id")
    if isinstance(slug, str) and slug.strip():
        slug = slug.strip()
        folder = PurePosixPath(doc_path).parent
        path = slug.strip("/") if slug.startswith("/") else str(folder / slug).strip("/").removeprefix("./")
    elif isinstance(doc_id, str) and re.fullmatch(r"[\w.-]+", doc_id):
        path = str(PurePosixPath(doc_path).parent / doc_id).removeprefix("./")
    else:
        return directory_url(base_url, doc_path)
    base = base_url if base_url.endswith("/") else base_url + "/"
    return f"{base}{path}/" if path not in ("", ".") else base


def _site_fields(site: SiteOptions) -> dict:
    """A Docusaurus site's own URL and heading id rules (``readers.docusaurus``); other sites have none."""
    return docusaurus.site_fields(site.docusaurus, build_parser()) if site.docusaurus else {}


MDX = MarkdownReader(
    name="mdx",
    label="Markdown/MDX",
    suffixes=(".md", ".mdx", ".markdown"),
    version="7",  # 7: github-slugger's characters; nested headings take ids in page order; :::tip Title
    parser=build_parser(),
    split_heading_id=split_explicit_id,
    new_slugger=lambda _explicit_ids: Slugger(),
    page_url=mdx_page_url,
    site_fields=_site_fields,
)
"""Docusaurus/Starlight-style MDX (the Astro docs): GitHub slugs, ``{#id}`` overrides, folder URLs;
a Docusaurus site found by its config gets Docusaurus's own rules (``readers.docusaurus``)."""
