"""The MDX reader: an MDX-aware markdown-it parser.

MDX differs from CommonMark in ways that matter for chunking:
* top-level ``import``/``export`` statements are code, not prose;
* a line holding only a JSX tag (``<Steps>``, ``</Fragment>``, ``<Image ... />``) opens or closes
  a component whose children are still Markdown, whereas CommonMark would swallow the following
  lines as a raw HTML block (including fenced code inside ``<PackageManagerTabs>``);
* there are no indented code blocks, so a fence nested inside an indented component is still a fence;
* ``{/* ... */}`` expressions are comments, on their own lines or inside a paragraph.

The rules below are markdown-it block rules, so fences, lists and containers keep being parsed by
markdown-it itself; the JSX lines become ``jsx_tag`` tokens the chunker can label or ignore.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import quote

import yaml
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from ..slugs import Slugger, github_slug
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


def _inline_comment_rule(state, silent: bool) -> bool:
    """An inline ``{/* ... */}`` comment (MDX renders nothing for it): dropped from the text, where
    it is outside code (code spans are read first)."""
    if not state.src.startswith("{/*", state.pos):
        return False
    end = state.src.find("*/}", state.pos + 3)
    if end < 0:
        return False
    if _HEADING_ID_COMMENT.fullmatch(state.src[state.pos : end + 3]) and not state.src[end + 3 :].strip():
        return False  # `## Title {/* #id */}`: Docusaurus's explicit heading id, which the heading keeps for its anchor
    state.pos = end + 3
    return True


_HEADING_ID_COMMENT = re.compile(r"\{/\*\s*#[^\s*]+\s*\*/\}")


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
    md.inline.ruler.before("emphasis", "mdx_comment", _inline_comment_rule)
    return md


_FRONTMATTER_EXPRESSION = re.compile(r"""\{\s*frontmatter((?:\.\w+|\[\d+\]|\["[^"]+"\]|\['[^']+'\])+)\s*\}""")
_KEY = re.compile(r"""\.(\w+)|\[(\d+)\]|\["([^"]+)"\]|\['([^']+)'\]""")


def _frontmatter(state: StateCore) -> dict:
    """The page's frontmatter, for the heading rule; a broken one is reported by the reader, not here."""
    for token in state.tokens:
        if token.type == "front_matter":
            try:
                data = yaml.safe_load(token.content)
            except yaml.YAMLError:
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def _frontmatter_value(frontmatter: dict, path: str) -> str | None:
    """``.a.b[0]`` looked up in the frontmatter, when it names a string (Astro uses nothing else)."""
    value: object = frontmatter
    for match in _KEY.finditer(path):
        key = next(group for group in match.groups() if group is not None)
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return None
    return value if isinstance(value, str) else None


def astro_heading_text(state: StateCore) -> None:
    """The text Astro makes each heading's id from (``meta["slug_text"]``), checked against Starlight
    built by Astro 7 (Satteri's heading-ids plugin; unified's ``rehypeHeadingIds`` reads the same):
    the heading's text content as rendered and not trimmed. Inline code, link and emphasis text and
    the text inside HTML/JSX elements count; an element with no children (``<Badge text="New" />``,
    ``<Since v="5.7" />``) adds nothing, but the spaces around it stay (``Added <Since v="5" />`` ->
    ``added-``); in MDX an expression adds its source, ``{frontmatter.title}`` the frontmatter's
    string (in Markdown both are text). ``{#id}`` is no id: MDX refuses to compile it as an
    expression, Markdown keeps it as text."""
    source = state.env.get("source")
    mdx = source is None or source.rel_path.endswith(".mdx")
    frontmatter: dict | None = None
    for n, token in enumerate(state.tokens[:-1]):
        if token.type != "heading_open":
            continue
        text = "".join(c.content for c in state.tokens[n + 1].children or [] if c.type in ("text", "code_inline"))
        if mdx and "frontmatter" in text:
            frontmatter = _frontmatter(state) if frontmatter is None else frontmatter
            text = _FRONTMATTER_EXPRESSION.sub(lambda m: _frontmatter_value(frontmatter, m.group(1)) or m.group(0), text)
        token.meta = {**(token.meta or {}), "slug_text": text}


def _entry_id(doc_path: str, meta: dict) -> str:
    """The Astro content id of a docs entry: frontmatter ``slug`` as written, from the docs root
    whatever the page's folder, else the file's path without its suffix, each part github-slugged
    (``guides/My_Page.v2.mdx`` -> ``guides/my_pagev2``)."""
    slug = meta.get("slug")
    if slug is not None and str(slug).strip():
        return str(slug).strip()
    return "/".join(github_slug(part) for part in PurePosixPath(doc_path).with_suffix("").parts)


def starlight_page_url(base_url: str, doc_path: str, meta: dict) -> str:
    """Where Starlight serves a page, as a folder: its entry id, ``index`` being the root and a last
    ``/index`` dropped (Starlight's ``slugToParam``)."""
    entry = _entry_id(doc_path, meta)
    path = "" if entry == "index" else entry.removesuffix("/index")
    base = base_url if base_url.endswith("/") else base_url + "/"
    return f"{base}{quote(path, safe='/-._~')}/" if path else base


def starlight_not_published(doc_path: str, meta: dict) -> str:
    """Why Starlight builds no page of this file's text ("" when it does)."""
    if PurePosixPath(doc_path).name.startswith("_"):
        return "Starlight's docs loader skips files whose name starts with _"
    if meta.get("draft") is True:
        return "a draft (draft: true), which Starlight leaves out of production builds"
    if _entry_id(doc_path, meta).startswith("/"):  # its route param loses the /, so no entry matches
        return "its frontmatter slug starts with /, and Starlight serves that path its 404 page"
    return ""


def _site_fields(site: SiteOptions) -> dict:
    """A Docusaurus site's own URL and heading id rules (``readers.docusaurus``); other sites have none."""
    return docusaurus.site_fields(site.docusaurus, build_parser()) if site.docusaurus else {}


def _starlight_parser() -> MarkdownIt:
    parser = build_parser()
    parser.core.ruler.push("astro_heading_text", astro_heading_text)
    return parser


MDX = MarkdownReader(
    name="mdx",
    label="Markdown/MDX",
    suffixes=(".md", ".mdx", ".markdown"),
    # 8: Starlight's built ids (untrimmed text, {frontmatter.x}, no {#id}) and URLs (slugged paths,
    # slug from the docs root, _files and drafts unpublished)
    version="9",  # 9: inline {/* */} comments dropped
    parser=_starlight_parser(),
    split_heading_id=lambda heading: (heading, None),  # Astro has no heading id syntax
    new_slugger=lambda _explicit_ids: Slugger(),
    page_url=starlight_page_url,
    site_fields=_site_fields,
    not_published=starlight_not_published,
)
"""Astro/Starlight MDX and Markdown (the Astro docs), as ``astro build`` with Starlight makes its
pages: github-slugger ids of each heading's text, folder URLs of slugged paths; a Docusaurus site
found by its config gets Docusaurus's own rules (``readers.docusaurus``)."""
