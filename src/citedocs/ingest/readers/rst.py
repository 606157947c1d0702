"""The Sphinx reStructuredText reader: docutils parses, the doctree becomes titled sections of blocks.

docutils does what regexes cannot do reliably: section levels from the order underline styles
first appear, ids exactly as Sphinx publishes them (``make_id`` of the title, ``id1``... for
repeats, ``.. _label:`` targets propagated onto the next section), nested lists and literal blocks
after ``::``. Sphinx-only markup gets generic handlers (``rst_markup``) so it keeps its text.

MyST Markdown pages of a site whose ``conf.py`` enables myst_parser are parsed by myst-parser into
the same kind of doctree (``readers/myst.py``) and walked by the same code; only the id a section
is cited by is read differently (``myst_section_anchor``).

Anchors follow Sphinx's ``dirhtml`` output: a section is published with its title id, and a label
just before it adds the label's id beside it; the reader cites the label when there is one, since
that is the name the docs themselves link to (``:ref:``) and it survives title edits. A Python
object description (``.. data:: SECRET_KEY``, ``autoclass``) is published as its own anchor, so
it becomes a nested section with that id; text after it continues the enclosing section.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers import Parser
from docutils.readers import standalone
from docutils.transforms.references import DanglingReferences
from docutils.utils import SystemMessage
from myst_parser.parsers.docutils_ import Parser as MystParser

from ..document import Block, DocumentError, ParsedPage, Section, directory_url, file_url, page_path
from . import MystOptions, SiteOptions, SourceFile
from .myst import MARKUP as MYST_MARKUP, myst_settings
from .rst_markup import ParseContext, labelled, sphinx_markup
from .visibility import HiddenRuns

_SKIPPED = (
    nodes.system_message,
    nodes.target,
    nodes.comment,
    nodes.substitution_definition,
    nodes.raw,
    nodes.pending,
    nodes.transition,
    nodes.footnote_reference,
    nodes.citation_reference,
    nodes.image,
    nodes.meta,
    nodes.docinfo,  # a MyST page's front matter (Sphinx keeps it as metadata, off the page)
)
_LEVELS = {2: "warning", 3: "error", 4: "severe"}
_ERROR, _SEVERE = 3, 4
# errors that break the section tree: every anchor and heading path after them would be wrong, so
# the page is refused (the last good version stays indexed) rather than cited to wrong sections
_STRUCTURE_ERRORS = (
    "Inconsistent title style",
    "Title level inconsistent",
    "Unexpected section title",
    "Missing matching underline",
    "Title overline & underline mismatch",
    "Incomplete section title",
    "Invalid section title",
)


def _settings(context: ParseContext) -> dict:
    """Sphinx's docutils settings where they change ids or text; messages kept, never printed."""
    return {
        "citedocs_context": context,
        "report_level": 2,  # warnings and worse stay in the doctree for the notes
        "halt_level": 5,  # never abort: a severe problem becomes a DocumentError below
        "warning_stream": io.StringIO(),  # nothing goes to stderr
        "doctitle_xform": False,  # Sphinx keeps the page title a section with its own id
        "sectsubtitle_xform": False,
        "docinfo_xform": False,
        "auto_id_prefix": "id",  # Sphinx's disambiguation for repeated titles: id1, id2, ...
        "id_prefix": "",
        "file_insertion_enabled": True,  # includes are checked against the corpus root first
        "raw_enabled": False,
        "syntax_highlight": "none",
        "smart_quotes": False,
        "language_code": "en",
        "input_encoding": "utf-8",  # included files; the page itself arrives decoded
        "_disable_config": True,
        "traceback": True,
    }


class _SphinxReader(standalone.Reader):
    """docutils' standalone reader less ``DanglingReferences``, as Sphinx's reader (``sphinx.io``):
    a link to another page or an unknown target keeps its text instead of becoming an error."""

    def get_transforms(self) -> list:
        return [t for t in super().get_transforms() if t is not DanglingReferences]


def _fence(code: str, language: str) -> str:
    """A fence longer than any backtick run inside, so code that shows a fence stays one block."""
    inner = max((len(run) for run in re.findall(r"^\s*(`{3,})", code, re.M)), default=0)
    ticks = "`" * max(3, inner + 1)
    return f"{ticks}{language}\n{code.rstrip()}\n{ticks}"


def _inline(node: nodes.Node) -> str:
    if isinstance(node, nodes.Text):
        return str(node).replace("\n", " ")
    if isinstance(node, _SKIPPED):
        return node.get("alt", "") if isinstance(node, nodes.image) else ""
    if isinstance(node, nodes.literal):
        return f"`{node.astext()}`"
    return "".join(_inline(child) for child in node.children)


def _indent(text: str, prefix: str, first: str | None = None) -> str:
    lines = text.split("\n")
    head = (first if first is not None else prefix) + lines[0]
    return "\n".join([head, *((prefix + line) if line else line for line in lines[1:])])


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def _aside_label(node: nodes.Element) -> str:
    if isinstance(node, labelled):
        return node["label"]
    if node.children and isinstance(node[0], nodes.title):
        return _inline(node[0]).strip()
    return node.tagname.capitalize()  # note -> Note, warning -> Warning


def _children_text(node: nodes.Element) -> str:
    parts = (_text(child) for child in node.children if not isinstance(child, nodes.title))
    return "\n\n".join(part for part in parts if part)


def _language(node: nodes.Element) -> str:
    """A code block's language: Sphinx's ``language`` attribute, else docutils' own convention,
    ``classes=["code", "python"]`` (myst-parser's fences outside Sphinx, docutils' ``code``)."""
    if node.get("language"):
        return node["language"]
    if isinstance(node, nodes.doctest_block):
        return "pycon"
    classes = node.get("classes", [])
    return classes[1] if len(classes) > 1 and classes[0] == "code" else ""


def _list_text(node: nodes.Element) -> str:
    items = []
    number = node.get("start", 1)
    for item in node.children:
        marker = "-" if isinstance(node, nodes.bullet_list) else f"{number}."
        number += 1
        items.append(_indent(_children_text(item), " " * (len(marker) + 1), f"{marker} "))
    return "\n".join(items)


def _text(node: nodes.Node) -> str:
    """Readable text of one body element: Markdown-like, so every reader's chunks look alike."""
    if isinstance(node, _SKIPPED):
        return ""
    if isinstance(node, (nodes.literal_block, nodes.doctest_block)):
        return _fence(node.astext(), _language(node))
    if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
        return _list_text(node)
    if isinstance(node, nodes.definition_list_item):
        term = " : ".join(_inline(c).strip() for c in node.children if not isinstance(c, nodes.definition))
        definition = next((c for c in node.children if isinstance(c, nodes.definition)), None)
        body = _children_text(definition) if definition is not None else ""
        return f"{term}\n{_indent(body, '  ')}" if body else term
    if isinstance(node, nodes.field):
        return f"{_inline(node[0]).strip()}: {_children_text(node[1])}"
    if isinstance(node, nodes.option_list_item):
        return f"{_inline(node[0]).strip()}\n{_indent(_children_text(node[1]), '  ')}"
    if isinstance(node, nodes.table):
        return "\n".join(" | ".join(_children_text(entry).replace("\n", " ") for entry in row.children) for row in node.findall(nodes.row))
    if isinstance(node, nodes.line_block):
        return "\n".join(_text(line) for line in node.children)
    if isinstance(node, (nodes.Admonition, nodes.topic, nodes.sidebar)) or (
        isinstance(node, labelled) and node["kind"] == "aside"
    ):
        return f"{_aside_label(node)}:\n{_quote(_children_text(node))}"
    if isinstance(node, labelled):
        body = _children_text(node)
        return f"{_label_line(node)}\n\n{body}" if body else _label_line(node)
    if isinstance(node, nodes.TextElement):
        return _inline(node).strip()
    if isinstance(node, (nodes.definition_list, nodes.field_list, nodes.option_list)):
        return "\n".join(filter(None, (_text(child) for child in node.children)))
    return _children_text(node)


def _label_line(node: labelled) -> str:
    if node["kind"] == "signature":
        return "\n".join(f"`{line}`" for line in node["label"].split("\n"))
    return f"{node['label']}:"


def _with_label(label: str, blocks: list[Block]) -> list[Block]:
    """A tab's name or an object's signature goes with the first block it labels."""
    return [Block(f"{label}\n\n{blocks[0].text}"), *blocks[1:]] if blocks else [Block(label)]


def _blocks(children: list[nodes.Node]) -> list[Block]:
    """Body elements as chunker blocks: each paragraph, list, code block and note is one block.

    Containers without meaning of their own (block quotes, tab sets, API descriptions) are opened
    so a long one can still be split between its paragraphs; their label goes with the first block.
    """
    blocks: list[Block] = []
    for child in children:
        if isinstance(child, (nodes.section, nodes.title)):
            continue
        if isinstance(child, labelled) and child["kind"] != "aside":
            blocks.extend(_with_label(_label_line(child), _blocks(list(child.children))))
        elif isinstance(child, (nodes.block_quote, nodes.container, nodes.compound)):
            blocks.extend(_blocks(list(child.children)))
        else:
            text = _text(child)
            if text:
                blocks.append(Block(text))
    return blocks


def section_anchor(section: nodes.section) -> str:
    """The id the reader cites: a preceding ``.. _label:`` target's, else the title's."""
    ids = section["ids"]
    return ids[1] if len(ids) > 1 else ids[0]


def myst_section_anchor(section: nodes.section) -> str:
    """A MyST section's first id: myst-parser already puts a ``(label)=`` target's id first and
    heading slugs last, as Sphinx publishes them."""
    return section["ids"][0]


def _starts_section(node: nodes.Node) -> bool:
    """A titled section, or an object Sphinx publishes with its own anchor or whose description
    holds titled sections (Sphinx allows them there; each is published with its own id)."""
    if isinstance(node, nodes.section):
        return True
    return isinstance(node, labelled) and (bool(node.get("anchor")) or any(isinstance(c, nodes.section) for c in node.children))


def _sections(document: nodes.document, anchor_of: Callable[[nodes.section], str]) -> tuple[str, list[Section]]:
    first = next((c for c in document.children if isinstance(c, nodes.section)), None)
    title = first[0].astext().strip() if first is not None else ""
    sections: list[Section] = []

    def walk(parent: nodes.Element, heading_path: tuple[str, ...], anchor_path: tuple[str, ...], label: str = "") -> None:
        """The parent's own text, then each subsection or object in order.

        Text that follows a subsection or object at the parent's level continues the parent's
        section (same anchor), so nothing moves out of the place the site shows it.
        """
        anchor = anchor_path[-1] if anchor_path else ""
        run: list[nodes.Node] = []
        opened = False

        def flush() -> None:
            nonlocal opened, label
            blocks = _blocks(run)
            if label:  # an object's signature, once, before its description
                blocks, label = _with_label(label, blocks), ""
            if blocks or not opened:
                sections.append(Section(heading_path=heading_path, anchor=anchor, anchor_path=anchor_path, blocks=blocks))
            opened = True
            run.clear()

        for child in parent.children:
            if not _starts_section(child):
                run.append(child)
                continue
            flush()
            if isinstance(child, nodes.section):
                heading = child[0].astext().strip()
                # the page title is the page's, not a heading inside it (as frontmatter titles are for MDX)
                headings = heading_path if child is first else (*heading_path, heading)
                walk(child, headings, (*anchor_path, anchor_of(child)))
            elif child.get("anchor"):
                walk(child, (*heading_path, child["name"]), (*anchor_path, child["anchor"]), _label_line(child))
            else:  # no anchor of its own: its text stays cited to the enclosing section
                walk(child, heading_path, anchor_path, _label_line(child))
        if run or not opened:
            flush()

    walk(document, (), ())
    return title, sections


def _messages(document: nodes.document) -> list[tuple[int, int | None, str]]:
    found = []
    for message in document.findall(nodes.system_message):
        text = " ".join(p.astext() for p in message.children if isinstance(p, nodes.paragraph))
        found.append((message["level"], message.get("line"), text))
    return found


def parse_rst(source: SourceFile) -> tuple[nodes.document, list[str]]:
    """The docutils doctree of one reST page, and its notes. Raises DocumentError for a broken page."""
    return parse_doctree(source, "reStructuredText")


def parse_doctree(
    source: SourceFile, dialect: str, parser: Parser | None = None, settings: dict | None = None, markup: dict | None = None
) -> tuple[nodes.document, list[str]]:
    """One page's doctree from ``parser`` (docutils' reST parser by default), Sphinx's settings and
    the generic Sphinx markup (plus ``markup``, a dialect's own directives), and its notes: every
    dialect that yields a doctree gets the same checks, sections and anchors."""
    context = ParseContext(root=source.root)
    path = source.root / source.rel_path
    try:
        with sphinx_markup(markup):
            document = publish_doctree(
                source.text,
                source_path=str(path),
                reader=_SphinxReader(),
                parser=parser,
                settings_overrides={**_settings(context), **(settings or {})},
            )
    except SystemMessage as exc:  # only reached if a handler raises one itself
        raise DocumentError(f"{dialect} error: {exc}") from exc
    except Exception as exc:  # docutils raising is a defect in the page or markup it cannot read
        raise DocumentError(f"{dialect} parse failed ({type(exc).__name__}: {exc})") from exc
    messages = _messages(document)
    severe = [
        (line, text)
        for level, line, text in messages
        if level >= _SEVERE or (level == _ERROR and text.startswith(_STRUCTURE_ERRORS))
    ]
    if severe:
        line, text = severe[0]
        where = f" at line {line}" if line else ""
        raise DocumentError(f"broken {dialect}{where}: {text} Fix the markup and ingest again.")
    notes = context.notes + [
        f"line {line}: docutils {_LEVELS.get(level, level)}: {text}" if line else f"docutils {_LEVELS.get(level, level)}: {text}"
        for level, line, text in messages
        if level >= 2
    ]
    return document, notes


@dataclass(frozen=True)
class RstReader:
    """Sphinx pages: reST, and MyST Markdown where ``conf.py`` enables it (``SiteOptions.myst``).
    URLs follow the ``dirhtml`` builder (``page/``, ``index`` -> folder) unless the site is built
    with ``html`` (``page.html``): see ``SiteOptions.directory_urls``."""

    name: str = "rst"
    label: str = "reStructuredText"
    suffixes: tuple[str, ...] = (".rst",)
    version: str = "3"
    directory_urls: bool = True
    myst: MystOptions | None = None

    def for_site(self, site: SiteOptions) -> RstReader:
        myst = site.myst
        return replace(
            self,
            label=f"{RstReader.label} or MyST Markdown" if myst else RstReader.label,
            suffixes=(*RstReader.suffixes, *(myst.suffixes if myst else ())),
            version=f"{self.version}.{site.fingerprint()}",
            directory_urls=site.directory_urls,
            myst=myst,
        )

    def parse(self, source: SourceFile) -> tuple[nodes.document, list[str], Callable[[nodes.section], str]]:
        """The page's doctree and notes, and how its sections' anchors are read from their ids."""
        if self.myst and PurePosixPath(source.rel_path).suffix.lower() in self.myst.suffixes:
            document, notes = parse_doctree(source, "MyST Markdown", MystParser(), myst_settings(self.myst), MYST_MARKUP)
            return document, notes, myst_section_anchor
        return *parse_rst(source), section_anchor

    def read(self, source: SourceFile) -> ParsedPage:
        document, notes, anchor = self.parse(source)
        hidden = _drop_hidden_html(document)
        title, sections = _sections(document, anchor)
        return ParsedPage(
            doc_path=source.rel_path,
            page=page_path(source.rel_path),
            url=(directory_url if self.directory_urls else file_url)(source.base_url, source.rel_path),
            title=title or PurePosixPath(source.rel_path).stem.replace("-", " ").capitalize(),
            description="",
            frontmatter={},
            sections=sections,
            notes=tuple(notes),
            hidden=tuple(sorted(hidden.items())),
        )


def _drop_hidden_html(document: nodes.document) -> Counter:
    """Remove what raw HTML hides (MyST pages carry their HTML as raw nodes: ``<div hidden>``, a
    ``<span style="display:none">`` in a paragraph): every node between a hiding tag and its end.
    Raw nodes themselves are never text; this drops the Markdown or text they enclose."""
    runs = HiddenRuns()
    doomed: list[nodes.Node] = []
    for node in document.findall(include_self=False):
        if doomed and any(a is doomed[-1] for a in (node, *_ancestors(node))):
            continue  # inside a node already dropped (its raw tags were followed when it was)
        if isinstance(node, nodes.raw):
            if "html" in node.get("format", "").split():
                runs.feed(node.astext())
        elif runs.active and isinstance(node, (nodes.Text, nodes.Element)):
            runs.swallow(node.astext())
            for raw in node.findall(nodes.raw) if isinstance(node, nodes.Element) else ():
                runs.feed(raw.astext())
            doomed.append(node)
    for node in doomed:  # by identity: equal Text nodes are different nodes
        siblings = node.parent.children
        del siblings[next(i for i, child in enumerate(siblings) if child is node)]
    return runs.finish()


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    found = []
    while node.parent is not None:
        node = node.parent
        found.append(node)
    return found


RST = RstReader()
