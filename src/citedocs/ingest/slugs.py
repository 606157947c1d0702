"""GitHub-style heading slugs, matching the anchors the Astro docs site publishes."""

from __future__ import annotations

import re
import unicodedata

_EXPLICIT_ID = re.compile(r"\s*\{#([\w-]+)\}\s*$")


def _keep(ch: str) -> bool:
    if ch in "-_ ":
        return True
    category = unicodedata.category(ch)
    return category[0] in "LNM"


def github_slug(text: str) -> str:
    """Lowercase, drop punctuation (keep letters, digits, ``-``, ``_``), spaces to hyphens."""
    return "".join(ch for ch in text.lower() if _keep(ch)).replace(" ", "-")


def split_explicit_id(heading: str) -> tuple[str, str | None]:
    """``Setup {#custom-id}`` -> (``Setup``, ``custom-id``)."""
    match = _EXPLICIT_ID.search(heading)
    if not match:
        return heading, None
    return heading[: match.start()], match.group(1)


class Slugger:
    """Per-page slugger: repeated headings get ``-1``, ``-2`` suffixes like github-slugger."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def slug(self, heading_text: str, explicit: str | None = None) -> str:
        base = explicit or github_slug(heading_text)
        slug = base
        while slug in self._seen:
            self._seen[base] += 1
            slug = f"{base}-{self._seen[base]}"
        self._seen.setdefault(slug, 0)
        return slug
