"""Astro Starlight pages cited where `astro build` publishes them: each page's URL is one the build
serves and each heading's anchor is the id Astro wrote on it. The site (hard headings, URL rules, a
`base`) and what Astro 7.3.5 with Starlight 0.42.4 built from it, plus the ids of a few Astro docs
pages from a build of the whole bundled corpus, are in tests/data/starlight-build (see its SOURCE.md).
Parsing only (no model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from citedocs.ingest.boundary import walk_docs
from citedocs.ingest.detect import plan_ingest
from citedocs.ingest.document import ParsedPage
from citedocs.ingest.readers import SourceFile, for_site, reader_named
from citedocs.ingest.readers.mdx import MDX

from conftest import ASTRO_DOCS

DATA = Path(__file__).parent / "data" / "starlight-build"
BUILT = json.loads((DATA / "built.json").read_text(encoding="utf-8"))
SITE = BUILT["site"]
# headings the build gives ids that are no section of their page: in an aside, in a list step
NESTED = {"heading-inside-an-aside", "try-it-yourself---update-the-query-in-the-tag-index-page"}


def built_id(page: str, text: str) -> str:
    """The id the build wrote on the first heading of ``page`` that reads ``text``."""
    return next(heading_id for shown, heading_id in SITE["pages"][page]["headings"] if shown == text)


def anchors(source: str, rel: str = "x.mdx") -> list[str]:
    """The section anchors the MDX reader gives a small page."""
    page = MDX.read(SourceFile(rel, source, Path("."), "https://docs.example.invalid/"))
    return [section.anchor for section in page.sections if section.anchor]


def read_site(tmp_path: Path) -> dict[str, ParsedPage]:
    """The site, read as `citedocs ingest` reads it (its astro.config.mjs detected): pages by source path."""
    site = tmp_path / "site"
    shutil.copytree(DATA / "site", site)
    plan = plan_ingest(site, None, None, None, "https://unused.invalid/")
    reader = for_site(reader_named(plan.format), plan.site)
    files, _ = walk_docs(plan.docs_dir, tuple(reader.suffixes))
    pages = {}
    for path in files:
        rel = path.relative_to(plan.docs_dir).as_posix()
        pages[rel] = reader.read(SourceFile(rel, path.read_text(encoding="utf-8"), plan.docs_dir, plan.base_url))
    return pages


def test_starlight_anchor_is_the_id_astro_builds_for_a_heading_with_code():
    source = "## `code` only\n\n## Heading with `<Image />` code\n\n## `--root <path-to-dir>`\n"
    assert anchors(source) == [
        built_id("headings.mdx", "code only"),
        built_id("headings.mdx", "Heading with <Image /> code"),
        built_id("headings.mdx", "--root <path-to-dir>"),
    ]


def test_starlight_anchor_keeps_the_space_a_component_without_text_leaves():
    source = (
        '## Heading with <Since v="5.7.0" />\n\n## Heading with a <Badge text="New" /> badge\n\n'
        "## Heading with <span>inline html</span>\n"
    )
    assert anchors(source) == [
        built_id("headings.mdx", "Heading with Added in: v5.7.0"),  # heading-with-
        built_id("headings.mdx", "Heading with a New badge"),
        built_id("headings.mdx", "Heading with inline html"),
    ]


def test_starlight_anchor_of_punctuation_emoji_entities_and_non_ascii_headings():
    shown = [
        "A & B", "Ends with &", "Emoji 🚀 rocket", "📘 React / Preact", "What is an island?", "Trailing colon:",
        "Sätteri and Ünïcödé", "日本語の見出し", "x² and ½ and Ⓐ", "-Leading and trailing-",
    ]
    source = "".join(f"## {text}\n\n" for text in shown) + "## Entities &amp; and &lt;tag&gt; and &copy;\n"
    expected = [built_id("headings.mdx", text) for text in shown]
    assert anchors(source) == expected + [built_id("headings.mdx", "Entities & and <tag> and ©")]


def test_starlight_anchor_of_a_frontmatter_expression_is_the_frontmatter_value():
    source = '---\ntitle: Hard headings\n---\n\n## Title is {frontmatter.title}\n\n## Literal {"expression"} here\n'
    assert anchors(source) == [
        built_id("headings.mdx", "Title is Hard headings"),
        built_id("headings.mdx", "Literal expression here"),
    ]


def test_starlight_markdown_page_keeps_expressions_as_text_and_the_spaces_of_empty_elements():
    source = (
        "---\ntitle: Plain markdown page\n---\n\n## Title is {frontmatter.title}\n\n"
        "## Heading with <kbd></kbd> empty element\n"
    )
    assert anchors(source, "plain.md") == [
        built_id("plain.md", "Title is {frontmatter.title}"),
        built_id("plain.md", "Heading with  empty element"),
    ]


def test_heading_id_syntax_is_heading_text_on_starlight():
    # in Markdown the build slugs `{#custom-id}` as text; in MDX it does not build at all
    # (custom-id.mdx.failed: "Could not parse expression with oxc")
    assert anchors("## Setup {#custom-id}\n", "plain.md") == [built_id("plain.md", "Setup {#custom-id}")]


def test_starlight_numbers_repeated_headings_over_the_page_nested_ones_included():
    source = (DATA / "site/src/content/docs/headings.mdx").read_text(encoding="utf-8")
    built = [heading_id for _, heading_id in SITE["pages"]["headings.mdx"]["headings"]]
    assert anchors(source) == [heading_id for heading_id in built if heading_id not in NESTED]
    assert {"repeated-4", "heading-inside-an-aside-1"} <= set(built)  # counted after the nested ones


def test_every_starlight_page_url_and_anchor_is_what_the_build_serves(tmp_path):
    pages = read_site(tmp_path)
    for rel, built in SITE["pages"].items():
        assert pages[rel].url == built["url"], rel  # base /sub, slugged file names, slug from the docs root
        built_ids = [heading_id for _, heading_id in built["headings"]]
        assert [s.anchor for s in pages[rel].sections if s.anchor] == [i for i in built_ids if i not in NESTED], rel
    published = {page.url for page in pages.values() if page.sections}
    served = set(SITE["sitemap"]) - {url for url, _ in SITE["served_as_404"]}
    assert published == served


def test_starlight_does_not_publish_underscore_files_drafts_or_slugs_from_root():
    unpublished = {
        "nested/_partial.mdx": "---\ntitle: P\n---\n\n## Section\n",
        "nested/draft.mdx": "---\ntitle: D\ndraft: true\n---\n\n## Section\n",
        "nested/moved-abs.mdx": "---\ntitle: M\nslug: /absolute-slug\n---\n\n## Section\n",  # served as the 404 page
    }
    for rel, source in unpublished.items():
        page = MDX.read(SourceFile(rel, source, Path("."), "https://docs.example.invalid/"))
        assert not page.sections and page.notes, rel


@pytest.mark.skipif(not ASTRO_DOCS.is_dir(), reason="the bundled Astro docs are not beside this checkout")
def test_astro_docs_anchors_are_the_ids_starlight_built_for_them():
    for rel, built in BUILT["astro-docs"].items():
        source = (ASTRO_DOCS / rel).read_text(encoding="utf-8")
        page = MDX.read(SourceFile(rel, source, ASTRO_DOCS, "https://docs.example.invalid/"))
        assert page.url == built["url"]
        built_ids = [heading_id for _, heading_id in built["headings"]]
        assert [s.anchor for s in page.sections if s.anchor] == [i for i in built_ids if i not in NESTED], rel
