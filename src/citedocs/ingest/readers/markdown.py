"""Markdown dialects read with markdown-it: tokens -> titled sections of blocks.

The dialects (MDX, MkDocs/PyMdown, VitePress) differ in block syntax, heading attributes and slug
algorithm; a dialect is a parser plus those two rules. Flattening tokens into readable text (code
fences verbatim, notes labelled, list markers kept) is shared.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..document import Block, DocumentError, ParsedPage, Section, page_path
from ..slugs import Slugger
from . import SiteOptions, SourceFile
from .jsx import JsxTag, parse_jsx_tag
from .visibility import HiddenRuns, fragment_hides

_ASIDE_COMPONENTS = {"aside", "callout", "admonition"}
# Elements whose content is code or styling for the browser, never prose (HTML comments are dropped too).
_RAW_TEXT_ELEMENTS = {"script", "style"}


def _render_inline(token: Token, runs: HiddenRuns) -> str:
    """Inline text as a reader of the page sees it: no <script>/<style>/comment, and nothing inside
    raw HTML that a browser hides (``runs`` carries that state across the page's blocks)."""
    out: list[str] = []
    raw = 0  # inside an inline <script> or <style>
    for child in token.children or []:
        if child.type == "html_inline" and parse_jsx_tag(child.content).name.lower() in _RAW_TEXT_ELEMENTS:
            raw = max(0, raw + (-1 if child.content.startswith("</") else 1))
        elif raw:
            continue
        elif child.type == "html_inline":
            runs.feed(child.content)
            tag = parse_jsx_tag(child.content)
            if tag.name == "Since" and tag.attrs.get("v") and not runs.active:
                out.append(f"(added in v{tag.attrs['v']})")
        elif runs.swallow(child.content):
            continue
        elif child.type == "text":
            out.append(child.content)
        elif child.type == "code_inline":
            out.append(f"`{child.content}`")
        elif child.type == "softbreak":
            out.append(" ")
        elif child.type == "hardbreak":
            out.append("\n")
        elif child.type == "image":
            out.append(child.content or "")
    return "".join(out)


def _heading_text(token: Token) -> str:
    """Heading text as the site slugs it: inline code content kept, tags dropped."""
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
    return "".join(parts).strip()


class _Renderer:
    """Flattens a run of block tokens into readable text, tracking open JSX components."""

    def __init__(self, hides: Callable[[str, dict[str, str]], str | None] = fragment_hides) -> None:
        self.jsx_depth = 0
        self.raw_element: str | None = None  # "script" or "style" while inside one: nothing is text
        self.runs = HiddenRuns(hides=hides)  # inside raw HTML a browser hides (hidden, display:none, ...): nothing is text
        self._lines: list[str] = []
        self._prefix_stack: list[str] = []
        self._list_stack: list[list[int | None]] = []  # [next number or None for bullets]
        self._pending_marker: str | None = None
        self._row: list[str] | None = None

    def take(self) -> str:
        # at most one blank line between blocks; a fence is one entry, so its code stays verbatim
        lines: list[str] = []
        for line in self._lines:
            if line == "" and lines and lines[-1] == "":
                continue
            lines.append(line)
        self._lines = []
        return "\n".join(lines).strip()

    def _indent(self) -> str:
        return "  " * max(0, len(self._list_stack) - 1)

    def _emit(self, text: str) -> None:
        if not text.strip():
            return
        if self._pending_marker is not None:
            text = f"{self._indent()}{self._pending_marker} {text}"
            self._pending_marker = None
        elif self._list_stack:
            text = f"{self._indent()}  {text}"
        prefix = "".join(self._prefix_stack)
        self._lines.append(prefix + text)

    def feed(self, token: Token) -> None:
        kind = token.type
        if self.raw_element and kind != "jsx_tag":
            # the closing tag may be inline HTML of the paragraph above it, or swallowed by an
            # `import` line's block; a heading always ends it, so an unclosed tag loses one section at most
            closed = f"</{self.raw_element}" in token.content.lower() or kind == "heading_open"
            if closed:
                self.raw_element = None
            if kind != "heading_open":
                return
        if kind == "html_block":
            self.runs.feed(token.content)  # a raw HTML block is not text, but may open or close a hidden element
        elif kind == "inline":
            if self._row is not None:
                self._row.append(_render_inline(token, self.runs).strip())
            else:
                self._emit(_render_inline(token, self.runs))
        elif kind == "fence" and self.runs.swallow(token.content):
            return
        elif kind == "paragraph_close" and not token.hidden and not self._list_stack:
            self._lines.append("")
        elif kind == "fence":
            lang = token.info.strip().split(" ")[0] if token.info else ""
            body = token.content.rstrip("\n")
            # a fence longer than any backtick run inside, so a sample showing a fence stays one block
            inner = max((len(run) for run in re.findall(r"^\s*(`{3,})", body, re.M)), default=0)
            ticks = "`" * max(3, inner + 1)
            fence = f"{ticks}{lang}\n{body}\n{ticks}"
            if self._pending_marker is not None:
                self._emit("")  # keep the list marker on its own line
                self._lines.append(f"{self._indent()}{self._pending_marker}")
                self._pending_marker = None
            self._lines.append(fence)
            self._lines.append("")
        elif kind in ("bullet_list_open", "ordered_list_open"):
            start = int(token.attrs.get("start", 1)) if kind == "ordered_list_open" else None
            self._list_stack.append([start])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self._list_stack.pop()
            if not self._list_stack:
                self._lines.append("")
        elif kind == "list_item_open":
            counter = self._list_stack[-1]
            if counter[0] is None:
                self._pending_marker = "-"
            else:
                self._pending_marker = f"{counter[0]}."
                counter[0] += 1
        elif kind == "heading_open":
            self._lines.append("")
        elif kind == "heading_close":
            self._lines.append("")
        elif kind == "tr_open":
            self._row = []
        elif kind == "tr_close":
            self._lines.append(" | ".join(self._row or []))
            self._row = None
        elif kind == "table_close":
            self._lines.append("")
        elif kind.startswith("container_") and kind.endswith("_open"):
            name = kind[len("container_") : -len("_open")]
            title = (token.meta or {}).get("title") or admonition_title(token.info, name)
            if not self.runs.swallow(title):
                self._lines.append(f"{title}:")
            self._prefix_stack.append("> ")
        elif kind.startswith("container_") and kind.endswith("_close"):
            self._prefix_stack.pop()
            self._lines.append("")
        elif kind == "blockquote_open":
            self._prefix_stack.append("> ")
        elif kind == "blockquote_close":
            self._prefix_stack.pop()
            self._lines.append("")
        elif kind == "jsx_tag":
            self._feed_jsx(token.meta["tag"], token.content)

    def _feed_jsx(self, tag: JsxTag, raw: str) -> None:
        if tag.name.lower() in _RAW_TEXT_ELEMENTS:
            self.raw_element = tag.name.lower() if tag.kind == "open" else None
        elif self.raw_element:
            return
        elif self.runs.active or self.runs.opens_hidden(raw):
            self.runs.feed(raw)  # a hidden element's own tags, or any tag inside one: not a component
        elif tag.kind == "open":
            self.jsx_depth += 1
            if tag.name.lower() in _ASIDE_COMPONENTS:
                label = tag.attrs.get("title") or tag.attrs.get("type", "note").capitalize()
                self._lines.append(f"{label}:")
                self._prefix_stack.append("> ")
            elif tag.name == "TabItem" and tag.attrs.get("label"):
                self._lines.append(f"{tag.attrs['label']}:")  # the tab's label is the context of its body
        elif tag.kind == "close":
            self.jsx_depth = max(0, self.jsx_depth - 1)
            if tag.name.lower() in _ASIDE_COMPONENTS and self._prefix_stack:
                self._prefix_stack.pop()
                self._lines.append("")
        elif tag.name == "Since" and tag.attrs.get("v"):
            self._emit(f"(added in v{tag.attrs['v']})")  # <Since v="5.7.0" /> on its own line
        elif tag.attrs.get("title"):
            self._emit(tag.attrs["title"])  # e.g. <LinkCard title="..." />


def _parse_frontmatter(tokens: list[Token], doc_path: str) -> dict:
    for token in tokens:
        if token.type == "front_matter":
            try:
                data = yaml.safe_load(token.content) or {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" at frontmatter line {mark.line + 2}" if mark else ""
                raise DocumentError(f"broken YAML frontmatter{where}: {getattr(exc, 'problem', exc)}") from exc
            if not isinstance(data, dict):
                raise DocumentError("frontmatter is not a key: value mapping")
            return data
    return {}


def _explicit_ids(tokens: list[Token]) -> list[str]:
    """Ids a dialect's own rules set on headings (attribute lists), before any slug is made."""
    return [str(t.attrGet("id")) for t in tokens if t.type == "heading_open" and t.attrGet("id")]


def _heading_anchor(
    tokens: list[Token], at: int, split_heading_id: Callable[[str], tuple[str, str | None]], slugger: Slugger
) -> tuple[str, str]:
    """The heading at ``at``: its text and the anchor the page's slugger gives it. Every heading takes
    its id in page order, nested ones too (generators number repeats over the whole page). A dialect's
    parser may leave on the heading the text its generator slugs (``meta["slug_text"]``) when that is
    not the heading's plain text, and ``meta["no_id"]`` when the built page shows the heading without
    its id (it still takes its slug; its section is cited by the page URL)."""
    text, explicit = split_heading_id(_heading_text(tokens[at + 1]))
    meta = tokens[at].meta or {}
    anchor = slugger.slug(meta.get("slug_text", text), tokens[at].attrGet("id") or explicit)
    return text, "" if meta.get("no_id") else anchor


def _sections(
    tokens: list[Token],
    split_heading_id: Callable[[str], tuple[str, str | None]],
    slugger: Slugger,
    hides: Callable[[str, dict[str, str]], str | None] = fragment_hides,
) -> tuple[list[Section], Counter]:
    """The page's sections, and what hidden raw HTML held (per reason, elements that held text)."""
    renderer = _Renderer(hides)
    top = Section(heading_path=(), anchor="", anchor_path=())
    sections = [top]
    stack: list[tuple[int, str, str]] = []  # (level, heading text, anchor)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type == "heading_open" and token.level == 0:
            text, anchor = _heading_anchor(tokens, i, split_heading_id, slugger)
            level = int(token.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text, anchor))
            sections.append(
                Section(
                    heading_path=tuple(h for _, h, _ in stack),
                    anchor=anchor,
                    anchor_path=tuple(a for _, _, a in stack),
                )
            )
            i += 3  # heading_open, inline, heading_close
            continue
        # one top-level block: a self-contained token, or an open .. matching close run
        j = i
        if token.nesting == 1:
            depth = 0
            while j < len(tokens):
                depth += tokens[j].nesting
                if depth == 0:
                    break
                j += 1
        depth_before = renderer.jsx_depth
        for n in range(i, j + 1):
            if tokens[n].type == "heading_open":  # inside a container or quote: no section, but an id
                _heading_anchor(tokens, n, split_heading_id, slugger)
            renderer.feed(tokens[n])
        text = renderer.take()
        if text:
            keep_with_next = bool(token.meta and token.meta.get("keep_with_next"))
            sections[-1].blocks.append(Block(text=text, splittable_after=renderer.jsx_depth == 0 and not keep_with_next))
        elif sections[-1].blocks:
            # a tag-only line: the boundary before it is open if no component encloses it
            sections[-1].blocks[-1].splittable_after = depth_before == 0 or renderer.jsx_depth == 0
        i = j + 1
    return sections, renderer.runs.finish()


def admonition_title(info: str, name: str) -> str:
    """``caution[Deprecated]`` -> ``Deprecated``; ``tip Title`` -> ``Title``; bare ``tip`` -> ``Tip``."""
    match = re.search(r"\[(.*)\]", info)
    if match and match.group(1).strip():
        return match.group(1).strip()
    rest = info.strip()[len(name) :].strip()
    return rest if rest and not rest.startswith("[") else name.capitalize()


@dataclass(frozen=True)
class MarkdownReader:
    """A Markdown dialect: its parser, how a heading names its anchor, and its URL rule."""

    name: str
    label: str
    suffixes: tuple[str, ...]
    version: str
    parser: MarkdownIt
    split_heading_id: Callable[[str], tuple[str, str | None]]  # heading -> (text, explicit id)
    new_slugger: Callable[[list[str]], Slugger]  # given the page's explicit heading ids
    page_url: Callable[[str, str, dict], str]  # (base_url, doc_path, frontmatter) -> page URL
    # resolves includes before parsing: source -> (text, notes on what could not be resolved)
    preprocess: Callable[[SourceFile], tuple[str, tuple[str, ...]]] = lambda source: (source.text, ())
    frontmatter_text: Callable[[dict], list[str]] = lambda meta: []  # page text held in frontmatter
    # the fields a site's config changes (slugger, URL rule); None: the dialect has no such settings
    site_fields: Callable[[SiteOptions], dict] | None = None
    # why the generator does not publish a source file as a page ("" when it does): (doc_path, frontmatter)
    not_published: Callable[[str, dict], str] = lambda doc_path, meta: ""
    # the title the site's navigation gives a page ("" for none); it wins over the page's own, as in MkDocs
    nav_title: Callable[[str], str] = lambda doc_path: ""
    # why the generator shows nothing of a raw HTML element (tag, attributes), or None
    html_hides: Callable[[str, dict[str, str]], str | None] = fragment_hides

    def for_site(self, site: SiteOptions) -> MarkdownReader:
        if self.site_fields is None:
            return self
        return replace(self, version=f"{self.version}.{site.fingerprint()}", **self.site_fields(site))

    def read(self, source: SourceFile) -> ParsedPage:
        text, notes = self.preprocess(source)
        env: dict = {"notes": [], "source": source}  # for block rules that read includes
        try:
            tokens = self.parser.parse(text, env)
        except Exception as exc:  # markdown-it is lenient; anything raised here is a real defect in the page
            raise DocumentError(f"Markdown parse failed: {exc}") from exc
        meta = _parse_frontmatter(tokens, source.rel_path)
        url = self.page_url(source.base_url, source.rel_path, meta)
        unpublished = self.not_published(source.rel_path, meta)
        if unpublished:  # no page of its own on the site: nothing to cite
            note = f"not a page: {unpublished}"  # the ingest report puts the path in front
            return ParsedPage(source.rel_path, page_path(source.rel_path), url, "", "", meta, [], (note,))
        sections, hidden = _sections(tokens, self.split_heading_id, self.new_slugger(_explicit_ids(tokens)), self.html_hides)
        description = str(meta.get("description") or "")
        intro = [Block(t) for t in ([description] if description else []) + self.frontmatter_text(meta)]
        sections[0].blocks[:0] = intro
        return ParsedPage(
            doc_path=source.rel_path,
            page=page_path(source.rel_path),
            url=url,
            title=str(
                self.nav_title(source.rel_path)
                or meta.get("title")
                or _first_h1(tokens, self.split_heading_id)
                or _title_from_name(source.rel_path)
            ),
            description=description,
            frontmatter=meta,
            sections=sections,
            notes=notes + tuple(env["notes"]),
            hidden=tuple(sorted(hidden.items())),
        )


def _first_h1(tokens: list[Token], split_heading_id: Callable[[str], tuple[str, str | None]]) -> str:
    """The page's first ``#`` heading: MkDocs and VitePress take a page's title from it."""
    for n, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and token.level == 0:
            return split_heading_id(_heading_text(tokens[n + 1]))[0].strip()
    return ""


def _title_from_name(doc_path: str) -> str:
    return PurePosixPath(doc_path).stem.replace("-", " ").capitalize()
