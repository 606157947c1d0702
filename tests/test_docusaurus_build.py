"""Docusaurus docs cited where `docusaurus build` publishes them: each doc's URL is the page's canonical
URL and each heading's anchor is the id Docusaurus wrote, with the generated config and with one that
moves URLs and anchors (`baseUrl`, `trailingSlash`, `routeBasePath`, `anchors.maintainCase`).
The site and what Docusaurus 3.10 built from it are in tests/data/docusaurus-site (see its SOURCE.md).
Parsing only (no model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from citedocs.ingest.detect import plan_ingest
from citedocs.ingest.document import ParsedPage
from citedocs.ingest.readers import DocusaurusSite
from citedocs.ingest.slugs import github_slug

DATA = Path(__file__).parent / "data" / "docusaurus-site"
BUILT = json.loads((DATA / "built.json").read_text(encoding="utf-8"))
CONFIGS = {"default": "docusaurus.config.js", "variant": "variant.docusaurus.config.js"}
SITE = "https://your-docusaurus-site.example.com/"
# headings the build gives ids that are no section of their page: nested in an admonition, a quote,
# and the heading of the imported partial (partials are not read into the pages that import them)
NESTED = {"heading-inside-an-admonition", "quoted-heading", "partial-heading"}


def read_site(tmp_path: Path, config: str) -> dict[str, ParsedPage]:
    """The site with the given config, read as `citedocs ingest` reads it: pages by source path."""
    site = tmp_path / config
    shutil.copytree(DATA / "docs", site / "docs")
    shutil.copy(DATA / CONFIGS[config], site / "docusaurus.config.js")
    plan = plan_ingest(site, None, None, None, "https://unused.invalid/")
    reader = plan.reader()
    pages = {source.rel_path: reader.read(source) for source in plan.sources()}
    return pages


def section(page: ParsedPage, heading: str):
    return next(s for s in page.sections if s.heading_path and s.heading_path[-1] == heading)


@pytest.mark.parametrize("config", CONFIGS)
def test_docusaurus_doc_urls_are_the_urls_the_build_serves(tmp_path, config):
    pages = read_site(tmp_path, config)
    published = {rel: page.url for rel, page in pages.items() if page.sections}
    assert published == {rel: doc["url"] for rel, doc in BUILT[config].items()}


@pytest.mark.parametrize("config", CONFIGS)
def test_docusaurus_heading_anchors_are_the_ids_docusaurus_built(tmp_path, config):
    for rel, page in read_site(tmp_path, config).items():
        if not page.sections:
            continue
        built = BUILT[config][rel]["heading_ids"]
        anchors = [s.anchor for s in page.sections if s.anchor]
        assert anchors == [i for i in built if i in anchors], rel  # every anchor built, in page order
        assert {i.lower() for i in set(built) - set(anchors)} <= NESTED, rel


def test_docusaurus_explicit_heading_id_is_the_anchor(tmp_path):
    pages = read_site(tmp_path, "default")
    headings = pages["hard/headings.mdx"]
    assert section(headings, "Explicit id").anchor == "custom-id"  # \{#custom-id}
    assert section(headings, "Trailing id with spaces").anchor == "spaced-id"  # \{#  spaced-id  }
    assert section(headings, "MDX comment id").anchor == "comment-id"  # {/* #comment-id */}
    # the template's own page: `## Headings {/* #my-heading-id */}`, `### Heading Ids {/* #my-custom-id */}`
    features = pages["tutorial-basics/markdown-features.mdx"]
    assert section(features, "Headings").anchor == "my-heading-id"
    assert section(features, "Heading Ids").anchor == "my-custom-id"


def test_docusaurus_explicit_id_is_not_counted_so_a_later_heading_shares_it(tmp_path):
    headings = read_site(tmp_path, "default")["hard/headings.mdx"]
    assert section(headings, "Explicit id that a later heading would take").anchor == "later-heading"
    assert section(headings, "Later heading").anchor == "later-heading"


def test_docusaurus_h1_is_cited_by_the_page_url(tmp_path):
    intro = read_site(tmp_path, "default")["intro.mdx"]
    title = section(intro, "Tutorial Intro")
    assert title.anchor == "" and intro.url == SITE + "docs/intro"  # the theme renders h1 without its id
    assert section(intro, "Getting Started").anchor_path == ("", "getting-started")


def test_docusaurus_number_prefixes_ids_and_slugs_move_urls(tmp_path):
    urls = {rel: page.url for rel, page in read_site(tmp_path, "default").items()}
    assert urls["02-numbered-folder/03-page.md"] == SITE + "docs/numbered-folder/page"
    assert urls["02-numbered-folder/04-with-id.md"] == SITE + "docs/numbered-folder/numbered-with-id"
    assert urls["hard/absolute-slug.md"] == SITE + "docs/custom-path"  # slug: /custom-path
    assert urls["hard/relative-slug.md"] == SITE + "docs/hard/moved-here"  # slug: moved-here
    assert urls["readme-folder/README.md"] == SITE + "docs/readme-folder/"


def test_docusaurus_partials_and_drafts_are_not_pages(tmp_path):
    pages = read_site(tmp_path, "default")
    for rel in ("hard/_partial.mdx", "hard/draft.md"):
        assert pages[rel].sections == [] and "not a page" in pages[rel].notes[0], rel


def test_docusaurus_config_settings_are_read(tmp_path):
    read_site(tmp_path, "variant")
    plan = plan_ingest(tmp_path / "variant", None, None, None, "https://unused.invalid/")
    assert plan.base_url == SITE + "sub/"
    assert plan.site.docusaurus == DocusaurusSite(route_base="", trailing_slash=True, maintain_case=True)


def test_docusaurus_both_admonition_title_forms_label_their_body(tmp_path):
    page = read_site(tmp_path, "default")["hard/headings.mdx"]
    text = "\n".join(block.text for s in page.sections for block in s.blocks)
    assert "Bracket title:\n> A tip with a bracket title." in text
    assert "Space title:\n> A tip with a space title." in text


@pytest.mark.parametrize(
    ("heading", "built"),  # ids from the build above: github-slugger drops ², ½, emoji and punctuation
    [("Ünïcödé Café 中文标题 x² ½", "ünïcödé-café-中文标题-x-"), ("C++ & C# / F# support", "c--c--f-support"),
     ("Emoji 🎉 party :tada:", "emoji--party-tada"), ("What's new in v2.0? (beta!)", "whats-new-in-v20-beta")],
)
def test_github_slug_keeps_what_github_slugger_keeps(heading, built):
    assert github_slug(heading) == built
