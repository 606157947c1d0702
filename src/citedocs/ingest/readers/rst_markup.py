"""Sphinx-only reST markup, given to plain docutils: what each directive and role keeps as text.

docutils knows reST, not Sphinx: ``code-block``, ``versionadded``, ``autoclass``, ``:func:`` and
friends are errors to it, and an error drops the text (or leaks the error message into the page).
Sphinx itself resolves them with its build environment (intersphinx, autodoc importing code); we
have one source file, so each gets a generic handler that keeps what a reader of the page would
see: a role's displayed text, a directive's body, a code block's code and language. Whatever
cannot be resolved from the corpus alone (autodoc text living in code, an include outside the
corpus) becomes a note for the ingest report, never a crash.

Lookups go through ``sphinx_markup()``, a context manager that swaps docutils' directive and role
lookup functions for the duration of one parse, as Sphinx does (``sphinx.util.docutils``); a
lock keeps concurrent parses from seeing each other's swaps.
"""

from __future__ import annotations

import ast
import re
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from docutils import nodes, utils
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.directives.misc import Include as DocutilsInclude
from docutils.statemachine import StringList


@dataclass
class ParseContext:
    """What one parse may read (the corpus root) and what it could not resolve (notes)."""

    root: Path
    notes: list[str] = field(default_factory=list)
    module: str | None = None  # the current Python module (``.. module::``/``.. currentmodule::``)
    classes: list[str] = field(default_factory=list)  # enclosing ``.. class::`` descriptions
    default_domain: str = "py"  # Sphinx's ``primary_domain``, changed by ``.. default-domain::``
    program: str | None = None  # the current ``.. program::``, part of its options' ids

    def note(self, line: int | None, text: str) -> None:
        self.notes.append(f"line {line}: {text}" if line else text)


def _context(directive: Directive) -> ParseContext:
    return directive.state.document.settings.citedocs_context


class _AnyOptions(dict):
    """An option spec that accepts every option: Sphinx directives have many we only ignore."""

    def __missing__(self, key: str):
        return directives.unchanged

    def __bool__(self) -> bool:  # docutils parses options only when the spec is truthy
        return True


# --- nodes the reader renders specially ------------------------------------------------------


class labelled(nodes.General, nodes.Element):
    """A body with a label that is context for all of it (a tab's name, an API signature).

    ``kind`` is ``"aside"`` for notes kept as one block, ``"group"`` for containers whose children
    stay separate blocks after the label.
    """


# --- directives --------------------------------------------------------------------------------


def _body(directive: Directive) -> list[nodes.Node]:
    holder = nodes.Element()
    if directive.content:
        directive.state.nested_parse(directive.content, directive.content_offset, holder)
    return list(holder.children)


def _body_with_titles(directive: Directive) -> list[nodes.Node]:
    """The body parsed as Sphinx parses object descriptions: section titles allowed, their
    underline styles counted afresh (``sphinx.util.parsing.nested_parse_to_nodes``)."""
    holder = nodes.Element()
    memo = directive.state.memo
    styles, level = memo.title_styles, memo.section_level
    memo.title_styles, memo.section_level = [], 0
    try:
        if directive.content:
            directive.state.nested_parse(directive.content, directive.content_offset, holder, match_titles=True)
    finally:
        memo.title_styles, memo.section_level = styles, level
    return list(holder.children)


def _inline_paragraph(directive: Directive, text: str) -> nodes.paragraph:
    """Text written on the directive's own line (``.. seealso:: text``), parsed as inline markup."""
    text_nodes, messages = directive.state.inline_text(text, directive.lineno)
    return nodes.paragraph("", "", *text_nodes, *messages)


class CodeBlock(Directive):
    """``code-block``/``sourcecode``/``code``: a literal block that keeps its language."""

    optional_arguments = 1
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        language = self.arguments[0] if self.arguments else ""
        return [nodes.literal_block(code, code, language=language)]


class TestBlock(Directive):
    """sphinx.ext.doctest's ``doctest``/``testcode``/``testoutput``: the page shows the code (the
    argument names a test group, not a language); ``:hide:`` ones are not shown."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()
    languages = {"doctest": "pycon", "testcode": "python", "testoutput": ""}

    def run(self) -> list[nodes.Node]:
        if "hide" in self.options:
            return []
        code = "\n".join(self.content)
        return [nodes.literal_block(code, code, language=self.languages[_local_name(self.name)])]


class PythonExample(Directive):
    """pallets-sphinx-themes' ``click:example`` (the code) and ``click:run`` (the invocation whose
    output the build renders): Python code either way, no arguments (the code may start on the
    directive's next line)."""

    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        return [nodes.literal_block(code, code, language="python")]


class LiteralInclude(Directive):
    """A code file shown in the page: read when it lies inside the corpus, else noted."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        path = resolve_inside_root(self, self.arguments[0], "literalinclude")
        if path is None:
            return []
        text = path.read_text(encoding="utf-8", errors="replace")
        start, end = self.options.get("start-after"), self.options.get("end-before")
        if start and start in text:
            text = text.split(start, 1)[1]
        if end and end in text:
            text = text.split(end, 1)[0]
        text = text.strip("\n")
        return [nodes.literal_block(text, text, language=self.options.get("language", ""))]


class Include(DocutilsInclude):
    """docutils' include, but only of files inside the corpus root (real paths), as Sphinx resolves them."""

    def run(self) -> list[nodes.Node]:
        if self.arguments[0].startswith("<"):  # docutils' standard substitution sets
            return super().run()
        path = resolve_inside_root(self, self.arguments[0], "include")
        if path is None:
            return []
        self.arguments[0] = str(path)
        return super().run()


def resolve_inside_root(directive: Directive, argument: str, what: str) -> Path | None:
    """The included file's real path, or None (and a note) when it is missing or outside the root.

    Sphinx reads ``/x`` from the source root and ``x`` from the including file's folder (the state
    machine's source: an included reST file, or the MyST page or file myst-parser is reading).
    """
    context = _context(directive)
    root = context.root.resolve()
    current = Path(directive.state_machine.get_source_and_line(directive.lineno)[0])
    base = root if argument.startswith("/") else current.parent
    path = (base / argument.lstrip("/")).resolve()
    if not path.is_relative_to(root):
        context.note(directive.lineno, f"{what} {argument!r} lies outside the docs folder; not read")
        return None
    if not path.is_file():
        context.note(directive.lineno, f"{what} {argument!r} not found; skipped")
        return None
    return path


_VERSION_WORDS = {
    "versionadded": "added in version",
    "versionchanged": "changed in version",
    "deprecated": "deprecated since version",
    "versionremoved": "removed in version",
}


class VersionChange(Directive):
    """``versionadded:: 2.0`` -> ``(added in version 2.0)`` before its explanation, if any."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        version, _, inline = self.arguments[0].partition("\n")
        marker = nodes.Text(f"({_VERSION_WORDS[self.name]} {version.strip()})")
        body = _body(self)
        if inline.strip():
            body.insert(0, _inline_paragraph(self, inline.strip()))
        if body and isinstance(body[0], nodes.paragraph):
            body[0].insert(0, nodes.Text(" "))
            body[0].insert(0, marker)
        else:
            body.insert(0, nodes.paragraph("", "", marker))
        return body


class Aside(Directive):
    """Sphinx admonitions docutils lacks (``seealso``): a labelled note."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()
    labels = {"seealso": "See also"}

    def run(self) -> list[nodes.Node]:
        body = _body(self)
        if self.arguments:  # ``.. seealso:: text`` on one line
            body.insert(0, _inline_paragraph(self, self.arguments[0]))
        return [labelled("", *body, label=self.labels.get(self.name, self.name.capitalize()), kind="aside")]


class Tab(Directive):
    """A sphinx-tabs tab: its label stays as context of its body."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        label = self.arguments[0]
        body = _body(self)
        if self.name == "code-tab":  # ``.. code-tab:: python``: the body is code
            code = "\n".join(self.content)
            body = [nodes.literal_block(code, code, language=label)]
        return [labelled("", *body, label=label, kind="group")]


class Content(Directive):
    """Directives whose body is ordinary page text (``tabs``, ``only``, ``glossary``, ...)."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        return _body(self)


@dataclass
class _GlossaryEntry:
    terms: list[tuple[str, int]] = field(default_factory=list)  # (term, index of its line in the body)
    definition: list[str] = field(default_factory=list)  # its lines, one indent level in
    start: int = 0  # index of the definition's first line


def _glossary_entries(content: list[str]) -> list[_GlossaryEntry]:
    """A glossary body split as Sphinx splits it (``sphinx.domains.std.Glossary``): unindented lines
    are terms (several may share a definition; `` : classifier`` is not shown), the indented lines
    after them are the definition, ``.. `` lines are comments."""
    entries: list[_GlossaryEntry] = []
    in_definition, in_comment, indent = True, False, 0
    for index, line in enumerate(content):
        if not line.strip():
            if in_definition and entries:
                entries[-1].definition.append("")
        elif not line[0].isspace():
            in_comment = line.startswith(".. ")
            if in_comment:
                continue
            if in_definition or not entries:
                entries.append(_GlossaryEntry())
                in_definition = False
            entries[-1].terms.append((line.split(" : ")[0], index))
        elif entries and not in_comment:
            if not in_definition:
                in_definition, indent = True, len(line) - len(line.lstrip())
                entries[-1].start = index
            entries[-1].definition.append(line[indent:])
    return entries


class Glossary(Directive):
    """``glossary``: Sphinx reads the body itself, not as the page's markup (in a MyST page it would
    be one paragraph): each entry is its terms, then its definition parsed as the page's markup."""

    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        return [nodes.definition_list("", *(self.item(entry) for entry in _glossary_entries(list(self.content))))]

    def item(self, entry: _GlossaryEntry) -> nodes.definition_list_item:
        terms = [nodes.term("", "", *self.state.inline_text(text, self.content_offset + index + 1)[0]) for text, index in entry.terms]
        definition = nodes.definition()
        if entry.definition:
            lines = StringList(entry.definition, source=self.content.source(entry.start))
            self.state.nested_parse(lines, self.content_offset + entry.start, definition)
        return nodes.definition_list_item("", *terms, definition)


class TitledContent(Content):
    """Page text that may hold whole sections, as Sphinx allows there."""

    def run(self) -> list[nodes.Node]:
        return _body_with_titles(self)


_HTML_BUILD_TAGS = ("html", "format_html", "dirhtml", "builder_html", "builder_dirhtml")  # what Sphinx's HTML builders add


def _build_values(root: Path) -> tuple[dict[str, object], set[str], set[str]]:
    from ..sphinx_conf import build_values  # conf.py read where a page has only/ifconfig

    return build_values(root / "conf.py")


class Only(TitledContent):
    """``only``: its content is in the HTML pages only when its tag expression holds for an HTML
    build (tags html, format_html, the builder's name, and those conf.py adds with ``tags.add``),
    evaluated by Sphinx's own parser; tags given on the command line (``-t``) are not known here."""

    def run(self) -> list[nodes.Node]:
        from sphinx.util.tags import Tags

        expression = self.arguments[0] if self.arguments else ""
        tags = Tags({*_HTML_BUILD_TAGS, *_build_values(_context(self).root)[2]})
        try:
            shown = tags.eval_condition(expression)
        except Exception as exc:  # Sphinx fails the build on an expression it cannot parse
            _context(self).note(self.lineno, f"only:: {expression}: not a tag expression Sphinx reads ({exc}); its content is not text")
            return []
        if not shown:
            _context(self).note(self.lineno, f"only:: {expression}: not in an HTML build; its content is not text")
            return []
        return super().run()


_SAFE_NODES = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.Compare, ast.Name, ast.Load, ast.Constant,
    ast.Tuple, ast.List, ast.Set, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot,
)  # fmt: skip


class IfConfig(TitledContent):
    """``ifconfig``: its content is in the pages only when its Python expression over conf.py's values
    is true. Evaluated without running anything: comparisons, ``and``/``or``/``not`` and literals over
    conf.py's literal values (and ``builder``); an expression this cannot decide (a value computed at
    build time, a function call) is not text, as Sphinx shows an error there when evaluating fails."""

    def run(self) -> list[nodes.Node]:
        expression = " ".join(self.arguments).strip()
        values, computed, _ = _build_values(_context(self).root)
        namespace = {**values, "builder": "dirhtml"}
        try:
            tree = ast.parse(expression, mode="eval")
            unknown = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in namespace]
            if unknown or not all(isinstance(n, _SAFE_NODES) for n in ast.walk(tree)):
                why = f"{unknown[0]} is {'computed at build time' if unknown[0] in computed else 'not a literal value of conf.py'}" if unknown else "not a plain comparison"
                raise ValueError(why)
            shown = eval(compile(tree, "<ifconfig>", "eval"), {"__builtins__": {}}, namespace)  # noqa: S307 (only the nodes above)
        except (SyntaxError, ValueError, TypeError) as exc:
            _context(self).note(self.lineno, f"ifconfig:: {expression}: cannot be decided here ({exc}); its content is not text")
            return []
        if not shown:
            _context(self).note(self.lineno, f"ifconfig:: {expression}: false for this site's conf.py; its content is not text")
            return []
        return super().run()


class Nothing(Directive):
    """Directives that add no text to the page (``toctree``, ``index``, ``currentmodule``, ...);
    ``contents`` is navigation, a list of the page's own headings."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        return []


class DefaultDomain(Directive):
    """``default-domain:: cpp``: unprefixed object directives after it belong to that domain."""

    required_arguments = 1
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        _context(self).default_domain = self.arguments[0].strip().lower()
        return []


class Program(Directive):
    """``program:: sphinx-build``: no text, but later ``option`` ids name the program."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        program = re.sub(r"\s+", "-", self.arguments[0].strip())
        _context(self).program = None if program == "None" else program
        return []


class Module(Directive):
    """``module``/``currentmodule``: no text, but later Python objects' ids start with the module."""

    required_arguments = 1
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        _context(self).module = None if self.arguments[0] == "None" else self.arguments[0]
        return []


_SIGNATURE_NAME = re.compile(r"^(?:(?:async|class|static|abstract|final)\s+)*([\w.]+)")
_CLASSES = {"class", "exception"}
# Python objects: Sphinx publishes each as an anchor (``<dt id="flask.Flask.run">``)
_PYTHON_OBJECTS = {
    "function", "data", "class", "method", "attribute", "exception", "decorator", "decoratormethod",
    "classmethod", "staticmethod", "property", "type",
}
# std and rst domain objects published as ``<dt id="confval-html_theme">``, ``directive-toctree``
_PREFIXED_OBJECTS = {"std": {"confval", "envvar"}, "rst": {"directive", "role"}}
_STD_OBJECTS = {"confval", "envvar", "option", "cmdoption"}
# how Sphinx reads an option's name from ``-o FILE``/``--out=FILE``/``/V`` (``sphinx.domains.std``)
_OPTION_NAME = re.compile(r"((?:/|--|-|\+)?[^\s=]+)(=?\s*.*)")
_DIRECTIVE_SIGNATURE = re.compile(r"\.\. (.+?)::(.*)$")  # ``.. name:: args``, as ``sphinx.domains.rst`` reads it
_ID_CHARS = re.compile(r"[^a-zA-Z0-9._]+")
_ID_ENDS = re.compile(r"^[-0-9._]+|-+$")


def sphinx_id(text: str) -> str:
    """Sphinx's ``_make_id`` (``sphinx.util.nodes``) for object ids: docutils' ``make_id`` but
    keeping case, dots and underscores (``confval-html_theme``, not ``confval-html-theme``)."""
    text = text.translate(nodes._non_id_translate_digraphs).translate(nodes._non_id_translate)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _ID_ENDS.sub("", _ID_CHARS.sub("-", " ".join(text.split())))


def _option_id(program: str | None, signature: str) -> str | None:
    """The id of a command-line option's first name: ``cmdoption-PROGRAM-NAME`` (``-arg-`` for an
    argument that is not a switch), as ``sphinx.domains.std.Cmdoption`` makes it."""
    match = _OPTION_NAME.match(signature.split(", ")[0].strip())
    if not match:
        return None
    name, args = match.groups()
    if name.endswith("[") and args.endswith("]"):
        name = name[:-1]
    prefix = "-".join(["cmdoption", *([program] if program else []), *([] if name.startswith(("-", "/")) else ["arg"])])
    return sphinx_id(f"{prefix}-{name}")


class ObjectDescription(Directive):
    """``.. function:: name(args)`` and kin: the signature, then the description written here.

    A Python object gets the id Sphinx gives it (current module + enclosing class + name), so it
    can be cited as its own anchor, the way the published page links to it.
    """

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def object_type(self) -> str:
        return _local_name(self.name)

    def domain(self) -> str:
        """``py:function`` is Python's; a bare ``function`` the default domain's; a bare
        ``confval`` falls through to the std domain, as Sphinx looks directives up."""
        if ":" in self.name:
            return self.name.lower().split(":", 1)[0]
        return "std" if self.object_type() in _STD_OBJECTS else _context(self).default_domain

    def object_id(self, name: str) -> str | None:
        """The id Sphinx publishes for this entry; None where it publishes none we can derive (C++,
        JavaScript and C ids encode the signature) or for ``:noindex:`` entries."""
        if not name or {"noindex", "no-index"} & set(self.options):
            return None
        kind, domain = self.object_type(), self.domain()
        if domain == "py" and kind in _PYTHON_OBJECTS:
            return self.python_id(name)
        if domain == "std" and kind in ("option", "cmdoption"):
            return _option_id(_context(self).program, self.arguments[0].splitlines()[0])
        if kind in _PREFIXED_OBJECTS.get(domain, ()):
            return sphinx_id(f"{kind}-{name}")
        return None

    def python_id(self, name: str) -> str:
        """Current module + enclosing class + name, as the Python domain's ``fullname``."""
        context = _context(self)
        enclosing = context.classes[-1] if context.classes else ""
        if enclosing and not name.startswith(enclosing + "."):
            name = f"{enclosing}.{name}"
        return f"{context.module}.{name}" if context.module else name

    def described(self, label: str, name: str, kind: str = "signature") -> list[nodes.Node]:
        anchor = self.object_id(name)
        context = _context(self)
        is_class = self.object_type() in _CLASSES and anchor is not None
        if is_class:  # members described inside a class are named after it
            context.classes.append(anchor.removeprefix(f"{context.module}.") if context.module else anchor)
        try:
            body = _body_with_titles(self)
        finally:
            if is_class:
                context.classes.pop()
        return [labelled("", *body, label=label, kind=kind, name=name, anchor=anchor)]

    def run(self) -> list[nodes.Node]:
        signatures = [line.strip() for line in self.arguments[0].splitlines() if line.strip()]
        return self.described("\n".join(signatures), _object_name(self.object_type(), signatures[0] if signatures else ""))


def _object_name(kind: str, signature: str) -> str:
    """The entry's name in its signature: ``.. toctree::`` documents ``toctree``, ``-b NAME`` the
    option ``-b``, ``Flask.run(host)`` the object ``Flask.run``."""
    if kind == "directive":
        match = _DIRECTIVE_SIGNATURE.match(signature.strip())
        return match.group(1) if match else signature.strip()
    if kind == "role":
        return signature.strip()
    if kind in ("option", "cmdoption"):
        return signature.split(", ")[0].split()[0] if signature.split() else ""
    match = _SIGNATURE_NAME.match(signature)
    return match.group(1) if match else ""


class AutoDoc(ObjectDescription):
    """``autoclass`` and kin: the API text lives in code, not in the docs folder.

    Only the object's name is indexed (with any text written in the directive itself), and the
    gap is noted so the ingest report says which API entries are missing.
    """

    def object_type(self) -> str:
        return self.name.removeprefix("auto")  # autoclass -> class

    def domain(self) -> str:
        return "py"

    def python_id(self, name: str) -> str:
        """autodoc reads a module from the name itself when it has one: ``autoclass:: flask.Response``,
        or a member's ``automethod:: pkg.mod.Class.run`` (everything before ``Class.run``)."""
        module_level = self.object_type() in ("class", "function", "data", "exception", "decorator")
        if (module_level and "." in name) or (name.count(".") >= 2 and not _context(self).classes):
            return name
        return super().python_id(name)

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0].split("(")[0].strip()
        _context(self).note(self.lineno, f"{self.name} {name}: its text lives in code outside the docs folder; only the name is indexed")
        return self.described(name, name)


class AutoDocNoAnchor(AutoDoc):
    """``automodule`` and kin: noted like ``autoclass``, but Sphinx gives them no object anchor."""

    def object_id(self, name: str) -> str | None:
        return None


_NAMED = {
    "code-block": CodeBlock,
    "sourcecode": CodeBlock,
    "code": CodeBlock,
    "literalinclude": LiteralInclude,
    "include": Include,
    **dict.fromkeys(TestBlock.languages, TestBlock),
    **dict.fromkeys(("click:example", "click:run"), PythonExample),
    "seealso": Aside,
    "tab": Tab,
    "group-tab": Tab,
    "code-tab": Tab,
    **dict.fromkeys(_VERSION_WORDS, VersionChange),
    "only": Only,
    "ifconfig": IfConfig,
    "glossary": Glossary,
    **dict.fromkeys(("tabs", "centered", "hlist", "productionlist", "rst-class"), Content),
    **dict.fromkeys(("currentmodule", "module"), Module),
    "default-domain": DefaultDomain,
    "program": Program,
    **dict.fromkeys(
        (
            "toctree", "index", "highlight", "tabularcolumns", "sectionauthor",
            "moduleauthor", "codeauthor", "default-role", "raw", "testsetup",
            "testcleanup", "meta", "contents",
        ),
        Nothing,
    ),
    **dict.fromkeys(
        (
            "function", "data", "class", "method", "attribute", "exception", "decorator", "decoratormethod",
            "classmethod", "staticmethod", "property", "type", "object", "describe", "option", "cmdoption",
            "envvar", "confval", "role", "directive",
        ),
        ObjectDescription,
    ),
    **dict.fromkeys(
        (
            "autoclass", "autofunction", "autodata", "automethod", "autoattribute", "autoexception",
            "autodecorator", "autoproperty",
        ),
        AutoDoc,
    ),
    **dict.fromkeys(("automodule", "autosummary", "click"), AutoDocNoAnchor),
}


class Unknown(Content):
    """A directive nobody registered: its body is kept as text and the name noted."""

    def run(self) -> list[nodes.Node]:
        _context(self).note(self.lineno, f"unknown directive {self.name!r}: its body is read as plain text")
        return super().run()


# --- roles ----------------------------------------------------------------------------------------

# ``Title <target>``; docutils marks a backslash-escaped ``\<`` with a NUL, which is not a target
_EXPLICIT_TITLE = re.compile(r"^(.+?)\s*(?<!\x00)<(.*?)>$", re.DOTALL)
# roles whose text Sphinx shows as prose; every other cross-reference is code (an API name, a file)
_PROSE_ROLES = {
    "ref", "doc", "term", "abbr", "dfn", "guilabel", "menuselection", "mimetype", "command", "numref",
    "keyword", "download", "any", "gh", "issue", "pr", "ghsa", "pep", "rfc", "title-reference",
}

_PYTHON_ROLES = {"func", "meth", "class", "attr", "data", "exc", "mod", "obj", "const", "type"}


_EMPHASIZED_PART = re.compile(r"\\([\\{}])|\{([^{}\\]+)\}")


def _emphasized_literal(text: str) -> str:
    r"""``file``/``samp`` as Sphinx's ``EmphasizedLiteral`` shows them: ``{name}`` is the emphasised
    ``name`` and ``\\``, ``\{``, ``\}`` are escapes (MyST hands a role its text as written, so
    ``C:\\pip.ini`` is ``C:\pip.ini`` on the page)."""
    return _EMPHASIZED_PART.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def role_text(name: str, text: str) -> str:
    """What Sphinx shows for a role: the explicit title, else the target as written.

    ``Title <label>`` -> ``Title``; ``~flask.Flask.run`` and ``.Request`` lose the markers (``~``,
    ``!``, a Python name's leading ``.``) but keep the full dotted name, which is what a reader searches for.
    """
    match = _EXPLICIT_TITLE.match(text)
    text = utils.unescape(match.group(1) if match else text)
    if match:
        return text
    if name in ("file", "samp"):
        return _emphasized_literal(text)
    if name == "pep":
        return f"PEP {text}"
    if name == "rfc":
        return f"RFC {text}"
    if name == "abbr":
        return text.split(" (")[0]
    if name == "doc":
        return text.lstrip("/")
    text = text.lstrip("!~")
    return text.lstrip(".") if name in _PYTHON_ROLES else text


def generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    shown = role_text(name.split(":")[-1], text)
    if name.split(":")[-1] in _PROSE_ROLES:
        return [nodes.inline(rawtext, shown)], []
    return [nodes.literal(rawtext, shown)], []


# --- lookups ----------------------------------------------------------------------------------

_LOCK = threading.Lock()


def _local_name(name: str) -> str:
    """``py:function`` -> ``function``: the domain does not change what the page shows."""
    return name.lower().rsplit(":", 1)[-1]


@contextmanager
def sphinx_markup(markup: dict[str, type[Directive]] | None = None) -> Iterator[None]:
    """Let docutils parse Sphinx markup for the duration of one parse; ``markup`` adds or replaces
    directives for one dialect (MyST's own ``include``)."""
    named = {**_NAMED, **(markup or {})}
    with _LOCK:
        original_directive, original_role = directives.directive, roles.role

        def directive(name, language, document):
            found = named.get(name.lower()) or named.get(_local_name(name))  # ``click:run`` is its own
            if found:
                return found, []
            found, messages = original_directive(name, language, document)
            return (found or Unknown), messages

        def role(name, language, lineno, reporter):
            if _local_name(name) in ("code", "literal") or name.lower() in ("emphasis", "strong", "sub", "sup", "math"):
                found, messages = original_role(name, language, lineno, reporter)
                if found:
                    return found, messages
            return generic_role, []

        directives.directive, roles.role = directive, role
        try:
            yield
        finally:
            directives.directive, roles.role = original_directive, original_role
