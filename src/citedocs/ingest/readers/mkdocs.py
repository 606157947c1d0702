"""The MkDocs reader: Python-Markdown with the PyMdown extensions most MkDocs sites use.

Where the dialect departs from CommonMark, and what this reader does about it:
* admonitions (``!!! note "Title"``, collapsible ``???``/``???+``) and content tabs (``=== "Tab"``)
  hold an indented body that is Markdown, not an indented code block: block rules parse the body
  one indent level in, as a container titled by the admonition title or the tab label;
* PyMdown blocks (``/// type | Title`` ... ``///``) are containers whose body is not indented;
* an attribute list after a heading (``{ #id }``, ``{: #id .class }``, ``{ id="x" }``,
  ``{ data-toc-label="..." }``) sets the anchor and is removed from the heading text; inline
  attribute lists (``[Button](#){ .md-button }``) and emoji/icon shortcodes (``:material-check:``,
  which the site renders as images) are removed from all text;
* definition lists (``def_list``: a term, then ``:   definition`` whose following lines are
  indented) hold Markdown in the definition, which CommonMark would read as one paragraph followed
  by indented code (and drop the content tabs, code samples and paragraphs the definition holds):
  the definition is parsed one indent level in, its text kept after the term;
* ``<!-- ... -->`` comments are dropped, and so is InlineHilite's language prefix in inline code
  (`` `#!python x` ``); a fenced block with code annotations (``# (1)!``) is kept in one chunk
  with the numbered list that explains it;
* snippet lines (``--8<-- "file"``) and FastAPI-style include lines (``{* path *}``) are replaced by
  the file when it lies inside the corpus, otherwise dropped and noted;
* a mkdocstrings line (``::: package.module``, with its indented options) is dropped and noted: the
  API text it renders comes from code, not from the docs folder.
Anchors follow Python-Markdown's ``toc`` (see ``slugs.PythonMarkdownSlugger``) with the slug function
the site's config names; page URLs are MkDocs' directory URLs (``site_url`` + path without ``.md`` +
``/``) unless the config turns them off (``for_site``, fed by ``ingest.detect``)."""

from __future__ import annotations

import re
import shlex
from functools import partial

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from ..document import directory_url, file_url
from ..slugs import PythonMarkdownSlugger, toc_slugify
from . import SiteOptions, SourceFile
from .includes import IncludeRefused, fence_language, page_dir, read_inside_root
from .markdown import MarkdownReader
from .visibility import fragment_hides

_ADMONITION = re.compile(r'^(!!!|\?\?\?\+?)[ ]*([\w-]+(?:[ ]+[\w-]+)*)?(?:[ ]+"(.*?)")?[ ]*$')
_TAB = re.compile(r'^===[!+]{0,2}[ ]+"(.*?)"[ ]*$')
_DEFINITION = re.compile(r"^:[ \t]+\S")
_BLOCK_START = re.compile(r"^(/{3,})[ ]*([\w-]+)[ ]*(?:\|[ ]*(.*?))?[ ]*$")
_HEADING_ATTRS = re.compile(r"[ ]+\{:?[ ]*([^}\n ][^}\n]*?)[ ]*\}[ ]*$")
_INLINE_ATTRS = re.compile(r"\{:?[ ]*(?:[#.][\w-][^}\n]*|[\w-]+=[^}\n]*|[\w-]+(?:[ ]+[\w-]+)*[ ]*)\}")
_SHORTCODE = re.compile(r"(?<![\w:/]):[a-z0-9][a-z0-9_+-]*:(?![\w:])[ ]?")
_ANNOTATION = re.compile(r"\(\d+\)!?")
_INLINE_HILITE = re.compile(r"^#!\w[\w+#.-]* ")  # InlineHilite's language prefix: `#!python print()`
_SNIPPET = re.compile(r"""^([ \t]*)(;?)-+8<-+[ \t]+(["'])(.+?)\3[ \t]*$""")
_SNIPPET_BLOCK = re.compile(r"^([ \t]*)(;?)-+8<-+[ \t]*$")
_INCLUDE = re.compile(r"^([ \t]*)\{\*[ \t]+(\S+)(.*?)\*\}[ \t]*$")
_AUTODOC = re.compile(r"^:::[ \t]+([\w.:-]+)[ \t]*$")  # mkdocstrings: ::: package.module.Object
_MAX_DEPTH = 4  # snippets may include snippets; a cycle stops here


def _line_text(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _indented_end(state: StateBlock, start_line: int, end_line: int, indent: int) -> int:
    """The line after the last one of an indented body (blank lines inside it included)."""
    line, last = start_line + 1, start_line + 1
    while line < end_line:
        if not state.isEmpty(line):
            if state.sCount[line] < indent:
                break
            last = line + 1
        line += 1
    return last


def _tokenize_nested(state: StateBlock, start: int, end: int, indent: int) -> None:
    """Parse lines ``start``..``end`` as Markdown blocks ``indent`` columns in (a container's body)."""
    old = (state.lineMax, state.blkIndent, state.parentType)
    state.lineMax, state.blkIndent, state.parentType = end, indent, "container"
    state.md.block.tokenize(state, start, end)
    state.lineMax, state.blkIndent, state.parentType = old


def _container(state: StateBlock, kind: str, title: str, body: tuple[int, int], indent: int, end: int) -> None:
    """Push ``container_<kind>`` tokens around the Markdown parsed from lines ``body``."""
    opening = state.push(f"container_{kind}_open", "div", 1)
    opening.meta = {"title": _clean_text(title).strip()}
    opening.map = [body[0] - 1, end]
    _tokenize_nested(state, body[0], body[1], indent)
    state.push(f"container_{kind}_close", "div", -1)
    state.line = end


def _indented_rule(pattern: re.Pattern[str], kind: str, title_of):
    def rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        if state.sCount[start_line] - state.blkIndent >= 4:
            return False
        match = pattern.match(_line_text(state, start_line))
        if not match:
            return False
        if silent:
            return True
        indent = state.sCount[start_line] + 4
        end = _indented_end(state, start_line, end_line, indent)
        _container(state, kind, title_of(match), (start_line + 1, end), indent, end)
        return True

    return rule


def _admonition_title(match: re.Match[str]) -> str:
    kind = (match.group(2) or "note").split()[0]
    title = match.group(3)
    return title if title is not None and title.strip() else kind.replace("-", " ").capitalize()


def _pymdown_block_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """``/// type | Title`` ... ``///``: a body that is not indented; options may follow indented."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    match = _BLOCK_START.match(_line_text(state, start_line))
    if not match:
        return False
    fence, kind = match.group(1), match.group(2)
    closing = re.compile(rf"^{fence}[ ]*$")
    depth, line = 0, start_line + 1
    while line < end_line:
        text = _line_text(state, line)
        if closing.match(text):
            if depth == 0:
                break
            depth -= 1
        elif text.startswith(fence) and _BLOCK_START.match(text) and len(_BLOCK_START.match(text).group(1)) == len(fence):
            depth += 1
        line += 1
    if silent:
        return True
    body_start = start_line + 1
    while body_start < line and not state.isEmpty(body_start) and state.sCount[body_start] >= state.blkIndent + 4:
        body_start += 1  # the block's YAML options (``    open: True``)
    title = (match.group(3) or "").strip() or kind.replace("-", " ").capitalize()
    _container(state, "block", title, (body_start, line), state.blkIndent, min(line + 1, end_line))
    return True


def _definition_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """``:   definition`` (Python-Markdown ``def_list``): the text after the marker and the lines
    indented under it are Markdown, parsed as blocks one indent level in. The term (the paragraph
    just above, blank lines between allowed) stays a block of its own, kept in the chunk of the
    definition's first block."""
    if state.sCount[start_line] - state.blkIndent >= 4 or not _DEFINITION.match(_line_text(state, start_line)):
        return False
    if silent:
        return True
    term = _term_before(state, start_line)
    if term is not None:
        term.meta = {**(term.meta or {}), "keep_with_next": True}
    first_token = len(state.tokens)
    marker_end = state.bMarks[start_line] + state.tShift[start_line] + 1
    content = marker_end
    while content < state.eMarks[start_line] and state.src[content] in " \t":
        content += 1
    indent = state.blkIndent + 4
    end = _indented_end(state, start_line, end_line, indent)
    old = (state.tShift[start_line], state.sCount[start_line])
    # the marker's line is parsed from its text on, as if indented like the lines under it
    state.tShift[start_line], state.sCount[start_line] = content - state.bMarks[start_line], indent
    _tokenize_nested(state, start_line, end, indent)
    state.tShift[start_line], state.sCount[start_line] = old
    for token in state.tokens[first_token:]:
        if token.type == "paragraph_open":  # a paragraph of this definition is no later one's term
            token.meta = {**(token.meta or {}), "definition": True}
    state.line = end
    return True


def _term_before(state: StateBlock, start_line: int) -> Token | None:
    """The ``paragraph_open`` of the term: a paragraph ending just above the marker (only blank
    lines between) that is not itself part of a definition (``: a`` then ``: b`` share one term)."""
    tokens = state.tokens
    if len(tokens) < 3 or tokens[-1].type != "paragraph_close" or tokens[-3].type != "paragraph_open":
        return None
    opening = tokens[-3]
    if opening.level != state.level or (opening.meta or {}).get("definition") or not opening.map:
        return None
    if not all(state.isEmpty(line) for line in range(opening.map[1], start_line)):
        return None  # e.g. a dropped comment between: that was the term, not this paragraph
    return opening


def _comment_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """A ``<!-- ... -->`` comment on lines of its own: not page text."""
    if state.sCount[start_line] - state.blkIndent >= 4 or not _line_text(state, start_line).startswith("<!--"):
        return False
    start = state.bMarks[start_line] + state.tShift[start_line]
    close = state.src.find("-->", start + 4)
    if close < 0:
        return False
    line = start_line
    while line < end_line and state.eMarks[line] < close:
        line += 1
    if line >= end_line or state.src[close + 3 : state.eMarks[line]].strip():
        return False
    if not silent:
        state.line = line + 1
    return True


def _autodoc_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """A mkdocstrings ``::: package.module`` line and its indented options: the API reference it
    renders is generated from code that is not in the docs folder, so it contributes nothing (noted)."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    match = _AUTODOC.match(_line_text(state, start_line))
    if not match:
        return False
    if not silent:
        state.line = _indented_end(state, start_line, end_line, state.sCount[start_line] + 1)
        state.env["notes"].append(f"mkdocstrings `::: {match.group(1)}` renders API text from code outside the docs; not indexed")
    return True


def _clean_text(text: str) -> str:
    return _SHORTCODE.sub("", _INLINE_ATTRS.sub("", text))


def _parse_attrs(raw: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    try:
        parts = shlex.split(raw)
    except ValueError:
        parts = raw.split()
    for part in parts:
        if part.startswith("#"):
            attrs["id"] = part[1:]
        elif "=" in part:
            key, value = part.split("=", 1)
            attrs[key] = value
        elif part and not part.startswith("."):
            attrs[part] = part  # a bare word is an attribute set to itself (``{: hidden }``), as attr_list reads it
    return attrs


def _heading_attrs(inline: Token) -> str | None:
    """Remove a trailing attribute list from the heading's last text; return the id it sets."""
    texts = [c for c in inline.children or [] if c.type == "text"]
    if not texts or not inline.children or inline.children[-1] is not texts[-1]:
        return None
    last = texts[-1]
    match = _HEADING_ATTRS.search(last.content)
    if not match:
        return None
    last.content = last.content[: match.start()]
    return _parse_attrs(match.group(1)).get("id")


_BLOCK_ATTRS = re.compile(r"\{:?[ ]*([^}\n]+?)[ ]*\}[ ]*")
_LEADING_ATTRS = re.compile(r"\{:?[ ]*([^}\n]+?)[ ]*\}")


def _drop_hidden_by_attrs(inline: Token, notes: list[str]) -> None:
    """attr_list: a block whose attribute list (its last line) or an inline element whose list (right
    after it) sets a hiding style or ``hidden`` is not shown by the site, so its text is not text."""
    children = inline.children or []
    last = children[-1] if children else None
    if last is not None and last.type == "text" and len(children) > 1 and children[-2].type == "softbreak":
        match = _BLOCK_ATTRS.fullmatch(last.content)
        why = match and fragment_hides("p", _parse_attrs(match.group(1)))
        if why:
            inline.children, inline.content = [], ""
            notes.append(f"a block whose attribute list sets {why} is not shown, so not text (attr_list)")
            return
    for n, child in enumerate(children):
        match = _LEADING_ATTRS.match(child.content) if child.type == "text" and n and children[n - 1].type.endswith("_close") else None
        why = match and fragment_hides("span", _parse_attrs(match.group(1)))
        if why:
            opener = children[n - 1].type.replace("_close", "_open")
            depth, start = 0, n - 1
            while start >= 0:
                depth += {children[n - 1].type: 1, opener: -1}.get(children[start].type, 0)
                if depth == 0:
                    break
                start -= 1
            for hidden in children[max(start, 0) : n]:
                hidden.content, hidden.children = "", None
            child.content = child.content[match.end() :]
            notes.append(f"an inline element whose attribute list sets {why} is not shown, so not text (attr_list)")


def _cleanup_rule(state: StateCore) -> None:
    tokens = state.tokens
    for n, token in enumerate(tokens):
        if token.type == "inline":
            _drop_hidden_by_attrs(token, state.env.setdefault("notes", []))
        if token.type == "heading_open":
            explicit = _heading_attrs(tokens[n + 1])
            if explicit:
                token.attrSet("id", explicit)
        elif token.type == "inline":
            for child in token.children or []:
                if child.type == "text":
                    child.content = _clean_text(child.content)
                elif child.type == "code_inline":
                    child.content = _INLINE_HILITE.sub("", child.content, count=1)
        elif token.type == "fence" and _ANNOTATION.search(token.content):
            following = tokens[n + 1] if n + 1 < len(tokens) else None
            if following is not None and following.type == "ordered_list_open":
                token.meta = {**(token.meta or {}), "keep_with_next": True}


def build_parser(definition_lists: bool = True) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table").disable("html_block")
    front_matter_plugin(md)
    alt = {"alt": ["paragraph", "reference", "blockquote", "list"]}
    md.block.ruler.before("fence", "mkdocs_comment", _comment_rule, alt)
    md.block.ruler.before("fence", "mkdocstrings", _autodoc_rule, alt)
    md.block.ruler.before("fence", "admonition", _indented_rule(_ADMONITION, "admonition", _admonition_title), alt)
    md.block.ruler.before("fence", "content_tab", _indented_rule(_TAB, "tab", lambda m: m.group(1)), alt)
    md.block.ruler.before("fence", "pymdown_block", _pymdown_block_rule, alt)
    if definition_lists:
        md.block.ruler.before("fence", "definition", _definition_rule, alt)
    # after text_join: a backslash (``{: #\\6.0}``) is its own token until then, hiding the attribute list
    md.core.ruler.after("text_join", "mkdocs_cleanup", _cleanup_rule)
    return md


def _expand(source: SourceFile, text: str, notes: list[str], depth: int = 0) -> str:
    """Replace snippet and include lines by the files they name (inside the corpus only)."""
    bases = (source.root, page_dir(source))
    out: list[str] = []
    lines = text.split("\n")
    n = 0
    while n < len(lines):
        line = lines[n]
        targets: list[str] = []
        block = _SNIPPET_BLOCK.match(line)
        single = _SNIPPET.match(line)
        include = _INCLUDE.match(line)
        if block and block.group(2):  # ``;--8<--`` is the escaped, literal form
            out.append(line.replace(";", "", 1))
        elif single and single.group(2):
            out.append(line.replace(";", "", 1))
        elif block:
            end = next((m for m in range(n + 1, len(lines)) if _SNIPPET_BLOCK.match(lines[m])), None)
            if end is None:
                out.append(line)
            else:
                targets = [t.strip() for t in lines[n + 1 : end] if t.strip() and not t.strip().startswith(";")]
                n = end
        elif single:
            targets = [single.group(4)]
        elif include:
            try:
                code = read_inside_root(source, include.group(2), bases)
                fence = f"{include.group(1)}```{fence_language(include.group(2))}"
                out.extend([fence, *code.rstrip("\n").split("\n"), f"{include.group(1)}```"])
            except IncludeRefused as exc:
                notes.append(f"include {exc}; dropped")
        else:
            out.append(line)
        indent = (block or single).group(1) if targets and (block or single) else ""
        for target in targets:
            out.extend(_snippet(source, target, indent, bases, notes, depth))
        n += 1
    return "\n".join(out)


def _snippet(source: SourceFile, target: str, indent: str, bases, notes: list[str], depth: int) -> list[str]:
    path, _, lines = target.partition(":")
    if re.match(r"https?:", target) or depth >= _MAX_DEPTH:
        notes.append(f"snippet {target!r} not read (URL or nested too deep); dropped")
        return []
    try:
        body = read_inside_root(source, path, bases)
    except IncludeRefused as exc:
        notes.append(f"snippet {exc}; dropped")
        return []
    selected = body.rstrip("\n").split("\n")
    numbers = [int(x) if x.isdigit() else None for x in lines.split(":")] if lines else []
    if numbers and numbers[0]:
        end = numbers[1] if len(numbers) > 1 and numbers[1] else len(selected)
        selected = selected[numbers[0] - 1 : end]
    expanded = _expand(source, "\n".join(selected), notes, depth + 1)
    return [indent + line if line else line for line in expanded.split("\n")]


def preprocess(source: SourceFile) -> tuple[str, tuple[str, ...]]:
    notes: list[str] = []
    return _expand(source, source.text, notes), tuple(notes)


_README = re.compile(r"(^|/)README(\.[^/.]+)$")


def page_url(base_url: str, doc_path: str, directory_urls: bool = True) -> str:
    """MkDocs' URL for a page: ``README.md`` serves as its folder's index, as MkDocs does; the
    layout is ``page/`` unless the config sets ``use_directory_urls: false`` (``page.html``)."""
    doc_path = _README.sub(r"\1index\2", doc_path)
    return directory_url(base_url, doc_path) if directory_urls else file_url(base_url, doc_path)


def _site_fields(site: SiteOptions) -> dict:
    """The slug function, URL layout, definition lists and nav titles a site's ``mkdocs.yml`` configures."""
    slugify = toc_slugify(site.toc_slugify, dict(site.toc_slugify_options), site.toc_separator)
    nav_titles = dict(site.nav_titles)
    return {
        "nav_title": lambda doc_path: nav_titles.get(doc_path, ""),
        "new_slugger": partial(PythonMarkdownSlugger, slugify=slugify),
        "page_url": lambda base_url, doc_path, _meta: page_url(base_url, doc_path, site.directory_urls),
        "parser": build_parser(site.definition_lists),
    }


MKDOCS = MarkdownReader(
    name="mkdocs",
    label="MkDocs Markdown",
    suffixes=(".md", ".markdown"),
    version="5",  # 5: a block or inline element an attribute list hides (style, hidden) is not text
    parser=build_parser(),
    split_heading_id=lambda heading: (heading, None),  # the attribute list is read by _cleanup_rule
    new_slugger=PythonMarkdownSlugger,
    page_url=lambda base_url, doc_path, _meta: page_url(base_url, doc_path),
    preprocess=preprocess,
    site_fields=_site_fields,
)
"""MkDocs / Python-Markdown + PyMdown (Material for MkDocs, FastAPI, ...)."""
