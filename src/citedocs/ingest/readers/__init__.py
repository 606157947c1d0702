"""One reader per docs format, behind one interface: source file in, ``ParsedPage`` out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..document import ParsedPage


@dataclass(frozen=True)
class SourceFile:
    rel_path: str  # corpus-relative, POSIX separators
    text: str
    root: Path  # the corpus root: includes and snippets may be read only from inside it
    base_url: str


class Reader(Protocol):
    name: str  # what --format names, and part of the index's pipeline version
    label: str  # how messages name the format ("Markdown/MDX", "reStructuredText")
    suffixes: tuple[str, ...]  # source files this reader reads
    version: str  # bumped when its output changes, so existing indexes rebuild

    def read(self, source: SourceFile) -> ParsedPage: ...


def available_readers() -> dict[str, Reader]:
    from .html import HTML
    from .mdx import MDX
    from .mkdocs import MKDOCS
    from .rst import RST
    from .vitepress import VITEPRESS

    return {reader.name: reader for reader in (MDX, MKDOCS, VITEPRESS, RST, HTML)}


def reader_named(name: str) -> Reader:
    readers = available_readers()
    if name not in readers:
        raise ValueError(f"unknown docs format {name!r}; use one of: {', '.join(sorted(readers))}")
    return readers[name]
