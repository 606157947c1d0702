"""Heading slugs as each site generator makes them: GitHub-style (Astro/Starlight, Docusaurus),
Python-Markdown (MkDocs) and VitePress; each with its own rule for repeated headings."""

from __future__ import annotations

import re
import unicodedata
from functools import partial
from typing import Callable
from urllib.parse import quote

# Symbols that Unicode counts as letters (Other_Alphabetic): circled, parenthesized and squared Latin letters
_ALPHABETIC_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


def _keep(ch: str) -> bool:
    """github-slugger keeps letters, marks, decimal and letter numbers, connector punctuation (``_``),
    ``-`` and spaces; other numbers (``²``, ``½``), punctuation, symbols and emoji are dropped."""
    if ch in "- ":
        return True
    category = unicodedata.category(ch)
    if category[0] in "LM" or category in ("Nd", "Nl", "Pc"):
        return True
    return any(low <= ord(ch) <= high for low, high in _ALPHABETIC_SYMBOLS)


def github_slug(text: str, maintain_case: bool = False) -> str:
    """github-slugger's slug: lowercase (unless ``maintain_case``), drop what ``_keep`` does not keep,
    each space to a hyphen."""
    return "".join(ch for ch in (text if maintain_case else text.lower()) if _keep(ch)).replace(" ", "-")


class Slugger:
    """Per-page slugger: repeated headings get ``-1``, ``-2`` suffixes like github-slugger."""

    def __init__(self, maintain_case: bool = False) -> None:
        self._seen: dict[str, int] = {}
        self._maintain_case = maintain_case

    def slug(self, heading_text: str, explicit: str | None = None) -> str:
        base = explicit or github_slug(heading_text, self._maintain_case)
        slug = base
        while slug in self._seen:
            self._seen[base] += 1
            slug = f"{base}-{self._seen[base]}"
        self._seen.setdefault(slug, 0)
        return slug


class DocusaurusSlugger(Slugger):
    """Docusaurus's heading ids: an explicit id is used as written and never counted (its headings
    plugin does not pass it to github-slugger, so a later heading may get the same id)."""

    def slug(self, heading_text: str, explicit: str | None = None) -> str:
        return explicit or super().slug(heading_text)


def python_markdown_slug(text: str, separator: str = "-", unicode: bool = False) -> str:
    """Python-Markdown's ``toc`` slugify (MkDocs' default): NFKD to ASCII (unless ``unicode``, its
    ``slugify_unicode``), drop all but word characters, spaces and ``-``, lowercase, runs of spaces
    and the separator to one separator."""
    value = text if unicode else unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(rf"[{re.escape(separator)}\s]+", separator, value)


def pymdownx_slug(
    text: str, separator: str = "-", case: str = "none", percent_encode: bool = False, normalize: str = "NFC"
) -> str:
    """PyMdown Extensions' ``pymdownx.slugs.slugify`` (a common ``toc.slugify`` on Material sites):
    Unicode kept, tags dropped, case as configured, every single space to the separator (runs are
    not collapsed: ``A & B`` -> ``a--b``), optionally percent-encoded."""
    value = re.sub(r"</?[^>]*>", "", unicodedata.normalize(normalize, text)).strip()
    if case == "lower":
        value = value.lower()
    elif case == "lower-ascii":
        value = re.sub(r"[A-Z]", lambda m: m.group(0).lower(), value)
    elif case == "fold":
        value = value.casefold()
    value = re.sub(r"[^\w\- ]", "", value).replace(" ", separator)
    return quote(value.encode("utf-8")) if percent_encode else value


def toc_slugify(name: str, options: dict, separator: str = "-") -> Callable[[str], str]:
    """The slug function a MkDocs config names for ``toc`` (``markdown_extensions: - toc: slugify:``).

    Raises ``ValueError`` for a function this module does not know, so the caller can say so."""
    if name in ("", "markdown.extensions.toc.slugify"):
        return partial(python_markdown_slug, separator=separator)
    if name == "markdown.extensions.toc.slugify_unicode":
        return partial(python_markdown_slug, separator=separator, unicode=True)
    if name == "pymdownx.slugs.slugify":
        known = {k: options[k] for k in ("case", "percent_encode", "normalize") if k in options}
        return partial(pymdownx_slug, separator=separator, **known)
    raise ValueError(f"unknown toc slugify {name!r}")


class PythonMarkdownSlugger:
    """Per-page ids as Python-Markdown's ``toc`` assigns them: an explicit id (attribute list) is
    kept as written, even when repeated; a slug that collides with any id on the page, explicit
    ones included, gets ``_1``, ``_2`` (and an empty slug becomes ``_1``)."""

    _COUNTED = re.compile(r"^(.*)_([0-9]+)$")

    def __init__(self, explicit_ids: list[str], slugify: Callable[[str], str] = python_markdown_slug) -> None:
        self._used = set(explicit_ids)
        self._slugify = slugify

    def slug(self, heading_text: str, explicit: str | None = None) -> str:
        if explicit:
            return explicit
        slug = self._slugify(heading_text)
        while slug in self._used or not slug:
            counted = self._COUNTED.match(slug)
            slug = f"{counted.group(1)}_{int(counted.group(2)) + 1}" if counted else f"{slug}_1"
        self._used.add(slug)
        return slug


_VITEPRESS_SPECIAL = re.compile(r"""[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:"'“”‘’<>,.?/]+""")


def vitepress_slug(text: str) -> str:
    """VitePress's slugify (``@mdit-vue/shared``): NFKD without combining marks, every run of
    whitespace and ASCII punctuation to one ``-``, trimmed, a leading digit prefixed with ``_``."""
    value = re.sub(r"[\u0300-\u036f]", "", unicodedata.normalize("NFKD", text))
    value = re.sub(r"[\u0000-\u001f]", "", value)
    value = _VITEPRESS_SPECIAL.sub("-", value)
    value = re.sub(r"-{2,}", "-", value).strip("-")
    return re.sub(r"^(\d)", r"_\1", value).lower()


class AnchorSlugger:
    """Per-page ids as markdown-it-anchor (VitePress) assigns them, in heading order: a taken id
    gets ``-1``, ``-2``, ... appended to the original slug."""

    def __init__(self, slugify) -> None:
        self._slugify = slugify
        self._used: set[str] = set()

    def slug(self, heading_text: str, explicit: str | None = None) -> str:
        base = explicit or self._slugify(heading_text)
        slug, n = base, 1
        while slug in self._used:
            slug, n = f"{base}-{n}", n + 1
        self._used.add(slug)
        return slug
