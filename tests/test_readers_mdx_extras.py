"""Docusaurus/Starlight MDX extras: titled containers, tab labels as context, frontmatter URLs."""

from __future__ import annotations

from pathlib import Path

from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers.mdx import MDX

BASE = "https://docs.example.com/"


def read(rel: str, text: str):
    return MDX.read(SourceFile(rel_path=rel, text=text, root=Path("."), base_url=BASE))


def body(page) -> str:
    return "\n".join(b.text for s in page.sections for b in s.blocks)


def test_titled_container_keeps_its_title():
    page = read("a.mdx", "---\ntitle: A\n---\n\n:::tip[Keep this in mind]\nUse `astro add`.\n:::\n")
    assert body(page).startswith("Keep this in mind:\n> Use `astro add`.")


def test_tab_item_label_stays_as_context_of_its_body():
    text = (
        "---\ntitle: A\n---\n\n<Tabs>\n<TabItem label=\"npm\">\n```sh\nnpm i x\n```\n</TabItem>\n"
        "<TabItem label=\"pnpm\">\n```sh\npnpm add x\n```\n</TabItem>\n</Tabs>\n"
    )
    assert "npm:\n```sh\nnpm i x\n```" in body(read("a.mdx", text))
    assert "pnpm:\n```sh\npnpm add x\n```" in body(read("a.mdx", text))


def test_frontmatter_slug_moves_the_page_url_from_the_docs_root():
    # Starlight takes `slug` as the page's id, whatever its folder (tests/data/starlight-build)
    assert read("guides/a.mdx", "---\ntitle: A\nslug: start/here\n---\nx\n").url == BASE + "start/here/"
    assert read("guides/a.mdx", "---\ntitle: A\nslug: renamed\n---\nx\n").url == BASE + "renamed/"
    assert read("guides/a.mdx", "---\ntitle: A\nid: intro\n---\nx\n").url == BASE + "guides/a/"  # Docusaurus's, not Astro's
    assert read("guides/a.mdx", "---\ntitle: A\n---\nx\n").url == BASE + "guides/a/"
