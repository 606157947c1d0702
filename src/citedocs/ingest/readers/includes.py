"""Files a page pulls in (MkDocs snippets and includes, VitePress ``<<<`` imports), read only from
inside the corpus root.

A docs page may name any path; following it blindly would let one page read ``/etc/passwd`` or a
symlink out of the corpus into the index. A target is read only when its real path (symlinks
resolved) lies inside the real corpus root; anything else is dropped and reported.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from . import SourceFile

MAX_INCLUDE_BYTES = 1_000_000  # a snippet larger than this is not documentation text

FENCE_LANGUAGES = {".py": "python", ".js": "js", ".ts": "ts", ".sh": "sh", ".yml": "yaml", ".yaml": "yaml"}


class IncludeRefused(Exception):
    """Why an include was not read (the message goes into the page's notes)."""


def read_inside_root(source: SourceFile, target: str, bases: tuple[Path, ...]) -> str:
    """The text of ``target`` looked up against ``bases`` in order; only inside ``source.root``."""
    root = source.root.resolve()
    outside = False
    for base in bases:
        candidate = (base / target).resolve()
        if not candidate.is_relative_to(root):
            outside = True
            continue
        if candidate.is_file():
            if candidate.stat().st_size > MAX_INCLUDE_BYTES:
                raise IncludeRefused(f"{target!r} is larger than {MAX_INCLUDE_BYTES} bytes")
            try:
                return candidate.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise IncludeRefused(f"{target!r} is not UTF-8 text") from exc
    raise IncludeRefused(f"{target!r} is outside the corpus folder" if outside else f"{target!r} not found in the corpus")


def page_dir(source: SourceFile) -> Path:
    return source.root / PurePosixPath(source.rel_path).parent


def fence_language(target: str) -> str:
    suffix = PurePosixPath(target).suffix.lower()
    return FENCE_LANGUAGES.get(suffix, suffix.lstrip("."))
