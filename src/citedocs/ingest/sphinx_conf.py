"""What a Sphinx ``conf.py`` says about its MyST Markdown pages, read without running it.

Running ``conf.py`` would import the project, its theme and whatever else it imports. The values
that decide which files Sphinx parses as MyST and how myst-parser reads them are, on real sites,
literal statements at module level (``extensions = [...]``, ``extensions.append("myst_parser")``,
``source_suffix = {...}``, ``myst_enable_extensions = [...]``, ``myst_heading_anchors = 3``), so
they are read with ``ast`` and ``literal_eval``, in order, including those inside ``if``/``try``
blocks (every branch, so a conditional ``extensions.append`` counts as made); a ``myst_*`` value
computed at build time (a function, a name) is reported as not applied rather than guessed.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


from .boundary import walk_docs
from .readers import MystOptions

_MYST_EXTENSIONS = {"myst_parser": "markdown", "myst_nb": "myst-nb"}  # extension -> the filetype it registers for .md
_MYST_FILETYPES = set(_MYST_EXTENSIONS.values())
_NOT_TEXT = (".ipynb",)  # myst_nb notebooks are JSON, not MyST text


@dataclass
class _Assignments:
    """Top-level literal values of ``conf.py``; the names of those that are not literals."""

    values: dict[str, object] = field(default_factory=dict)
    computed: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)  # ``tags.add("name")``: tags every build of the site has

    def assign(self, name: str, node: ast.expr) -> None:
        try:
            self.values[name] = ast.literal_eval(node)
            self.computed.discard(name)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            self.values.pop(name, None)
            self.computed.add(name)

    def extend(self, name: str, node: ast.expr) -> None:
        """``extensions += [...]``, ``.append(x)`` and ``.extend([...])`` on a list read so far."""
        current = self.values.get(name)
        try:
            added = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return
        if isinstance(current, list):
            current.extend(added if isinstance(added, (list, tuple)) else [added])


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements in order, those in ``if``/``try``/``with`` blocks included: pip's
    ``conf.py`` adds ``myst_parser`` under ``if "man" not in tags:``, which every HTML build takes."""
    for statement in body:
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            yield from _statements([*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])])
        else:
            yield statement


def _assignments(tree: ast.Module) -> _Assignments:
    found = _Assignments()
    for statement in _statements(tree.body):
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    found.assign(target.id, statement.value)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            found.assign(statement.target.id, statement.value)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) and isinstance(statement.op, ast.Add):
            found.extend(statement.target.id, statement.value)
        elif isinstance(statement, ast.Expr) and isinstance(call := statement.value, ast.Call):
            method = call.func
            if isinstance(method, ast.Attribute) and isinstance(method.value, ast.Name) and (method.value.id, method.attr) == ("tags", "add"):
                if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                    found.tags.add(call.args[0].value)
            elif isinstance(method, ast.Attribute) and isinstance(method.value, ast.Name) and method.attr in ("append", "extend"):
                if call.args and not call.keywords:
                    found.extend(method.value.id, call.args[-1] if method.attr == "extend" else ast.List([call.args[-1]]))
    return found


def _source_suffixes(source_suffix: object, registered: dict[str, str]) -> dict[str, str]:
    """Sphinx's merged ``source_suffix``: a string or list means reST (``convert_source_suffix``),
    and a suffix an extension registers replaces a reST one but never another filetype
    (``sphinx.registry.merge_source_suffix``)."""
    if isinstance(source_suffix, str):
        suffixes = {source_suffix: "restructuredtext"}
    elif isinstance(source_suffix, (list, tuple)):
        suffixes = dict.fromkeys(source_suffix, "restructuredtext")
    elif isinstance(source_suffix, dict):
        suffixes = dict(source_suffix)
    else:
        suffixes = {".rst": "restructuredtext"}
    for suffix, filetype in registered.items():
        if suffixes.get(suffix) in (None, "restructuredtext"):
            suffixes[suffix] = filetype
    return suffixes


def _settings(values: dict[str, object]) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The ``myst_*`` settings myst-parser accepts, as JSON (sets as sorted lists, so the index
    fingerprint is stable), and what to say about those it rejects."""
    from myst_parser.config.main import MdParserConfig  # here: only a Sphinx site with MyST needs it
    from myst_parser.slugs import SLUG_PRESETS

    accepted, rejected = [], []
    for name, value in sorted(values.items()):
        if not name.startswith("myst_"):
            continue
        if name == "myst_heading_slug_func" and value not in SLUG_PRESETS:  # myst-parser would import it
            rejected.append(f"{name} {value!r} not applied: citedocs does not run the project's code")
            continue
        try:
            MdParserConfig(**{name.removeprefix("myst_"): value})
            accepted.append((name, json.dumps(value, sort_keys=True, default=sorted)))
        except (TypeError, ValueError) as exc:
            rejected.append(f"{name} not applied ({exc})")
    return tuple(accepted), rejected


def _unread_markdown(docs: Path) -> list[str]:
    """Say so when ``.md`` files sit beside a conf.py that does not enable MyST: Sphinx does not
    build them, so they are not read, and the user should know why."""
    markdown, _ = walk_docs(docs, (".md",))
    return [f"{len(markdown)} .md files not read: no literal extensions entry in conf.py names myst_parser or myst_nb"] if markdown else []


def build_values(conf: Path) -> tuple[dict[str, object], set[str], set[str]]:
    """``conf.py``'s literal values, the names it computes at build time, and the tags it adds
    (what ``only`` and ``ifconfig`` are decided by); nothing when it is absent or not Python."""
    try:
        found = _assignments(ast.parse(conf.read_text(encoding="utf-8", errors="replace")))
    except (OSError, SyntaxError, ValueError):
        return {}, set(), set()
    return found.values, found.computed, found.tags


def myst_options(conf: Path) -> tuple[MystOptions | None, list[str]]:
    """The site's MyST pages, when ``extensions`` names myst_parser or myst_nb, and what to tell the
    user about them (the suffixes, and settings that could not be applied)."""
    try:
        tree = ast.parse(conf.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError as exc:
        return None, [f"{conf.name} is not valid Python (line {exc.lineno}); MyST pages not read"]
    found = _assignments(tree)
    extensions = found.values.get("extensions")
    names = [name for name in extensions if name in _MYST_EXTENSIONS] if isinstance(extensions, list) else []
    if not names:
        return None, _unread_markdown(conf.parent)
    registered = {".md": _MYST_EXTENSIONS[name] for name in names}
    suffixes = tuple(
        suffix
        for suffix, filetype in _source_suffixes(found.values.get("source_suffix"), registered).items()
        if filetype in _MYST_FILETYPES and suffix not in _NOT_TEXT
    )
    settings, notes = _settings(found.values)
    notes += [f"{name} is computed at build time; not applied" for name in sorted(found.computed) if name.startswith("myst_")]
    described = ", ".join(f"{name}={json.loads(value)}" for name, value in settings)
    notes.insert(0, f"MyST Markdown ({' '.join(suffixes)}) via {' and '.join(names)}{'; ' + described if described else ''}")
    return MystOptions(suffixes, settings), notes
