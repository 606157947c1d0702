"""What VitePress's markdown pipeline does to a heading before its slugify sees the text.

VitePress (2.0, ``src/node/markdown/markdown.ts``) runs these on every heading, so the anchor of the
built page depends on them:
* ``@mdit/plugin-attrs``: a trailing ``{#id .class key=value}`` sets the heading's attributes and is
  removed from its text; an ``id`` there is the anchor;
* ``@mdit/plugin-emoji``: ``:name:`` shortcodes (and shortcuts such as ``:)``) become emoji tokens, and
  emoji are left out of the text that is slugged (``## Emoji :tada:`` is ``#emoji``);
* ``@mdit/plugin-footnote``: a footnote reference (``[^1]``, ``^[inline]``) is not text;
* ``@mdit/plugin-anchor`` slugs the concatenated content of the heading's inline tokens except HTML
  and emoji: text, inline code and an image's alt text; VitePress's ``restoreEntities`` joins text
  runs with an entity's source (``A &amp; B`` is slugged as written, ``#a-amp-b``).
The rule here runs on markdown-it-py's tokens before ``text_join`` (as VitePress's plugins do) and
leaves the result on the ``heading_open`` token: ``attrs["id"]`` and ``meta["slug_text"]``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from importlib.resources import files

from markdown_it.rules_core import StateCore
from markdown_it.token import Token

# @mdit/plugin-emoji's shortcuts: emoji only between spaces or punctuation
_SHORTCUTS = frozenset(
    ">:( >:-( :\") :-\") </3 <\\3 :/ :-/ :'( :'-( :,( :,-( :( :-( <3 ]:( ]:-( o:) O:) o:-) O:-) 0:) 0:-) "
    ":') :'-) :,) :,-) :'D :'-D :,D :,-D :* :-* x-) X-) :| :-| :o :-o :O :-O :@ :-@ :D :-D :) :-) ]:) ]:-) "
    ":,'( :,'-( ;( ;-( :P :-P 8-) B-) ,:( ,:-( ,:) ,:-) :s :-S :z :-Z :$ :-$ ;) ;-)".split()
)
_INLINE_FOOTNOTE = r"\^\[[^\]]*\]"


@cache
def _emoji_pattern() -> re.Pattern[str]:
    """Shortcodes and shortcuts in the order the plugin tries them (sorted, reversed: ``:o:`` before ``:o``)."""
    lines = (files(__package__) / "data" / "vitepress-emoji.txt").read_text(encoding="utf-8").splitlines()
    codes = [f":{name}:" for name in lines if name and not name.startswith("#")]
    return re.compile("|".join(re.escape(code) for code in sorted(codes + list(_SHORTCUTS), reverse=True)))


def _separates(text: str, at: int) -> bool:
    """A shortcut is an emoji only next to whitespace, punctuation or a control character (or an end)."""
    return at < 0 or at >= len(text) or unicodedata.category(text[at])[0] in "ZPC"


def _not_text(text: str, footnotes: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans of ``text`` that the plugins turn into emoji or footnote tokens."""
    spans = []
    for match in _emoji_pattern().finditer(text):
        if match.group() not in _SHORTCUTS or (_separates(text, match.start() - 1) and _separates(text, match.end())):
            spans.append(match.span())
    return sorted(spans + [match.span() for match in footnotes.finditer(text)])


def _text_pieces(content: str, footnotes: re.Pattern[str]) -> list[str | None]:
    """A text token as the emoji and footnote rules split it: strings are text, ``None`` a non-text token."""
    pieces: list[str | None] = []
    last = 0
    for start, end in _not_text(content, footnotes):
        if start < last:
            continue
        if start > last:
            pieces.append(content[last:start])
        pieces.append(None)
        last = end
    if last < len(content):
        pieces.append(content[last:])
    return pieces


def _joined_source(token: Token) -> str:
    """What ``restoreEntities``'s text join keeps of an entity or escape inside a run of text: an
    entity as written, an escaped ``&`` as ``&amp;``."""
    if token.info == "entity":
        return token.markup
    return "&amp;" if token.info == "escape" and token.content == "&" else token.content


def slug_text(children: list[Token], footnotes: re.Pattern[str]) -> str:
    """The text VitePress's anchor plugin slugs: runs of text (joined as VitePress joins them), inline
    code and image alt text; HTML, emoji and footnote references left out."""
    out: list[str] = []
    run: list[tuple[str, str]] = []  # (content, joined source) of adjacent text pieces

    def close_run() -> None:
        out.append(run[0][0] if len(run) == 1 else "".join(source for _, source in run))
        run.clear()

    for child in children:
        if child.type == "text_special":
            run.append((child.content, _joined_source(child)))
            continue
        if child.type == "text":
            for piece in _text_pieces(child.content, footnotes):
                if piece is not None:
                    run.append((piece, piece))
                elif run:
                    close_run()
            continue
        if run:
            close_run()
        if child.type in ("code_inline", "image"):
            out.append(child.content)
    if run:
        close_run()
    return "".join(out)


def _quote_at(text: str, i: int) -> bool:
    """A ``"`` that an even number of backslashes precedes opens or closes a quoted value."""
    return text[i] == '"' and (len(text[:i]) - len(text[:i].rstrip("\\"))) % 2 == 0


def _first_outside_quotes(text: str, needle: str, start: int) -> int:
    """The first ``needle`` from ``start`` that no quoted value (counted from ``start``) holds."""
    found = text.find(needle, start)
    quote = text.find('"', start)
    if found == -1 or quote == -1 or quote > found:
        return found
    quoted = False
    for i in range(start, len(text)):
        if _quote_at(text, i):
            quoted = not quoted
        elif not quoted and text.startswith(needle, i):
            return i
    return -1


def _last_outside_quotes(text: str, needle: str) -> int:
    """The last ``needle`` that no quoted value holds."""
    found = text.rfind(needle)
    quote = text.find('"')
    if found == -1 or quote == -1 or quote > found:
        return found
    quoted, found = False, -1
    for i in range(len(text)):
        if _quote_at(text, i):
            quoted = not quoted
        elif not quoted and text.startswith(needle, i):
            found = i
    return found


def trailing_attrs(text: str) -> tuple[str, str | None] | None:
    """``Title {#id .class}`` -> (``Title``, ``id``): a trailing attribute list as @mdit/plugin-attrs
    reads it, or None when the text does not end with one."""
    left = _last_outside_quotes(text, "{")
    right = _first_outside_quotes(text, "}", left + 2) if left >= 0 else -1
    if right == -1 or right != len(text) - 1:
        return None
    inner = text[left + 1 : right]
    if len(inner) < (2 if inner[:1] in ".#" else 1):
        return None
    cut = left - 1 if left and text[left - 1] in " \t" else left
    ids = [value for key, value in _attributes(inner) if key == "id"]
    return text[:cut], (ids[-1] if ids else None)


def _attributes(inner: str) -> list[tuple[str, str]]:
    """``#id .class key="a b" flag`` -> [(id, ...), (class, ...), (key, a b), (flag, "")]."""
    pairs: list[tuple[str, str]] = []
    key = value = ""
    in_key, quoted = True, False
    for i, ch in enumerate(inner):
        if ch == "=" and in_key:
            in_key = False
        elif ch in ".#" and key == "":
            key, in_key = ("class" if ch == "." else "id"), False
        elif _quote_at(inner, i) and (quoted or value == ""):
            quoted = not quoted
        elif ch == " " and not quoted:
            if key:
                pairs.append((key, value))
            key, value, in_key = "", "", True
        elif in_key:
            key += ch if ch not in "\t\n\f/>\"'=" else ""
        else:
            value += ch
    if key:
        pairs.append((key, value))
    return pairs


def _last_text(children: list[Token]) -> Token | None:
    """The text token that may end with an attribute list: the last text, skipping closed inline
    elements (``**x**``) and HTML; none after inline code."""
    depth = 0
    for child in reversed(children):
        if child.type == "code_inline":
            return None
        if child.nesting == -1:
            depth += 1
        elif child.nesting == 1:
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and child.type == "text" and child.content.strip():
            return child
    return None


def _footnote_refs(src: str) -> re.Pattern[str]:
    """References to the footnotes the page defines (``[^label]:`` at a line start), and inline ones."""
    labels = re.findall(r"^ {0,3}\[\^([^\]\s]+)\]:", src, re.M)
    refs = "|".join(rf"\[\^{re.escape(label)}\]" for label in labels)
    return re.compile(f"{refs}|{_INLINE_FOOTNOTE}" if refs else _INLINE_FOOTNOTE)


def heading_ids(state: StateCore) -> None:
    """Each heading's attribute-list id and the text its slug is made from (see the module doc)."""
    footnotes = _footnote_refs(state.src)
    for n, token in enumerate(state.tokens[:-1]):
        if token.type != "heading_open":
            continue
        inline = state.tokens[n + 1]
        last = _last_text(inline.children or [])
        attrs = trailing_attrs(last.content) if last else None
        if last and attrs:
            last.content = attrs[0]
            if attrs[1]:
                token.attrSet("id", attrs[1])
        token.meta = {**(token.meta or {}), "slug_text": slug_text(inline.children or [], footnotes)}
