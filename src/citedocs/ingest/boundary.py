"""The docs root is a boundary: ingest reads only files whose real path is inside it.

Why: anyone who can add a file to a docs repository could otherwise add ``passwd.md ->
/etc/passwd`` (or a link to a folder of keys) and have the host's files indexed and quoted to
every caller. Links that lead out are never followed; each is listed in the admission report as
``outside_root: <link> -> <target>``. Links that stay inside are not walked either: their files
are reached by their real paths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OutsideRoot:
    link: str  # corpus-relative path of the link (file or folder)
    target: str  # the real path it leads to

    @property
    def reason(self) -> str:
        return f"outside_root: {self.link} -> {self.target}"


def inside(path: Path, root: Path) -> bool:
    """Whether the real path of ``path`` lies inside the real path of ``root``."""
    return path.resolve().is_relative_to(root.resolve())


def walk_docs(root: Path, suffixes: tuple[str, ...]) -> tuple[list[Path], list[OutsideRoot]]:
    """Files under ``root`` with one of ``suffixes`` whose real path is inside it, and the links leading out."""
    real_root = root.resolve()
    files: list[Path] = []
    outside: list[OutsideRoot] = []

    def leads_out(path: Path) -> bool:
        target = path.resolve()
        if target.is_relative_to(real_root):
            return False
        outside.append(OutsideRoot(path.relative_to(root).as_posix(), str(target)))
        return True

    for folder, subfolders, names in os.walk(root, followlinks=False):
        here = Path(folder)
        # hidden files and folders are not pages: MkDocs and VitePress skip them too (a
        # snippet store such as ``.snippets/``, an editor's or a tool's state)
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        names = [name for name in names if not name.startswith(".")]
        for name in subfolders:
            if (here / name).is_symlink():
                leads_out(here / name)  # never walked: outside is refused, inside is reached directly
        for name in names:
            path = here / name
            if path.suffix.lower() in suffixes and not leads_out(path) and path.is_file():
                files.append(path)
    return sorted(files), sorted(outside, key=lambda o: o.link)
