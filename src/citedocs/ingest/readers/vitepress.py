"""The VitePress reader: markdown-it as VitePress configures it, with its Vue-aware extras.

* custom containers ``::: tip Title`` ... ``:::`` (nested with more colons), ``::: details``,
  ``::: code-group``: labelled notes whose body is Markdown;
* ``<script setup>``, ``<style>`` and Vue component lines are HTML blocks, not text; ``{{ expr }}``
  interpolation and ``[[toc]]`` are not text either;
* ``<<< @/path`` imports a code file (``@`` is the docs root), read only from inside the corpus;
* a home page (``layout: home``) keeps its text in frontmatter (``hero``, ``features``).
Anchors are VitePress's slugify of the text its plugins leave in a heading (``vitepress_headings``),
with ``-1`` repeats counted over every heading of the page and ``{#id}`` overrides. URLs are clean
(``guide/getting-started.md`` -> ``<base>guide/getting-started``, ``guide/index.md`` -> ``<base>guide/``),
or ``page.html`` when the site's ``.vitepress/config.*`` does not set ``cleanUrls`` (``for_site``).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import PurePosixPath

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from ..document import page_path
from ..slugs import AnchorSlugger, vitepress_slug
from . import SiteOptions
from .includes import IncludeRefused, fence_language, page_dir, read_inside_root
from .markdown import MarkdownReader
from .visibility import vue_fragment_hides
from .vitepress_headings import heading_ids

CONTAINERS = ("tip", "info", "warning", "danger", "details", "code-group", "raw", "v-pre")
_IMPORT = re.compile(r"^<<<[ ]+(\S+?)(?:#([\w-]+))?(?:\{[^}]*\})?(?:[ ]+\[[^\]]*\])?[ ]*$")
_INTERPOLATION = re.compile(r"\{\{.*?\}\}")


def _import_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """``<<< @/snippets/file.js#region{2}``: the file (or region) as a fenced code block."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    line = state.src[state.bMarks[start_line] + state.tShift[start_line] : state.eMarks[start_line]]
    match = _IMPORT.match(line)
    if not match:
        return False
    if silent:
        return True
    source = state.env["source"]
    target, region = match.group(1), match.group(2)
    state.line = start_line + 1
    try:
        if target.startswith("@/"):
            code = read_inside_root(source, target[2:], (source.root,))
        else:
            code = read_inside_root(source, target, (page_dir(source),))
    except IncludeRefused as exc:
        state.env["notes"].append(f"code import {exc}; dropped")
        return True
    if region:
        code = _region(code, region)
    token = state.push("fence", "code", 0)
    token.info = fence_language(target)
    token.content = code.rstrip("\n") + "\n"
    token.map = [start_line, start_line + 1]
    return True


def _region(code: str, name: str) -> str:
    """The lines between ``#region name`` and its ``#endregion`` (VitePress's snippet regions)."""
    lines = code.split("\n")
    start = next((n for n, line in enumerate(lines) if re.search(rf"#region\s+{re.escape(name)}\b", line)), None)
    if start is None:
        return code
    end = next((n for n in range(start + 1, len(lines)) if "#endregion" in lines[n]), len(lines))
    return "\n".join(lines[start + 1 : end])


def _container_titles(state: StateCore) -> None:
    """``::: warning Careful`` is titled "Careful"; a bare ``::: tip`` is titled "Tip"."""
    for token in state.tokens:
        if token.type.startswith("container_") and token.type.endswith("_open"):
            name, _, title = token.info.strip().partition(" ")
            token.meta = {**(token.meta or {}), "title": title.strip() or name.replace("-", " ").capitalize()}
        elif token.type == "inline":
            for child in token.children or []:
                if child.type == "text":
                    child.content = _INTERPOLATION.sub("", child.content)
            if (token.content or "").strip() == "[[toc]]":
                token.children = []


def build_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    front_matter_plugin(md)
    for name in CONTAINERS:
        container_plugin(md, name, validate=partial(_starts_with, name))
    md.block.ruler.before("fence", "vitepress_import", _import_rule, {"alt": ["paragraph"]})
    md.core.ruler.after("inline", "vitepress_heading_ids", heading_ids)  # before interpolation is dropped
    md.core.ruler.after("vitepress_heading_ids", "vitepress_cleanup", _container_titles)
    return md


def _starts_with(name: str, params: str, *_args) -> bool:
    return params.strip().split(" ", 1)[0] == name


def frontmatter_text(meta: dict) -> list[str]:
    """Text a ``layout: home`` page keeps in frontmatter: the hero and the feature cards."""
    blocks: list[str] = []
    hero = meta.get("hero")
    if isinstance(hero, dict):
        lines = [str(hero[k]) for k in ("name", "text", "tagline") if isinstance(hero.get(k), (str, int, float))]
        if lines:
            blocks.append("\n".join(lines))
    features = meta.get("features")
    if isinstance(features, list):
        for feature in features:
            if isinstance(feature, dict) and feature.get("title"):
                details = feature.get("details")
                blocks.append(f"{feature['title']}: {details}" if details else str(feature["title"]))
    return blocks


def clean_url(base_url: str, doc_path: str, _meta: dict | None = None, clean: bool = True) -> str:
    """``guide/getting-started.md`` -> ``<base>guide/getting-started`` (``cleanUrls``, and the default
    when no config says) or ``<base>guide/getting-started.html``; ``guide/index.md`` -> ``<base>guide/``."""
    base = base_url if base_url.endswith("/") else base_url + "/"
    path = page_path(doc_path)
    if path == "index":
        return base
    if PurePosixPath(doc_path).stem == "index":
        return f"{base}{path}/"
    return f"{base}{path}" if clean else f"{base}{path}.html"


def _site_fields(site: SiteOptions) -> dict:
    """``cleanUrls`` from ``.vitepress/config.*`` (``directory_urls``): ``page`` or ``page.html``."""
    return {"page_url": lambda base_url, doc_path, meta: clean_url(base_url, doc_path, meta, site.directory_urls)}


VITEPRESS = MarkdownReader(
    name="vitepress",
    label="VitePress Markdown",
    suffixes=(".md",),
    version="3",  # 3: raw HTML whose v-if/v-show is a constant false is not text
    parser=build_parser(),
    split_heading_id=lambda heading: (heading, None),  # the attribute list is read by ``heading_ids``
    new_slugger=lambda _explicit_ids: AnchorSlugger(vitepress_slug),
    page_url=clean_url,
    frontmatter_text=frontmatter_text,
    site_fields=_site_fields,
    html_hides=vue_fragment_hides,
)
"""VitePress sites (the VitePress and Vite docs, ...)."""
