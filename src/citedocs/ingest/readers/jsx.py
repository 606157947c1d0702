"""JSX tags as MDX writes them on their own lines: ``<Steps>``, ``</Fragment>``, ``<Since v="5.7" />``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAG_NAME = re.compile(r"</?\s*([A-Za-z][\w.:-]*)?")
_ATTR = re.compile(r"""([A-Za-z_:][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|\{([^{}]*)\})""")


@dataclass(frozen=True)
class JsxTag:
    name: str  # "" for a fragment <>...</>
    kind: str  # "open" | "close" | "self"
    attrs: dict[str, str]


def scan_tag_end(src: str, start: int) -> int | None:
    """Return the index just past the ``>`` closing the tag starting at ``start``.

    Quotes and ``{...}`` attribute expressions may contain ``>``; the tag may span lines.
    """
    depth = 0
    quote: str | None = None
    i = start + 1
    while i < len(src):
        ch = src[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and depth == 0:
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == ">" and depth == 0:
            return i + 1
        i += 1
    return None


def parse_jsx_tag(raw: str) -> JsxTag:
    match = _TAG_NAME.match(raw)
    name = (match.group(1) or "") if match else ""
    closing = raw.startswith("</")
    kind = "close" if closing else ("self" if raw.rstrip(">").rstrip().endswith("/") else "open")
    attrs = {m.group(1): next(g for g in m.groups()[1:] if g is not None) for m in _ATTR.finditer(raw)}
    return JsxTag(name=name, kind=kind, attrs=attrs)
