"""Which docs format a folder is written in, and the public URL it is served under.

``citedocs ingest PATH`` should need nothing else for a typical docs project, so the site
generator is recognised from its own files: ``mkdocs.yml`` (its ``site_url`` and ``docs_dir``),
``.vitepress/config.*``, ``docusaurus.config.*``, ``astro.config.*``, Sphinx's ``conf.py``, or a
folder of built ``.html``. Without a generator config, the sources themselves are sniffed. Every
decision carries the reason, so the CLI can say what it detected and why; ``--format`` and
``--base-url`` override. Two generators in one folder is an error naming those flags, not a guess.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from .document import DocumentError, ParsedPage
from .pipeline import IngestError
from .boundary import walk_docs
from .readers import (
    DocusaurusSite,
    Reader,
    SiteOptions,
    SourceFile,
    for_site,
    reader_named,
    remembered_definition_lists,
    remembered_directory_urls,
)
from .slugs import toc_slugify
from .sphinx_conf import myst_options

FORMATS = ("mdx", "mkdocs", "vitepress", "rst", "html")
_JS_SUFFIXES = (".js", ".ts", ".mjs", ".mts", ".cjs", ".cts")
_SNIFF_FILES = 200  # enough files to tell dialects apart without reading a huge folder
# a heading's ``{: #id}`` is MkDocs' attribute list; a bare ``{#id}`` is written the same in VitePress
# (translated VitePress pages pin every heading's English anchor with it), so it tells neither apart
_MKDOCS_MARKS = re.compile(r'^\s*(?:(?:!!!|\?\?\?\+?)\s+\w|===\s+"|/// \w)|^#+ .*\{:', re.M)
# a translated VitePress folder (docs/ru/) holds its locale's config: ``defineAdditionalConfig`` from 'vitepress'
_VITEPRESS_IMPORT = re.compile(r"""from\s+['"]vitepress['"]""")
_VITEPRESS_MARKS = re.compile(r"^:{3,}\s*(?:tip|info|warning|danger|details|code-group)\b|^layout: home|^<<< @/", re.M)


class DetectionError(IngestError):
    """The folder's format cannot be told (or is ambiguous); the message says which flags settle it."""


@dataclass(frozen=True)
class Detection:
    format: str  # a reader name
    docs_dir: Path  # the folder whose files are the pages
    base_url: str | None  # from the generator's config, when it names one
    reason: str  # what was found, for the user
    site: SiteOptions = SiteOptions()  # config settings that change URLs or anchors
    from_config: bool = False  # a generator's config file was found (not only its pages' syntax)


@dataclass(frozen=True)
class _PythonRef:
    """A ``!!python/name:x.y`` or ``!!python/object/apply:x.y {kwds: ...}`` value: named, never imported."""

    name: str
    kwds: dict


def _python_ref(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> _PythonRef | None:
    kind, _, name = suffix.partition(":")
    if kind not in ("name", "object/apply"):
        return None
    value = loader.construct_mapping(node, deep=True) if isinstance(node, yaml.MappingNode) else {}
    return _PythonRef(name, dict(value.get("kwds") or {}))


class _PermissiveLoader(yaml.SafeLoader):
    """mkdocs.yml uses tags such as ``!!python/name:...`` and ``!ENV``: a Python reference is kept by
    name (a ``toc`` slugify setting changes every anchor), anything else is not needed."""


_PermissiveLoader.add_multi_constructor("tag:yaml.org,2002:python/", _python_ref)
_PermissiveLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _extensions(extensions: object) -> dict[str, object]:
    """``markdown_extensions`` as name -> options (None for a bare name): a list of names or one-key
    maps (mkdocs.yml), or a table (zensical.toml)."""
    entries = extensions if isinstance(extensions, list) else [extensions] if isinstance(extensions, dict) else []
    return {str(name): options for entry in entries for name, options in (entry.items() if isinstance(entry, dict) else [(entry, None)])}


def _toc_settings(named: dict[str, object]) -> dict:
    """The options of the ``toc`` entry in ``markdown_extensions`` (as ``_extensions`` reads them)."""
    options = named.get("toc", named.get("markdown.extensions.toc"))
    return options if isinstance(options, dict) else {}


# Python-Markdown extensions that bring ``def_list`` (``extra`` and PyMdown's ``extra`` bundle it)
_DEF_LIST = frozenset({"def_list", "markdown.extensions.def_list", "extra", "markdown.extensions.extra", "pymdownx.extra"})


def _mkdocs_site(data: dict, zensical: bool = False) -> tuple[SiteOptions, list[str]]:
    """The URL layout and slug rule an MkDocs (or Zensical) config sets, and what to tell the user.

    Definition lists follow ``markdown_extensions``; a Zensical config that names no extensions gets
    Zensical's default set, which enables ``def_list``."""
    extensions = _extensions(data.get("markdown_extensions"))
    toc = _toc_settings(extensions)
    slugify, notes = toc.get("slugify"), []
    if isinstance(slugify, dict) and "object" in slugify:  # zensical.toml: {object = "...", kwds = {...}}
        slugify = _PythonRef(str(slugify["object"]), dict(slugify.get("kwds") or {}))
    name, options = (slugify.name, slugify.kwds) if isinstance(slugify, _PythonRef) else ("", {})
    separator = str(toc.get("separator") or "-")
    try:
        toc_slugify(name, options, separator)
    except ValueError:
        notes.append(f"toc slugify {name} is not known to citedocs; anchors use Python-Markdown's default")
        name, options = "", {}
    if name:
        notes.append(f"toc slugify {name}{' ' + str(options) if options else ''}")
    directory_urls = data.get("use_directory_urls") is not False
    if not directory_urls:
        notes.append("use_directory_urls: false (page.html URLs)")
    definition_lists = bool(extensions.keys() & _DEF_LIST) or (zensical and not extensions)
    if not definition_lists:
        notes.append("def_list not enabled (':   ' lines are text)")
    site = SiteOptions(
        directory_urls, name, tuple(sorted(options.items())), separator, definition_lists=definition_lists,
        nav_titles=tuple(_nav_titles(data.get("nav"))),
    )
    return site, notes


def _nav_titles(nav: object) -> list[tuple[str, str]]:
    """(page path, title) for every ``Title: page.md`` entry of an MkDocs ``nav``, sections included;
    a bare ``page.md`` or a link to a URL names no title of a page."""
    found: list[tuple[str, str]] = []
    for entry in nav if isinstance(nav, list) else []:
        for title, target in entry.items() if isinstance(entry, dict) else ():
            if isinstance(target, list):
                found += _nav_titles(target)
            elif isinstance(target, str) and title is not None and "://" not in target:
                found.append((target.strip().removeprefix("./"), str(title)))
    return found


def _read_config(config: Path) -> object:
    text = config.read_text(encoding="utf-8")
    if config.suffix == ".toml":
        return tomllib.loads(text).get("project", {})
    return yaml.load(text, Loader=_PermissiveLoader)  # noqa: S506 (safe loader subclass)


def _mkdocs(config: Path) -> Detection:
    """``mkdocs.yml``, or Zensical's ``zensical.yml``/``zensical.toml`` (Material's successor, which reads
    the same settings and Markdown dialect)."""
    try:
        data = _read_config(config)
    except (yaml.YAMLError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        kind = "TOML" if config.suffix == ".toml" else "YAML"
        raise DetectionError(
            f"{config} is not valid {kind}{where}: {getattr(exc, 'problem', exc)}. Fix it, or pass --format and --base-url."
        ) from exc
    if not isinstance(data, dict):
        raise DetectionError(f"{config} is not a key: value mapping. Fix it, or pass --format and --base-url.")
    docs_dir = config.parent / str(data.get("docs_dir") or "docs")
    site_url = data.get("site_url")
    site, notes = _mkdocs_site(data, zensical=config.name.startswith("zensical"))
    details = ", ".join([f"site_url {site_url}" if site_url else "no site_url", f"docs_dir {data.get('docs_dir') or 'docs'}", *notes])
    return Detection("mkdocs", docs_dir, str(site_url) if site_url else None, f"{config.name} ({details})", site)


def _config_value(config: Path, key: str) -> str | None:
    """A string literal assigned to ``key`` in a JS/TS config (``site: 'https://...'``)."""
    return _js_value(config.read_text(encoding="utf-8", errors="replace"), key)


def _js_value(text: str, key: str, top_level: bool = False) -> str | None:
    """The first string or boolean literal assigned to ``key`` (``base: '/docs/'``, ``cleanUrls: true``)
    in JS/TS config text; with ``top_level``, only in the config object itself (a sidebar item's
    ``base`` is not the site's)."""
    for match in re.finditer(rf"""\b{key}\s*:\s*(?:['"`]([^'"`]+)['"`]|(true|false)\b)""", text):
        if not top_level or _depth(text, match.start()) == 1:
            return match.group(1) or match.group(2)
    return None


def _depth(text: str, at: int) -> int:
    """How many ``{`` are open at ``at`` (braces inside strings are rare enough in a site config)."""
    return text.count("{", 0, at) - text.count("}", 0, at)


def _js_object(text: str, key: str, holding: str) -> str:
    """The body of the first ``key: { ... }`` object whose text mentions one of ``holding`` ("" if none)."""
    for match in re.finditer(rf"\b{key}\s*:\s*\{{", text):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        body = text[match.end() : end - 1]
        if re.search(holding, body):
            return body
    return ""


def _vitepress(root: Path, config: Path) -> Detection:
    """A VitePress site: its pages under ``srcDir``, served at ``sitemap.hostname`` + ``base``, as
    ``page`` with ``cleanUrls: true`` and as ``page.html`` otherwise (VitePress's default)."""
    text = config.read_text(encoding="utf-8", errors="replace")
    hostname, base = _js_value(text, "hostname"), _js_value(text, "base", top_level=True) or "/"
    src_dir = _js_value(text, "srcDir", top_level=True) or "."
    clean = _js_value(text, "cleanUrls", top_level=True) == "true"
    site_url = hostname
    if hostname and not hostname.rstrip("/").endswith(base.rstrip("/")):  # a hostname may already hold base
        site_url = hostname.rstrip("/") + base
    notes = [f"base {base}" if base != "/" else "", f"srcDir {src_dir}" if src_dir != "." else ""]
    notes.append("cleanUrls: URLs without .html" if clean else "no cleanUrls: page.html URLs, VitePress's default")
    reason = f"{config.relative_to(root)} ({', '.join(n for n in notes if n)})"
    return Detection("vitepress", config.parent.parent / src_dir, site_url, reason, SiteOptions(directory_urls=clean))


def _docusaurus(folder: Path, config: Path) -> Detection:
    """A Docusaurus site: ``url`` + ``baseUrl``, and the docs plugin's ``path`` and ``routeBasePath``
    (the classic preset's ``docs: {...}``), ``trailingSlash`` and ``markdown.anchors.maintainCase``."""
    text = config.read_text(encoding="utf-8", errors="replace")
    url, base = _js_value(text, "url"), _js_value(text, "baseUrl") or "/"
    docs_options = _js_object(text, "docs", r"\b(?:path|routeBasePath|sidebarPath)\s*:")
    docs_path = _js_value(docs_options, "path") or "docs"
    trailing = _js_value(text, "trailingSlash", top_level=True)
    site = DocusaurusSite(
        route_base=(_js_value(docs_options, "routeBasePath") or "docs").strip("/"),
        trailing_slash=None if trailing is None else trailing == "true",
        maintain_case=_js_value(_js_object(text, "anchors", "maintainCase"), "maintainCase") == "true",
    )
    docs = folder / docs_path if (folder / docs_path).is_dir() else folder
    reason = f"{config.name} (Docusaurus; docs served at {base.rstrip('/')}/{site.route_base}, trailingSlash {trailing or 'not set'})"
    return Detection("mdx", docs, f"{url.rstrip('/')}{base}" if url else None, reason, SiteOptions(docusaurus=site))


def _astro(folder: Path, config: Path) -> Detection:
    """An Astro (Starlight) site: its pages under ``src/content/docs``, served at ``site`` + ``base``
    (every URL of the build, sitemap included, starts with ``base``)."""
    text = config.read_text(encoding="utf-8", errors="replace")
    site, base = _js_value(text, "site", top_level=True), (_js_value(text, "base", top_level=True) or "/").strip("/")
    docs = folder / "src" / "content" / "docs"
    site_url = f"{site.rstrip('/')}/{base}/" if site and base else site
    reason = f"{config.name} (Astro{f'; base /{base}' if base else ''})"
    return Detection("mdx", docs if docs.is_dir() else folder, site_url, reason)


def _translated(path: Path) -> Detection | None:
    """A translation folder of a site whose config sits further up: Docusaurus's
    ``i18n/<lang>/docusaurus-plugin-content-docs/current`` or Starlight's ``src/content/docs/<lang>``.
    Its pages are the site's, served under ``<lang>/``."""
    path = path.resolve()
    parents = path.parents
    if len(parents) >= 4 and parents[0].name.startswith("docusaurus-plugin-content-docs") and parents[2].name == "i18n":
        config, lang = _first(parents[3], "docusaurus.config"), parents[1].name
        found = _docusaurus(parents[3], config) if config else None
    elif len(parents) >= 4 and (parents[2].name, parents[1].name, parents[0].name) == ("src", "content", "docs"):
        config, lang = _first(parents[3], "astro.config"), path.name
        found = _astro(parents[3], config) if config else None
    else:
        return None
    if found is None:
        return None
    base_url = f"{found.base_url.rstrip('/')}/{lang}/" if found.base_url else None
    return replace(found, docs_dir=path, base_url=base_url, reason=f"the {lang} translation of the site of {found.reason}", from_config=True)


def _first(folder: Path, stem: str) -> Path | None:
    return next((folder / f"{stem}{s}" for s in _JS_SUFFIXES if (folder / f"{stem}{s}").is_file()), None)


def _generators(folder: Path) -> list[Detection]:
    """Every generator whose config sits in ``folder``."""
    found: list[Detection] = []
    for name in ("mkdocs.yml", "mkdocs.yaml", "zensical.toml", "zensical.yml", "zensical.yaml"):
        if (folder / name).is_file():
            found.append(_mkdocs(folder / name))
            break
    for site in (folder, folder / "docs"):
        config = _first(site / ".vitepress", "config")
        if config:
            found.append(_vitepress(folder, config))
            break
    config = _first(folder, "docusaurus.config")
    if config:
        found.append(_docusaurus(folder, config))
    config = _first(folder, "astro.config")
    if config:
        found.append(_astro(folder, config))
    # sphinx-quickstart's layouts: conf.py in the docs folder, or in its source/ beside build/
    sphinx_dirs = ("", "docs", "doc", "source", "docs/source", "doc/source")
    for conf in (folder / d / "conf.py" for d in sphinx_dirs):
        if conf.is_file():
            match = re.search(r"""^html_baseurl\s*=\s*['"]([^'"]+)['"]""", conf.read_text(errors="replace"), re.M)
            site, builder = _sphinx_builder([conf.parent, conf.parent.parent, folder])
            myst, notes = myst_options(conf)
            site = replace(site, myst=myst)
            reason = f"{conf.relative_to(folder)} (Sphinx; {'; '.join([builder, *notes])})"
            found.append(Detection("rst", conf.parent, match.group(1) if match else None, reason, site))
            break
    return found


def _sphinx_builder(folders: list[Path]) -> tuple[SiteOptions, str]:
    """The URL layout of a Sphinx site, from the builder its ``.readthedocs.yaml`` names (Read the
    Docs builds with ``html`` unless told ``dirhtml``); with no such file, ``dirhtml`` is assumed."""
    for folder in dict.fromkeys(folders):
        for name in (".readthedocs.yaml", ".readthedocs.yml"):
            path = folder / name
            if not path.is_file():
                continue
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError):
                continue
            sphinx = data.get("sphinx") if isinstance(data, dict) else None
            if isinstance(sphinx, dict):
                builder = str(sphinx.get("builder") or "html")
                return SiteOptions(directory_urls=builder == "dirhtml"), f"builder {builder} from {name}"
    return SiteOptions(), "no builder named; dirhtml URLs assumed, pass --page-urls html for page.html"


def _sniff(folder: Path) -> Detection | None:
    """No generator config: tell the format from the sources themselves."""
    kinds: Counter[str] = Counter()
    for path in folder.rglob("*"):
        suffix = path.suffix.lower()
        if suffix in (".md", ".mdx", ".markdown", ".rst", ".html", ".htm") and path.is_file():
            kinds[{".htm": ".html", ".markdown": ".md"}.get(suffix, suffix)] += 1
    if not kinds:
        return None
    total = sum(kinds.values())
    major = [k for k, n in kinds.items() if n >= max(2, total // 10)] or [kinds.most_common(1)[0][0]]
    families = {"mdx" if k in (".md", ".mdx") else k.lstrip(".") for k in major}
    if len(families) > 1:
        counts = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
        raise DetectionError(
            f"{folder} holds several docs formats ({counts}); pass --format {' or --format '.join(sorted(families))} "
            "and --base-url, or point at the folder of one of them."
        )
    family = families.pop()
    counts = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    for locale_config in (_first(folder, "config"), _first(folder, "index")):
        if family == "mdx" and locale_config and _VITEPRESS_IMPORT.search(locale_config.read_text(encoding="utf-8", errors="replace")):
            reason = f"{locale_config.name} imports 'vitepress' (a translated VitePress folder); {counts} files"
            return Detection("vitepress", folder, None, reason)
    if family != "mdx":
        return Detection(family, folder, None, f"no generator config; {counts} files")
    if kinds[".mdx"]:
        return Detection("mdx", folder, None, f"no generator config; {counts} files (MDX)")
    marks = Counter()
    for path in sorted(folder.rglob("*.md"))[:_SNIFF_FILES]:
        text = path.read_text(encoding="utf-8", errors="replace")
        marks["mkdocs"] += len(_MKDOCS_MARKS.findall(text))
        marks["vitepress"] += len(_VITEPRESS_MARKS.findall(text))
    if not any(marks.values()):
        return Detection("mdx", folder, None, f"no generator config; {counts} files in plain Markdown")
    dialect, hits = marks.most_common(1)[0]
    syntax = "admonitions/tabs/attribute lists" if dialect == "mkdocs" else "::: containers/home layout"
    return Detection(dialect, folder, None, f"no generator config; {counts} files using {dialect} syntax ({hits}x {syntax})")


def detect(path: Path) -> Detection:
    """The format of the docs at ``path`` (a project folder, or the docs folder inside one)."""
    if not path.exists():
        raise DetectionError(f"folder not found: {path}. Pass the folder that holds your docs.")
    if not path.is_dir():
        raise DetectionError(f"not a folder: {path}. Pass the folder that holds your docs.")
    found = _generators(path)
    if not found and path.parent != path:
        # pointed at the docs folder itself: the generator config sits one level up
        found = [d for d in _generators(path.parent) if d.docs_dir.resolve() == path.resolve()]
    formats = {d.format for d in found}
    if len(formats) > 1:
        names = ", ".join(d.reason for d in found)
        raise DetectionError(
            f"{path} holds the configs of several docs generators ({names}); pass --format "
            f"({' or '.join(sorted(formats))}) and --base-url to say which to ingest."
        )
    if found:
        detection = found[0]
        return Detection(detection.format, detection.docs_dir, detection.base_url, f"found {detection.reason}", detection.site, True)
    translated = _translated(path)
    if translated:
        return replace(translated, reason=f"found {translated.reason}")
    sniffed = _sniff(path)
    return sniffed or Detection("mdx", path, None, "no docs files found")


@dataclass(frozen=True)
class IngestPlan:
    """What an ingest will read and how: the outcome of flags, the corpus's memory and detection."""

    format: str
    docs_dir: Path
    base_url: str
    reasons: tuple[str, ...]
    site: SiteOptions = SiteOptions()  # the generator config's URL and anchor settings
    base_url_defaulted: bool = False  # no flag, memory or config named one: the caller's default is used
    from_config: bool = False  # the format was detected from a generator's config file

    def describe(self) -> str:
        return f"format {self.format}, base URL {self.base_url}, docs {self.docs_dir} ({'; '.join(self.reasons)})"

    def reader(self) -> Reader:
        """The planned format's reader, with the site's settings."""
        return for_site(reader_named(self.format), self.site)

    def sources(self) -> list[SourceFile]:
        """Every docs file the plan's reader reads, as ingest hands it over (for tools that compare a
        reader's output with a real build, or two versions of a reader)."""
        files, _ = walk_docs(self.docs_dir, tuple(self.reader().suffixes))
        return [
            SourceFile(path.relative_to(self.docs_dir).as_posix(), path.read_text(encoding="utf-8", errors="replace"), self.docs_dir, self.base_url)
            for path in files
        ]

    def pages(self) -> Iterator[ParsedPage]:
        """Every page the plan's reader makes of the docs, as ingest reads them; a file the reader
        refuses is left out, as ingest leaves it out of the index (its report says why)."""
        reader = self.reader()
        for source in self.sources():
            try:
                yield reader.read(source)
            except DocumentError:
                continue


def remembered_format(pipeline: str) -> str:
    """The reader name at the start of a corpus's pipeline string (``mkdocs-1+chunker-5+...``)."""
    return pipeline.split("+", 1)[0].rsplit("-", 1)[0]


PAGE_URLS = {"dir": True, "html": False}  # --page-urls: ``page/`` or ``page.html``


def plan_ingest(
    path: Path,
    format: str | None,
    base_url: str | None,
    remembered: tuple[str, str] | None,
    default_base_url: str,
    page_urls: str | None = None,
) -> IngestPlan:
    """Flags win; then what the corpus was ingested with before (``remembered``: its pipeline string,
    or just its format, and its base URL); then what the folder's generator says; the default base
    URL last, and said so."""
    if page_urls is not None and page_urls not in PAGE_URLS:
        raise DetectionError(f"unknown --page-urls {page_urls!r}; use dir (page/) or html (page.html)")
    reasons: list[str] = []
    if format is not None and format not in FORMATS:
        raise DetectionError(f"unknown docs format {format!r}; use one of: {', '.join(FORMATS)}")
    try:
        detection: Detection | None = detect(path)
    except DetectionError:
        if not (format or remembered):
            raise
        detection = None  # ambiguous, but the flag or the corpus's memory settles it
    format_given = format is not None
    if format:
        reasons.append(f"format {format} from --format")
    elif remembered:
        format = remembered_format(remembered[0])
        reasons.append(f"format {format} remembered for this corpus (pass --format to change it)")
    else:
        assert detection is not None
        format = detection.format
        reasons.append(f"format {format} detected: {detection.reason}")
    same = detection is not None and detection.format == format
    docs_dir = detection.docs_dir if detection and same else path
    site = detection.site if detection and same else SiteOptions()
    if site != SiteOptions() and (format_given or remembered):  # the detection reason was not printed
        reasons.append(f"URL and anchor settings from {detection.reason}")
    elif remembered and not (same and detection.from_config) and not remembered_definition_lists(remembered[0]):
        # no generator config here to say it: keep what the config said when the corpus was ingested
        site = replace(site, definition_lists=False)
        reasons.append("definition lists off, as remembered for this corpus")
    if page_urls is not None:
        if format not in ("rst", "mkdocs", "vitepress"):
            raise DetectionError(
                f"--page-urls applies to Sphinx (rst), MkDocs and VitePress sites; {format} pages keep their own URLs"
            )
        site = replace(site, directory_urls=PAGE_URLS[page_urls])
        reasons.append(f"{page_urls} page URLs from --page-urls")
    elif remembered and (directory_urls := remembered_directory_urls(remembered[0])) != site.directory_urls:
        site = replace(site, directory_urls=directory_urls)
        reasons.append("page URL layout remembered for this corpus (pass --page-urls to change it)")
    if base_url:
        reasons.append("base URL from --base-url")
    elif remembered:
        base_url = remembered[1]
        reasons.append("base URL remembered for this corpus")
    elif detection and same and detection.base_url:
        base_url = detection.base_url
        reasons.append("base URL from the generator config")
    else:
        reasons.append(f"no base URL found; using the default {default_base_url} (pass --base-url)")
        from_config = bool(detection and same and detection.from_config)
        return IngestPlan(format, docs_dir, default_base_url, tuple(reasons), site, True, from_config)
    return IngestPlan(format, docs_dir, base_url, tuple(reasons), site)
