"""Every citation anchor against the site the generator really builds.

    python benchmarks/anchors_vs_build.py PROJECT_OR_DOCS BUILT_SITE [--format F] [--page-urls dir|html] [--show N]

Reads the docs the way ``citedocs ingest`` would (detected format, base URL and the site config's
settings), then opens the page each source maps to in BUILT_SITE (the output of ``mkdocs build``,
``sphinx-build -b html|dirhtml``, ``vitepress build``, ``docusaurus build``, ``astro build``) and checks
that every section anchor is an ``id`` on that page. Where the build wrote a sitemap (VitePress with
``sitemap.hostname``, Docusaurus: ``sitemap.xml``; Astro/Starlight with ``site``: ``sitemap-index.xml``
and the ``sitemap-N.xml`` it lists), every page URL is also checked against it, relative to each one's
root (a VitePress sitemap leaves ``base`` out). It also lists the built page's heading ids that no
section carries (a heading with no text of its own before its first sub-heading is expected there,
and so is a heading nested in a container or quote; a theme's page title, Starlight's
``h1#_top``, and headings in navigation are left out). No model is loaded.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import lxml.etree
import lxml.html

from citedocs.ingest.detect import plan_ingest
from citedocs.ingest.document import DocumentError

BASE = "https://site.invalid/"
_HEADINGS = (  # a theme's dialogs (search, keyboard shortcuts), navigation ("On this page") and page
    # title (Starlight's ``<h1 id="_top">``) carry heading ids that are no section's
    "//*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6 or self::section][@id]"
    "[not(ancestor::*[@role='dialog'] or ancestor::nav or self::h1[@id='_top'])]/@id"
)


def built_page(site: Path, path: str) -> Path:
    """The file a page path (the URL below the base) is served from: ``a/b/`` -> ``a/b/index.html``;
    ``a/b`` -> ``a/b.html`` (VitePress clean URLs), else ``a/b/index.html`` (Docusaurus)."""
    path = unquote(path.split("#", 1)[0])
    if path.endswith(".html"):
        return site / path
    if path == "" or path.endswith("/"):
        return site / path / "index.html"
    flat = site / f"{path}.html"
    return flat if flat.is_file() else site / path / "index.html"


def _locs(sitemap: Path) -> list[str]:
    return [loc.strip() for loc in lxml.etree.parse(str(sitemap)).xpath("//*[local-name()='loc']/text()")]


def sitemap_paths(site: Path) -> set[str] | None:
    """The page paths a build's ``sitemap.xml`` lists (or the sitemaps a ``sitemap-index.xml`` names,
    read from the build by file name), below the longest prefix they share."""
    if (site / "sitemap.xml").is_file():
        locs = _locs(site / "sitemap.xml")
    elif (site / "sitemap-index.xml").is_file():
        parts = [site / loc.rsplit("/", 1)[-1] for loc in _locs(site / "sitemap-index.xml")]
        locs = [loc for part in parts if part.is_file() for loc in _locs(part)]
    else:
        return None
    root = os.path.commonprefix(locs).rsplit("/", 1)[0] + "/" if locs else ""
    return {loc[len(root) :] for loc in locs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", type=Path)
    parser.add_argument("site", type=Path)
    parser.add_argument("--format")
    parser.add_argument("--page-urls")
    parser.add_argument("--show", type=int, default=20)
    args = parser.parse_args()
    plan = plan_ingest(args.docs, args.format, None, None, BASE, args.page_urls)
    print(plan.describe())
    reader = plan.reader()
    sitemap = sitemap_paths(args.site)
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    uncovered: list[str] = []
    for source in plan.sources():
        rel = source.rel_path
        try:
            page = reader.read(source)
        except DocumentError as exc:
            counts["pages refused"] += 1
            wrong.append(f"{rel}: refused: {exc}")
            continue
        if not page.sections:  # a partial, a draft, a generated page: the reader says it is not a page
            counts["sources that are not pages"] += 1
            continue
        path = page.url[len(plan.base_url.rstrip("/")) + 1 :]
        if sitemap is not None and path not in sitemap:
            counts["page URLs not in the sitemap"] += 1
            wrong.append(f"{rel}: URL {page.url} not in the sitemap")
        built = built_page(args.site, path)
        if not built.is_file():
            counts["pages not in the build"] += 1
            wrong.append(f"{rel}: no {built.relative_to(args.site)} in the build")
            continue
        counts["pages"] += 1
        tree = lxml.html.parse(str(built))
        ids = set(tree.xpath("//@id"))
        anchors = {section.anchor for section in page.sections if section.anchor}
        counts["section anchors"] += len(anchors)
        for anchor in sorted(anchors - ids):
            counts["anchors not on the built page"] += 1
            wrong.append(f"{rel}#{anchor}")
        for heading in dict.fromkeys(tree.xpath(_HEADINGS)):
            counts["built heading ids"] += 1
            if heading not in anchors:
                counts["built heading ids with no section"] += 1
                uncovered.append(f"{rel}#{heading}")
    print(", ".join(f"{name}: {n:,}" for name, n in counts.items()))
    wrong_title = "anchors not on the built page, page URLs not in the sitemap or not built"
    for title, items in ((wrong_title, wrong), ("built heading ids with no section", uncovered)):
        if items:
            print(f"-- {title} (first {min(args.show, len(items))}):")
            print("\n".join(f"   {item}" for item in items[: args.show]))


if __name__ == "__main__":
    main()
