"""What a browser does not show is not text: hidden elements, decided from the markup alone.

A docs page can carry text that no reader of the rendered page ever sees: an element with the
``hidden`` attribute, ``display: none``, ``visibility: hidden``, ``opacity: 0``, a zero font size, a
zero-size box that clips its content, a box pushed thousands of pixels off-screen, a ``<template>``
or ``<noscript>`` (a browser that runs scripts never shows one). Such text would still be indexed,
quoted and cited, so an attacker who controls the markup could plant it where no docs reviewer
sees it. The readers drop it, and count what they dropped, by reason, for the ingest report.

What is decided statically: inline ``style`` attributes, the page's own ``<style>`` rules (CSS
parsed with tinycss2, selectors matched with cssselect, the cascade by importance, specificity and
order; ``@media`` blocks and state selectors such as ``:hover`` apply only sometimes and are not
used), and inheritance where CSS has it (``visibility`` and ``font-size``: a descendant that sets
them back is shown). External stylesheets are not fetched. An inactive panel of a tab widget
(``role=tabpanel`` beside a ``role=tablist``) is one click away, so it stays text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser

import cssselect
import tinycss2
from cssselect import HTMLTranslator
from lxml import etree
from tinycss2.ast import DimensionToken, FunctionBlock, IdentToken, NumberToken, PercentageToken

# elements whose content a browser never renders as page text (script/style are never text anyway)
HIDDEN_TAGS = {"template": "<template>", "noscript": "<noscript>"}
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_PROPERTIES = {
    "display", "visibility", "opacity", "font-size", "position", "left", "top", "text-indent",
    "width", "height", "max-width", "max-height", "overflow", "overflow-x", "overflow-y", "clip", "clip-path",
}  # fmt: skip
_FAR = {"px": -1000.0, "pt": -750.0, "em": -60.0, "rem": -60.0, "vw": -100.0, "vh": -100.0}  # off-screen offsets
_RELATIVE_FONT = {"em", "ex", "ch", "cap", "ic", "lh"}  # a font size relative to the parent's: zero stays zero
_TRANSLATOR = HTMLTranslator()

Value = list  # a declaration's component values, whitespace and comments removed


def declarations(css: str | list) -> dict[str, tuple[Value, bool]]:
    """The visibility-relevant declarations of a ``style`` attribute or rule body: name -> (value, !important)."""
    found: dict[str, tuple[Value, bool]] = {}
    for decl in tinycss2.parse_blocks_contents(css, skip_comments=True, skip_whitespace=True):
        if decl.type == "declaration" and decl.lower_name in _PROPERTIES:
            value = [t for t in decl.value if t.type not in ("whitespace", "comment")]
            if value and (decl.important or not found.get(decl.lower_name, ((), False))[1]):
                found[decl.lower_name] = (value, decl.important)
    return found


def _ident(value: Value | None) -> str:
    return value[0].lower_value if value and isinstance(value[0], IdentToken) else ""


def _number(token: object) -> tuple[float, str] | None:
    """A length or number as (value, unit): ``0`` -> (0, ""), ``-9999px`` -> (-9999, "px"), ``50%`` -> (50, "%")."""
    if isinstance(token, DimensionToken):
        return token.value, token.lower_unit
    if isinstance(token, PercentageToken):
        return token.value, "%"
    if isinstance(token, NumberToken):
        return token.value, ""
    return None


def _is_zero(value: Value | None) -> bool:
    number = _number(value[0]) if value and len(value) == 1 else None
    return number is not None and number[0] == 0


def _far_off(value: Value | None) -> bool:
    number = _number(value[0]) if value and len(value) == 1 else None
    return number is not None and number[1] in _FAR and number[0] <= _FAR[number[1]]


def _clips_to_nothing(props: dict[str, Value]) -> bool:
    """``clip: rect(0 0 0 0)`` (or any rect with no area) on a positioned box, ``clip-path: inset(50%)``."""
    clip = props.get("clip")
    if clip and isinstance(clip[0], FunctionBlock) and clip[0].lower_name == "rect" and _ident(props.get("position")) in ("absolute", "fixed"):
        edges = [_number(t) for t in clip[0].arguments if t.type not in ("whitespace", "comment", "literal")]
        if len(edges) == 4 and all(e and e[1] in ("px", "") for e in edges):
            top, right, bottom, left = (e[0] for e in edges)  # type: ignore[index]
            if bottom <= top or right <= left:
                return True
    path = props.get("clip-path")
    if path and isinstance(path[0], FunctionBlock) and path[0].lower_name == "inset":
        first = next((_number(t) for t in path[0].arguments if t.type not in ("whitespace", "comment")), None)
        return first is not None and first[1] == "%" and first[0] >= 50
    return False


def box_hides(props: dict[str, Value]) -> str | None:
    """Why a box with these computed values shows none of its content (no descendant can undo it)."""
    if _ident(props.get("display")) == "none":
        return "display:none"
    opacity = props.get("opacity")
    if _is_zero(opacity):
        return "opacity:0"
    if _ident(props.get("position")) in ("absolute", "fixed") and (_far_off(props.get("left")) or _far_off(props.get("top"))):
        return "off-screen"
    if _far_off(props.get("text-indent")):
        return "off-screen"
    clipped = any(_ident(props.get(p)) in ("hidden", "clip") for p in ("overflow", "overflow-x", "overflow-y"))
    if clipped and any(_is_zero(props.get(p)) for p in ("width", "height", "max-width", "max-height")):
        return "zero-size"
    if _clips_to_nothing(props):
        return "zero-size"
    return None


def _visibility(props: dict[str, Value], inherited: bool) -> bool:
    """Whether text here is invisible by ``visibility`` (inherited unless set again)."""
    value = _ident(props.get("visibility"))
    return value in ("hidden", "collapse") if value in ("hidden", "collapse", "visible") else inherited


def _zero_font(props: dict[str, Value], inherited: bool) -> bool:
    """Whether text here has a zero font size (inherited; a relative size of zero stays zero)."""
    value = props.get("font-size")
    if not value or len(value) != 1:
        return inherited if not value else False
    number = _number(value[0])
    if number is None:
        return inherited and _ident(value) in ("smaller", "larger", "inherit")
    size, unit = number
    if size == 0:
        return True
    return inherited and unit in (*_RELATIVE_FONT, "%")


def attribute_hides(tag: str, attrs: Mapping[str, str]) -> str | None:
    """Why an element hides its whole content by what it is or its own attributes, or None."""
    if tag in HIDDEN_TAGS:
        return HIDDEN_TAGS[tag]
    hidden = attrs.get("hidden")
    if hidden is not None and hidden.strip().lower() not in ("until-found", "false", "{false}"):
        return "hidden attribute"
    return None


def fragment_hides(tag: str, attrs: dict[str, str]) -> str | None:
    """An element of raw HTML in Markdown, judged by itself (no stylesheet, no descendant undoes it)."""
    why = attribute_hides(tag, attrs)
    if why:
        return why
    props = {name: value for name, (value, _) in declarations(attrs.get("style", "")).items()}
    return (
        box_hides(props)
        or ("visibility:hidden" if _visibility(props, False) else None)
        or ("font-size:0" if _zero_font(props, False) else None)
    )


_VUE_FALSE = {"false", "0", "null", "undefined", "''", '""', "!true", "!1"}


def vue_fragment_hides(tag: str, attrs: dict[str, str]) -> str | None:
    """Raw HTML in VitePress Markdown is a Vue template: an element whose ``v-if`` or ``v-show`` is a
    constant false is never rendered (``v-if``) or never shown (``v-show``)."""
    for directive in ("v-if", "v-show"):
        value = attrs.get(directive)
        if value is not None and value.strip().replace(" ", "") in _VUE_FALSE:
            return f"{directive}=false"
    return fragment_hides(tag, attrs)


# Markdown and MDX ---------------------------------------------------------------------------------
_JSX_STYLE = re.compile(r"\bstyle\s*=\s*\{\{(.*?)\}\}", re.S)
_JSX_ENTRY = re.compile(r"""([A-Za-z-]+)\s*:\s*(?:"([^"]*)"|'([^']*)'|([^,}]+))""")
_JSX_BOOL = re.compile(r"\b(hidden)\s*=\s*\{\s*(true|false)\s*\}")


def _jsx_style(raw: str) -> str | None:
    """``style={{display: 'none', fontSize: 0}}`` as CSS: ``display: none; font-size: 0``."""
    match = _JSX_STYLE.search(raw)
    if not match:
        return None
    css = []
    for m in _JSX_ENTRY.finditer(match.group(1)):
        name = re.sub(r"[A-Z]", lambda c: "-" + c.group(0).lower(), m.group(1))
        value = next(g for g in m.groups()[1:] if g is not None).strip()
        css.append(f"{name}: {value}{'px' if re.fullmatch(r'-?[1-9][0-9.]*', value) and name not in ('opacity',) else ''}")
    return "; ".join(css)


class _OneTag(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[str, str, dict[str, str]]] = []  # (kind, name, attrs)

    def handle_starttag(self, tag, attrs):
        self.events.append(("open", tag, {k: v if v is not None else "" for k, v in attrs}))

    def handle_startendtag(self, tag, attrs):
        self.events.append(("self", tag, {}))

    def handle_endtag(self, tag):
        self.events.append(("close", tag, {}))

    def handle_data(self, data):
        self.events.append(("data", data, {}))


def html_events(html: str) -> list[tuple[str, str, dict[str, str]]]:
    """Tags and text of a raw HTML fragment in order, as a browser's tokenizer reads them (JSX
    ``style={{...}}`` objects and ``hidden={true}`` are read as the attributes React writes)."""
    parser = _OneTag()
    parser.feed(html)
    parser.close()
    if "{" in html:  # JSX attribute expressions: read them from the raw tag
        for kind, name, attrs in parser.events:
            if kind == "open":
                style = _jsx_style(html)
                if style is not None:
                    attrs["style"] = style
                flag = _JSX_BOOL.search(html)
                if flag:
                    attrs["hidden"] = "" if flag.group(2) == "true" else "false"
                break
    return parser.events


@dataclass
class HiddenRuns:
    """Raw HTML met in a stream of Markdown tokens: whether the text at this point is inside an
    element a browser does not show, and, per reason, how many such elements held text."""

    stack: list[list] = field(default_factory=list)  # [tag, depth, reason, held text]
    dropped: Counter = field(default_factory=Counter)
    hides: Callable[[str, dict[str, str]], str | None] = fragment_hides  # the generator's rule for one element

    @property
    def active(self) -> bool:
        return bool(self.stack)

    def tag(self, kind: str, name: str, attrs: dict[str, str]) -> None:
        name = name.lower()
        if self.stack:
            top = self.stack[-1]
            if name == top[0] and kind == "open":
                top[1] += 1
            elif name == top[0] and kind == "close":
                top[1] -= 1
                if top[1] == 0:
                    self.stack.pop()
                    if top[3]:
                        self.dropped[top[2]] += 1
            return
        if kind == "open" and name not in VOID_TAGS:
            why = self.hides(name, attrs)
            if why:
                self.stack.append([name, 1, why, False])

    def opens_hidden(self, html: str) -> bool:
        return any(kind == "open" and self.hides(name, attrs) for kind, name, attrs in html_events(html))

    def feed(self, html: str) -> None:
        """Follow the tags (and count the hidden text) of a raw HTML fragment."""
        for kind, name, attrs in html_events(html):
            if kind == "data":
                self.swallow(name)
            else:
                self.tag(kind, name, attrs)
        return True

    def swallow(self, text: str) -> bool:
        """True (and the text counted as dropped) while inside a hidden element."""
        if self.stack and text.strip():
            self.stack[-1][3] = True
        return bool(self.stack)

    def finish(self) -> Counter:
        """The counts, with elements never closed (hidden to the end of the page) included."""
        for _, _, why, held in self.stack:
            if held:
                self.dropped[why] += 1
        self.stack.clear()
        return self.dropped


# built HTML pages -----------------------------------------------------------------------------------
def _is_element(node: object) -> bool:
    return isinstance(node, etree._Element) and isinstance(node.tag, str)


def _style_rules(doc: etree._Element) -> list[tuple[str, dict[str, tuple[Value, bool]]]]:
    """(selector text, declarations) of the page's own ``<style>`` elements, outside ``@media`` and other at-rules."""
    rules = []
    for style in doc.iter("style"):
        media = (style.get("media") or "all").strip().lower()
        if media not in ("all", "screen", ""):
            continue
        for rule in tinycss2.parse_stylesheet(style.text or "", skip_comments=True, skip_whitespace=True):
            if rule.type == "qualified-rule":
                found = declarations(rule.content)
                if found:
                    rules.append((tinycss2.serialize(rule.prelude), found))
    return rules


def computed_styles(doc: etree._Element) -> dict[etree._Element, dict[str, Value]]:
    """Each element's cascaded values of the visibility properties: its ``style`` attribute over the
    page's rules, ``!important`` over both, then specificity, then the later rule."""
    ranked: dict[etree._Element, dict[str, tuple[tuple, Value]]] = {}

    def apply(el: etree._Element, found: dict[str, tuple[Value, bool]], rank: tuple) -> None:
        own = ranked.setdefault(el, {})
        for name, (value, important) in found.items():
            key = (important, *rank)
            if name not in own or own[name][0] <= key:
                own[name] = (key, value)

    for order, (selectors, found) in enumerate(_style_rules(doc)):
        try:
            parsed = cssselect.parse(selectors)
        except cssselect.SelectorError:
            continue  # a selector cssselect cannot read: the rule is not applied
        for selector in parsed:
            if selector.pseudo_element:
                continue  # ::before and kin style generated content, not the element's text
            try:
                matches = doc.xpath(_TRANSLATOR.selector_to_xpath(selector))
            except (cssselect.ExpressionError, etree.XPathError):
                continue  # a state (:hover, :focus) or a selector XPath cannot express: not static
            for el in matches:
                apply(el, found, (False, selector.specificity(), order))
    for el in doc.xpath("//*[@style]"):
        apply(el, declarations(el.get("style")), (True, (0, 0, 0), 0))
    return {el: {name: value for name, (_, value) in own.items()} for el, own in ranked.items()}


def _in_tab_widget(el: etree._Element) -> bool:
    """An inactive tab panel: one click on its tab shows it."""
    if el.get("role") != "tabpanel":
        return False
    for ancestor in list(el.iterancestors())[:3]:
        if ancestor.xpath(".//*[@role='tablist']"):
            return True
    return False


def drop_invisible(doc: etree._Element) -> Counter:
    """Remove from ``doc`` what a browser does not show; per reason, how many elements held text."""
    styles = computed_styles(doc)
    dropped: Counter = Counter()
    doomed: list[etree._Element] = []

    def hides(el: etree._Element) -> str | None:
        why = attribute_hides(el.tag, el.attrib) or box_hides(styles.get(el, {}))
        if why and not (why in ("hidden attribute", "display:none") and _in_tab_widget(el)):
            if "".join(el.itertext()).strip():
                dropped[why] += 1
            doomed.append(el)
        return why

    def walk(el: etree._Element, invisible: bool, zero_font: bool) -> None:
        if hides(el):
            return
        props = styles.get(el, {})
        invisible, zero_font = _visibility(props, invisible), _zero_font(props, zero_font)
        if invisible or zero_font:
            lost = [el.text or "", *(c.tail or "" for c in el)]
            if any(t.strip() for t in lost):
                dropped["visibility:hidden" if invisible else "font-size:0"] += 1
            el.text = None
            for child in el:
                child.tail = None
        for child in el:
            if _is_element(child):
                walk(child, invisible, zero_font)

    if any("visibility" in props or "font-size" in props for props in styles.values()):
        walk(doc, False, False)  # inherited properties: every element's state depends on its ancestors'
    else:  # only elements that are hidden by themselves: look at those alone (most pages have none)
        order = {el: n for n, el in enumerate(doc.iter())}
        for el in sorted({*doc.xpath("//*[@hidden] | //template | //noscript"), *styles}, key=order.__getitem__):
            if not any(a in doomed for a in el.iterancestors()):  # not gone with a hidden ancestor
                hides(el)
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()  # its tail is the parent's text, which stays
    return dropped
