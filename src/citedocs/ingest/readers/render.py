"""Render, don't guess: which text of a built HTML page a reader sees, decided by a layout engine.

Reading CSS statically (``visibility.py``) can only model the hiding it was written for; a transform,
a clip, text the colour of its background or a font size of 0.1px are all found by laying the
page out. A page whose markup could hide something is rendered in headless Chromium (the page's
own stylesheets, read from inside the docs folder, inlined; its scripts never run; no network),
and ``data/visibility.js`` reports each text run a reader does not see: hidden, zero-size,
clipped, transformed away, transparent, tiny, the colour of its background, off-screen,
``content-visibility: hidden``. Those runs are removed from the page before it is read, so they
never reach a chunk; an image whose box is not seen loses its alt text.

The fast path: a page whose elements that hold text the reader keeps (those of the main content
outside its navigation and permalinks, and the main content's ancestors) carry no ``style`` attribute, no presentational markup that can hide (``<font>``, ``<svg>``, ``<math>``, ``<marquee>``, a ``color``/``bgcolor``
attribute, a ``width``/``height`` under 4), and none of those elements is selected by a rule of its
stylesheets or ``<style>`` elements that could hide text (``display: none``, ``visibility: hidden``, an ``opacity`` under
0.5, a transform, a clip, a mask, a filter, a tiny font, a size of at most 1px, a far negative offset
or indent, a colour that is transparent or one of the sheets' background colours) is not rendered:
nothing on it could hide text except the ``hidden`` attribute, ``<template>`` and ``<noscript>``,
which the static reading handles exactly. A selector that cannot be matched statically (``:hover``,
``:has()``) counts as matching.

One browser with one tab renders pages one after another (bounded concurrency: a crawl of
thousands of pages holds one page in the browser at a time); a page that does not finish within
``html_render_timeout_s`` is reported as unreadable, the browser is restarted, and the rest of the
docs are read. Chromium's memory is that of one tab (``benchmarks/html_render.py`` measures it).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from functools import lru_cache
from importlib.resources import files
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import cssselect
import tinycss2
from lxml import etree
from tinycss2.ast import DimensionToken, FunctionBlock, IdentToken, NumberToken, PercentageToken

from ..boundary import inside
from ..document import DocumentError, ReaderUnavailable
from .visibility import HIDDEN_TAGS

_SCRIPT = files(__package__).joinpath("data", "visibility.js").read_text(encoding="utf-8")
_VIEWPORT = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
_CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome", "chrome")
_TRANSLATOR = cssselect.HTMLTranslator()


def chromium_path(configured: str = "") -> str:
    """The Chromium binary to render with: the ``chromium_path`` setting, else the first one installed."""
    for candidate in (configured,) if configured else _CANDIDATES:
        found = candidate if Path(candidate).is_file() else shutil.which(candidate)
        if found and os.access(found, os.X_OK):
            return found
    raise ReaderUnavailable(
        f"html_visibility = \"render\" needs headless Chromium to decide which text of an HTML page a reader sees, and "
        f"{'chromium_path = ' + repr(configured) + ' is not an executable' if configured else 'none is installed'}. "
        "Install it (Debian/Ubuntu: apt-get install chromium), set chromium_path to its binary, or set "
        "html_visibility = \"css\" to read stylesheets statically (it models fewer ways of hiding). Nothing was changed."
    )


class _Chromium:
    """One headless Chromium spoken to over ``--remote-debugging-pipe`` (CDP as NUL-ended JSON on fds 3
    and 4: no port is opened), with one tab whose scripts are disabled and which reaches no network."""

    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="citedocs-render-")
        to_browser, self._in = os.pipe()
        self._out, from_browser = os.pipe()

        def wire() -> None:  # in the child: the pipe ends become fds 3 (commands) and 4 (replies)
            a, b = os.dup(to_browser), os.dup(from_browser)
            os.dup2(a, 3)
            os.dup2(b, 4)

        flags = [
            "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--disable-breakpad", "--disable-crash-reporter", "--mute-audio", "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--user-data-dir={self.profile}", "about:blank",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            [binary, *flags], pass_fds=(3, 4), preexec_fn=wire, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        target = self.call("Target.createTarget", {"url": "about:blank"}, timeout=30)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, timeout=30)["sessionId"]
        self.call("Emulation.setScriptExecutionDisabled", {"value": True}, self.session)
        self.call("Emulation.setDeviceMetricsOverride", _VIEWPORT, self.session)
        self.frame = self.call("Page.getFrameTree", {}, self.session)["frameTree"]["frame"]["id"]

    def call(self, method: str, params: dict, session: str | None = None, timeout: float = 30.0) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params, **({"sessionId": session} if session else {})}
        os.write(self._in, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._out], [], [], left)[0]:
                    raise TimeoutError(method)
                chunk = os.read(self._out, 1 << 20)
                if not chunk:
                    raise ConnectionError("Chromium exited")
                self._buffer += chunk
            raw, _, self._buffer = self._buffer.partition(b"\0")
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message')}")
                return reply["result"]

    def visibility(self, html: str, timeout: float) -> dict:
        """Lay ``html`` out and return what ``visibility.js`` found unseen."""
        deadline = time.monotonic() + timeout
        self.call("Page.setDocumentContent", {"frameId": self.frame, "html": html}, self.session, timeout)
        left = max(0.001, deadline - time.monotonic())
        result = self.call(
            "Runtime.evaluate", {"expression": _SCRIPT, "returnByValue": True, "timeout": left * 1000}, self.session, left
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"visibility.js: {result['exceptionDetails'].get('text')}")
        return result["result"]["value"]

    def close(self) -> None:
        for fd in (self._in, self._out):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.killpg(self.process.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def memory_bytes(self) -> int:
        """Proportional set size (shared pages split between sharers) of the browser's processes, for the benchmark."""
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == self.process.pid:  # the session id: every process Chromium started
                    rollup = (stat.parent / "smaps_rollup").read_text()
                    total += int(re.search(r"^Pss:\s+(\d+) kB", rollup, re.M).group(1)) * 1024
            except (OSError, IndexError, ValueError, AttributeError):
                continue
        return total


_lock = threading.Lock()
_browser: _Chromium | None = None


def shared_browser(binary: str) -> _Chromium:
    """The one browser this process renders with, started on first use."""
    global _browser
    if _browser is None or _browser.process.poll() is not None:
        _browser = _Chromium(binary)
    return _browser


@atexit.register
def close_browser() -> None:
    global _browser
    if _browser is not None:
        _browser.close()
        _browser = None


# the page's stylesheets -------------------------------------------------------------------------------
def _local(root: Path, page: str, href: str) -> Path | None:
    """The file a relative stylesheet URL names, if it lies inside the docs folder (never outside)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return None  # another site's stylesheet is not fetched
    path = (root / PurePosixPath(page).parent / unquote(parts.path)).resolve()
    return path if inside(path, root) and path.is_file() else None


@lru_cache(maxsize=256)
def _sheet(path: Path, mtime_ns: int, root: Path) -> str:
    """A stylesheet with its ``@import``s (inside the docs folder) inlined, as one text."""
    text = path.read_text(encoding="utf-8", errors="replace")
    imported, rest = [], []
    for rule in tinycss2.parse_stylesheet(text):
        target = None
        if rule.type == "at-rule" and rule.lower_at_keyword == "import":
            token = next((t for t in rule.prelude if t.type not in ("whitespace", "comment")), None)
            if token is not None and token.type in ("url", "string"):
                target = token.value
            elif isinstance(token, FunctionBlock) and token.lower_name == "url":
                target = next((t.value for t in token.arguments if t.type == "string"), None)
        if target is not None:
            found = _local(root, str(path.relative_to(root)), target)
            if found is not None:
                imported.append(_sheet(found, found.stat().st_mtime_ns, root))
        else:
            rest.append(rule.serialize())
    return "\n".join([*imported, "".join(rest)]).replace("</style", "<\\/style")


def stylesheets(doc: etree._Element, root: Path, page: str) -> list[tuple[etree._Element, str]]:
    """The page's ``<link rel=stylesheet>`` elements that lie inside the docs folder, with their CSS."""
    found = []
    for link in doc.iter("link"):
        if "stylesheet" in (link.get("rel") or "").lower().split() and (link.get("media") or "all").strip().lower() != "print":
            path = _local(root.resolve(), page, link.get("href") or "")
            if path is not None:
                found.append((link, _sheet(path, path.stat().st_mtime_ns, root.resolve())))
    return found


# the fast path ---------------------------------------------------------------------------------------
_ALWAYS_CAN_HIDE = {
    "transform", "scale", "translate", "rotate", "zoom", "filter", "clip", "clip-path", "mask", "mask-image",
    "-webkit-mask", "-webkit-mask-image", "content-visibility",
}  # fmt: skip
_OFFSETS = {"left", "right", "top", "bottom", "inset", "text-indent", "margin", "margin-left", "margin-top", "margin-right"}
_SIZES = {"width", "height", "max-width", "max-height"}
_WHITE = {"#fff", "#ffffff", "white", "rgb(255,255,255)", "rgb(255 255 255)"}
_NONE = {"none", "auto", "initial", "unset", "inherit", "revert", "normal", "visible"}


def _values(decl) -> list:
    return [t for t in decl.value if t.type not in ("whitespace", "comment")]


def _px(token) -> float | None:
    """A length in CSS px (em and rem at 16px); a percentage or viewport unit counts as far."""
    if isinstance(token, NumberToken):
        return token.value
    if isinstance(token, DimensionToken):
        scale = {"px": 1, "pt": 4 / 3, "em": 16, "rem": 16, "ex": 8, "ch": 8}.get(token.lower_unit, 1000)
        return token.value * scale
    if isinstance(token, PercentageToken):
        return token.value * 1000
    return None


def _colour(values: list) -> str:
    return tinycss2.serialize(values).replace(" ", "").lower()


def _can_hide(name: str, values: list, backgrounds: set[str]) -> bool:
    """Whether one declaration could hide text (a superset: the browser decides the rest)."""
    first = values[0] if values else None
    ident = first.lower_value if isinstance(first, IdentToken) else ""
    if name in _ALWAYS_CAN_HIDE:
        return ident not in _NONE or len(values) > 1
    if name == "display":
        return ident == "none"
    if name == "visibility":
        return ident in ("hidden", "collapse")
    if name == "opacity":
        number = _px(first) if not isinstance(first, PercentageToken) else first.value / 100
        return number is None or number < 0.5
    if name in ("font-size", "font"):
        return any((px := _px(t)) is not None and 0 <= px < 6 for t in values if not isinstance(t, PercentageToken)) or any(
            isinstance(t, PercentageToken) and t.value < 40 for t in values
        )
    if name in _OFFSETS:
        return any((px := _px(t)) is not None and px <= -100 for t in values)
    if name in _SIZES:
        return any((px := _px(t)) is not None and 0 <= px <= 1 for t in values)
    if name in ("color", "-webkit-text-fill-color"):
        colour = _colour(values)
        faded = isinstance(first, FunctionBlock) and first.lower_name in ("rgba", "hsla") and "," in colour and colour.rsplit(",", 1)[1].rstrip(")") in ("0", "0.0", "0%")
        return ident == "transparent" or faded or colour in backgrounds | _WHITE
    return False


@lru_cache(maxsize=256)
def _hiding_selectors(css: str) -> tuple[str, ...]:
    """The selectors of a stylesheet's rules (inside ``@media``/``@supports`` too, but not ``print``)
    that declare something that could hide text."""
    rules = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
    flat: list = []

    def collect(items) -> None:
        for rule in items:
            if rule.type == "qualified-rule":
                flat.append(rule)
            elif rule.type == "at-rule" and rule.lower_at_keyword in ("media", "supports", "layer") and rule.content:
                if rule.lower_at_keyword == "media" and tinycss2.serialize(rule.prelude).strip().lower() == "print":
                    continue
                collect(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True))

    collect(rules)
    backgrounds = set()
    declared = []
    for rule in flat:
        decls = [d for d in tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True) if d.type == "declaration"]
        for d in decls:
            if d.lower_name in ("background", "background-color"):
                values = _values(d)
                backgrounds.add(_colour(values[:1]) if d.lower_name == "background" else _colour(values))
        declared.append((tinycss2.serialize(rule.prelude).strip(), decls))
    return tuple(
        selector for selector, decls in declared if any(_can_hide(d.lower_name, _values(d), backgrounds) for d in decls)
    )


def _selects(doc: etree._Element, selectors: str, scope: set) -> bool:
    try:
        parsed = cssselect.parse(selectors)
    except cssselect.SelectorError:
        return True  # cannot be read: it may select something
    for selector in parsed:
        try:
            if any(el in scope for el in doc.xpath(_TRANSLATOR.selector_to_xpath(selector))):
                return True
        except (cssselect.ExpressionError, etree.XPathError):
            return True  # a state (:hover, :checked) or :has(): it may select something
    return False


_PRESENTATIONAL = {"font", "svg", "math", "marquee"}


def render_reason(doc: etree._Element, sheets: list[tuple[etree._Element, str]], scope: set | None = None) -> str | None:
    """Why a page must be rendered to know what a reader sees, or None: the fast path. Only the
    elements whose styling can hide text the reader keeps matter (``scope``: those of the main
    content that hold text, and its ancestors; every element when None)."""
    scope = set(doc.iter()) if scope is None else scope
    page_rules = [
        (style, style.text or "") for style in doc.iter("style") if (style.get("media") or "all").strip().lower() != "print"
    ]
    for el in scope:
        if not isinstance(el.tag, str):
            continue
        if el.get("style") is not None:
            return "a style attribute"
        if el.tag in _PRESENTATIONAL or el.get("color") is not None or el.get("bgcolor") is not None:
            return "presentational markup"
        for size in (el.get("width"), el.get("height")):
            number = re.match(r"\s*(-?\d+(?:\.\d+)?)", size or "")
            if number and float(number.group(1)) < 4:
                return "an element under 4px wide or tall"
    for _, css in [*sheets, *page_rules]:
        for selectors in _hiding_selectors(css):
            if _selects(doc, selectors, scope):
                return f"a stylesheet rule that could hide text ({selectors[:80]})"
    return None


# rendering -----------------------------------------------------------------------------------------------
def render_invisible(doc: etree._Element, sheets: list[tuple[etree._Element, str]], binary: str, timeout: float) -> Counter:
    """Remove from ``doc`` the text a reader of the rendered page does not see; per reason, how many
    elements held such text. Raises ``DocumentError`` when the page does not render in ``timeout`` s."""
    dropped: Counter = Counter()
    for el in doc.xpath("//template | //noscript"):
        if el.getparent() is not None:
            if "".join(el.itertext()).strip():
                dropped[HIDDEN_TAGS[el.tag]] += 1
            el.drop_tree()
    etree.strip_tags(doc, etree.Comment, etree.ProcessingInstruction)  # their tails join the text around them
    for el in doc.xpath("//script"):
        el.drop_tree()
    numbered = [el for el in doc.iter() if isinstance(el.tag, str)]
    for n, el in enumerate(numbered):
        el.set("data-cd", str(n))
    inlined = []
    for link, css in sheets:
        style = etree.Element("style")
        style.text = css
        link.addnext(style)
        inlined.append(style)
    html = etree.tostring(doc, method="html", encoding="unicode")
    for style in inlined:
        style.getparent().remove(style)
    for el in numbered:
        del el.attrib["data-cd"]
    with _lock:
        browser = shared_browser(binary)
        try:
            found = browser.visibility(html, timeout)
        except (TimeoutError, ConnectionError):
            close_browser()  # a page stuck in layout: the next page gets a fresh browser
            raise DocumentError(
                f"did not finish rendering within {timeout:g}s (html_render_timeout_s), so what a reader sees of it is "
                "unknown and it is not read; simplify the page or raise the setting"
            ) from None
    held: set[tuple[int, str]] = set()
    for parent, before, why in found["text"]:
        if not 0 <= parent < len(numbered):
            continue  # text in an element the browser added (an implied <tbody>) is whitespace
        el = numbered[parent]
        held.add((parent, why))
        if before == -1:
            el.text = None
        elif 0 <= before < len(numbered) and numbered[before].getparent() is el:
            numbered[before].tail = None
        else:  # placed after an element the browser added: none of the element's own text is kept
            el.text = None
            for child in el:
                child.tail = None
    dropped.update(why for _, why in held)
    for n, why in found["alt"]:
        if 0 <= n < len(numbered) and numbered[n].getparent() is not None:
            numbered[n].drop_tree()
            dropped[why] += 1
    return dropped
