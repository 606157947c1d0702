"""VitePress pages cited where `vitepress build` publishes them: every heading's anchor is the id
VitePress 2.0 wrote, and page URLs follow `cleanUrls`, `base` and `srcDir` in `.vitepress/config.*`.
The pages and what VitePress built from them are in tests/data/vitepress-build (see its SOURCE.md).
Parsing only (no model)."""

from __future__ import annotations

import json
from pathlib import Path

from citedocs.ingest.detect import plan_ingest
from citedocs.ingest.document import ParsedPage
from conftest import write_docs

DATA = Path(__file__).parent / "data" / "vitepress-build"
BUILT = json.loads((DATA / "built.json").read_text(encoding="utf-8"))
HOST = "https://hard.example.dev/"  # the config's sitemap.hostname; its base is /hard/
UNUSED = "https://unused.invalid/"


def read_site(folder: Path, page_urls: str | None = None) -> tuple[str, dict[str, ParsedPage]]:
    """Every page as `citedocs ingest` reads the folder: its detected base URL and pages by source path."""
    plan = plan_ingest(folder, None, None, None, UNUSED, page_urls)
    reader = plan.reader()
    pages = {source.rel_path: reader.read(source) for source in plan.sources()}
    return plan.base_url, pages


def built_ids(url: str, base: str) -> list[str]:
    """The heading ids VitePress wrote into the file a page URL is served from."""
    path = url.removeprefix(base)
    return BUILT["heading_ids"][f"{path}index.html" if path == "" or path.endswith("/") else path]


def section(page: ParsedPage, heading: str):
    return next(s for s in page.sections if s.heading_path and s.heading_path[-1] == heading)


def test_vitepress_heading_anchors_are_the_ids_vitepress_built():
    base, pages = read_site(DATA / "docs")
    for rel, page in pages.items():
        built = built_ids(page.url, base)
        anchors = [s.anchor for s in page.sections if s.anchor]
        assert anchors == [i for i in built if i in anchors], rel  # every anchor built, in page order
    cited = {s.anchor for s in pages["headings.md"].sections}
    # the only built ids no section cites: the headings nested in a container and in a quote
    assert set(built_ids(pages["headings.md"].url, base)) - cited == {"inside-a-container", "quoted-heading"}


def test_vitepress_page_urls_are_the_sitemap_urls_under_the_configured_base():
    base, pages = read_site(DATA / "docs")
    assert base == HOST + "hard/"  # sitemap.hostname + base
    # no cleanUrls in the config: VitePress's default publishes page.html; its sitemap leaves base out
    assert sorted(HOST + page.url.removeprefix(base) for page in pages.values()) == BUILT["sitemap"]
    assert pages["guide/setup.md"].url == HOST + "hard/guide/setup.html"


def test_vitepress_attribute_list_sets_the_id_and_leaves_the_title():
    _, pages = read_site(DATA / "docs")
    page = pages["headings.md"]
    assert section(page, "Id and class").anchor == "own-id"  # {#own-id .wide}
    assert section(page, "Quoted id attribute").anchor == "quoted-id"  # {id="quoted-id"}
    assert section(page, "Classes only").anchor == "classes-only"  # {.red}: a class, not text


def test_vitepress_emoji_entities_and_footnotes_are_slugged_as_vitepress_does():
    _, pages = read_site(DATA / "docs")
    page = pages["headings.md"]
    assert section(page, "Emoji :tada: and :rocket: party").anchor == "emoji-and-party"
    assert section(page, "Not an emoji :notanemoji: here").anchor == "not-an-emoji-notanemoji-here"
    assert section(page, "Entities & escapes * and <tags>").anchor == "entities-amp-escapes-and-lt-tags-gt"
    assert section(page, "Footnote heading[^1]").anchor == "footnote-heading"


def test_vitepress_a_nested_heading_takes_its_id_before_a_later_one():
    _, pages = read_site(DATA / "docs")
    page = pages["headings.md"]
    assert section(page, "Inside a container").anchor == "inside-a-container-1"
    assert section(page, "Quoted heading").anchor == "quoted-heading-1"


def test_vitepress_clean_urls_base_and_src_dir_follow_the_config(tmp_path):
    pages = {"index.md": "# Home\n", "guide/index.md": "# Guide\n", "guide/setup.md": "# Setup\n"}
    config = "export default defineConfig({\n  base: '/docs/',\n  srcDir: 'src',\n  cleanUrls: true,\n"
    config += "  sitemap: { hostname: 'https://x.dev' },\n  themeConfig: { sidebar: { base: '/not-the-site/' } },\n})\n"
    write_docs(tmp_path / "clean", {".vitepress/config.ts": config, **{f"src/{k}": v for k, v in pages.items()}})
    base, found = read_site(tmp_path / "clean")
    assert base == "https://x.dev/docs/"
    assert {rel: p.url for rel, p in found.items()} == {
        "index.md": base, "guide/index.md": base + "guide/", "guide/setup.md": base + "guide/setup",
    }
    # no config at all (the VitePress docs corpus): clean URLs, as vitepress.dev serves them
    write_docs(tmp_path / "bare", {**pages, "tip.md": "::: tip\nx\n:::\n"})
    assert read_site(tmp_path / "bare")[1]["guide/setup.md"].url == UNUSED + "guide/setup"
    assert read_site(tmp_path / "bare", page_urls="html")[1]["guide/setup.md"].url == UNUSED + "guide/setup.html"
