"""The MkDocs reader on the real Material for MkDocs docs: anchors as the live site makes them,
PyMdown syntax understood rather than leaked into the text. Parsing only (no model)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from citedocs.ingest.chunker import chunk_page
from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers.mkdocs import MKDOCS, build_parser

ROOT = Path(__file__).resolve().parents[1] / "evals/corpora/mkdocs-material-docs/docs"
SITE = "https://squidfunk.github.io/mkdocs-material/"



def read(rel: str, text: str | None = None, root: Path = ROOT):
    source = text if text is not None else (root / rel).read_text(encoding="utf-8")
    return MKDOCS.read(SourceFile(rel_path=rel, text=source, root=root, base_url=SITE))


@pytest.fixture(scope="module")
def corpus_pages():
    return [read(p.relative_to(ROOT).as_posix()) for p in sorted(ROOT.rglob("*.md"))]


def anchors(rel: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for section in read(rel).sections[1:]:
        found.setdefault(section.heading_path[-1], []).append(section.anchor)
    return found


@pytest.mark.parametrize(
    ("rel", "heading", "expected"),
    [
        # explicit ids from attribute lists, with <small> badges and data-toc-label beside them
        ("getting-started.md", "with pip recommended", ["with-pip"]),
        ("customization.md", "Overriding blocks recommended", ["overriding-blocks"]),
        ("setup/setting-up-navigation.md", "Navigation path Breadcrumbs", ["navigation-path"]),
        # plain headings: punctuation dropped, hyphens kept
        ("setup/setting-up-navigation.md", "Back-to-top button", ["back-to-top-button"]),
        ("blog/posts/mkdocs-2.0.md", "What's changing in MkDocs 2.0", ["whats-changing-in-mkdocs-20"]),
        # headings with code; repeated headings get _1, _2 (attribute lists without an id change nothing)
        ("upgrade.md", "Changes to mkdocs.yml", ["changes-to-mkdocsyml", "changes-to-mkdocsyml_1",
                                                 "changes-to-mkdocsyml_2", "changes-to-mkdocsyml_3",
                                                 "changes-to-mkdocsyml_4", "changes-to-mkdocsyml_5"]),
        ("upgrade.md", "Changes to *.html files", ["changes-to-html-files", "changes-to-html-files_1",
                                                   "changes-to-html-files_2", "changes-to-html-files_3",
                                                   "changes-to-html-files_4", "changes-to-html-files_5"]),
        ("upgrade.md", "What's new?", ["whats-new", "whats-new_1", "whats-new_2", "whats-new_3", "whats-new_4"]),
        ("upgrade.md", "content.code.copy", ["contentcodecopy"]),
        ("upgrade.md", "Upgrading from 8.x to 9.x", ["upgrading-from-8x-to-9x"]),
        # emoji shortcodes render as icons: not part of the text or the slug
        ("blog/posts/adding-a-badge-to-your-project.md", "Adding a badge to your project",
         ["adding-a-badge-to-your-project"]),
        # the dev set's expected anchors
        ("reference/code-blocks.md", "Code copy button", ["code-copy-button"]),
        ("setup/setting-up-versioning.md", "Setting a default version", ["setting-a-default-version"]),
    ],
)
def test_heading_anchors_match_the_live_site(rel, heading, expected):
    assert anchors(rel)[heading] == expected


def test_page_urls_are_mkdocs_directory_urls():
    assert read("getting-started.md").url == SITE + "getting-started/"
    assert read("setup/index.md").url == SITE + "setup/"
    assert read("index.md").url == SITE


def test_every_dev_set_anchor_exists_in_the_corpus():
    import json

    cases = Path(__file__).resolve().parents[1] / "evals/mkdocs-material-dev.jsonl"
    for line in cases.read_text().splitlines():
        for source in json.loads(line)["expected_sources"]:
            rel, _, anchor = source.partition("#")
            assert anchor in {s.anchor for s in read(rel).sections}, source


def test_no_attribute_list_or_block_marker_leaks_into_headings_or_text(corpus_pages):
    leaks = re.compile(r"\{ ?[#:.]|^\s*(!!!|\?\?\?|///|===)|--8<--|^:[ \t]", re.M)  # ^: a definition marker
    for page in corpus_pages:
        for section in page.sections:
            for heading in section.heading_path:
                assert "{" not in heading, (page.doc_path, heading)
            for block in section.blocks:
                prose = re.sub(r"(`{3,}).*?\1", "", block.text, flags=re.S)  # code samples may show the syntax
                prose = re.sub(r"`[^`\n]*`", "", prose)
                assert not leaks.search(prose), (page.doc_path, prose[:300])
                assert "<!--" not in prose, (page.doc_path, prose[:300])  # comments are not text


def test_admonition_body_is_markdown_not_code():
    page = read("getting-started.md")
    docker = next(s for s in page.sections if s.anchor == "with-docker")
    text = "\n".join(b.text for b in docker.blocks)
    assert "How to add plugins to the Docker image?:" in text  # the ??? title labels its body
    assert "> " in text and "```" in text  # body kept as a note; its own fence still code


def test_content_tab_label_stays_with_its_body():
    section = next(s for s in read("getting-started.md").sections if s.anchor == "with-pip")
    text = "\n".join(b.text for b in section.blocks)
    assert re.search(r'9\.x:\n```sh\npip install mkdocs-material=="9\.\*"', text)


def test_definition_list_body_keeps_its_tabs_code_and_later_paragraphs():
    """Material documents each option as ``:   definition``; what is indented under it (content
    tabs with the configuration samples) is Markdown, not text to drop."""
    section = next(s for s in read("setup/setting-up-the-footer.md").sections if s.anchor == "social-links")
    text = "\n".join(b.text for b in section.blocks)
    assert "This property must be set to a relative or absolute URL" in text
    assert not re.search(r"^:\s", text, re.M)  # the marker is syntax, not text
    assert re.search(r"Mastodon:\n```yaml\nextra:\n  social:\n    - icon: fontawesome/brands/mastodon", text)
    assert "link: mailto:<email-address>" in text
    page = read("x.md", "# T\n\n`term`\n:   First paragraph.\n\n    Second paragraph.\n\nAfter.\n")
    assert [b.text for b in page.sections[-1].blocks] == ["`term`", "First paragraph.", "Second paragraph.", "After."]


def test_definition_term_stays_with_its_definition_and_nested_blocks_are_markdown():
    text = (
        "# T\n\nLead-in paragraph.\n\n`theme.palette`\n\n:   One fact about the term.\n\n"
        "    !!! warning \"Careful\"\n\n        Warning body.\n\n    === \"YAML\"\n\n"
        "        ``` yaml\n        theme:\n          palette: x\n        ```\n\n"
        "    Indented eight is code:\n\n            literal()\n\n:   A second definition.\n"
    )
    blocks = read("x.md", text).sections[-1].blocks
    assert [b.text for b in blocks] == [
        "Lead-in paragraph.",
        "`theme.palette`",
        "One fact about the term.",
        "Careful:\n> Warning body.",
        "YAML:\n```yaml\ntheme:\n  palette: x\n```",
        "Indented eight is code:",  # an indented code block is not text, as at the top level
        "A second definition.",
    ]
    # the term is never the last block of a chunk; a later definition's paragraph is no term
    assert [b.splittable_after for b in blocks[:3]] == [True, False, True]
    assert blocks[-2].splittable_after


def test_real_definition_tab_and_code_reach_a_chunk_and_anchors_are_unchanged():
    """``toc.slugify`` in the Material docs: under ``:   `` a content tab holds the YAML sample."""
    rel = "setup/extensions/python-markdown.md"
    source = (ROOT / rel).read_text(encoding="utf-8")
    assert '    === "Unicode, case-sensitive"\n\n        ``` yaml' in source  # still the shape tested
    page = read(rel)
    hits = [c for c in chunk_page(page) if "Unicode, case-sensitive:\n```yaml" in c.text]
    assert hits  # (a small last block may also open the next chunk)
    for chunk in hits:
        assert "```yaml\nmarkdown_extensions:\n  - toc:\n      slugify: !!python/object/apply:pymdownx.slugs.slugify {}\n```" in chunk.text
        assert chunk.anchor == "table-of-contents" and chunk.url.endswith("/python-markdown/#table-of-contents")
    assert not any(re.search(r"^:\s", c.text, re.M) for c in chunk_page(page))
    # the same sections and anchors as the parser without the definition rule made
    without = build_parser()
    without.disable("definition")
    before = dataclasses.replace(MKDOCS, parser=without).read(
        SourceFile(rel_path=rel, text=source, root=ROOT, base_url=SITE)
    )
    assert [(s.heading_path, s.anchor) for s in page.sections] == [(s.heading_path, s.anchor) for s in before.sections]
    assert anchors(rel)["Table of Contents"] == ["table-of-contents"]


def test_definition_body_snippets_are_read_only_inside_the_docs_root(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "inside.md").write_text("Inside text.\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    text = '# P\n\n`opt`\n\n:   Body.\n\n    --8<-- "inside.md"\n\n    --8<-- "../secret.txt"\n'
    page = read("page.md", text, root=root)
    body = [b.text for s in page.sections for b in s.blocks]
    assert body == ["`opt`", "Body.", "Inside text."]
    assert len(page.notes) == 1 and "outside the corpus" in page.notes[0]


def test_code_annotation_list_stays_in_the_chunk_of_its_code():
    page = read("getting-started.md")
    for chunk in chunk_page(page):
        if 'mkdocs-material=="9.*" # (1)!' in chunk.text:
            assert "semantic versioning" in chunk.text
            break
    else:
        pytest.fail("annotated code block not found")


def test_pymdown_blocks_are_labelled_containers():
    page = read("x.md", "# T\n\n/// note | Read this\n\nInside **block**.\n///\n\nAfter.\n")
    text = "\n".join(b.text for s in page.sections for b in s.blocks)
    assert text.startswith("Read this:\n> Inside block.")
    assert "After." in text and "///" not in text


def test_snippets_inside_the_corpus_are_inlined_and_outside_ones_refused(tmp_path):
    root = tmp_path / "docs"
    (root / "includes").mkdir(parents=True)
    (root / "includes" / "abbr.md").write_text("Shared *snippet* text.\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (root / "includes" / "link.md").symlink_to(tmp_path / "secret.txt")
    (root / "code.py").write_text("print('hi')\n")
    text = (
        '# Page\n\n--8<-- "includes/abbr.md"\n\n--8<-- "../secret.txt"\n\n--8<-- "includes/link.md"\n\n'
        '--8<-- "missing.md"\n\n{* code.py hl[1] *}\n\n;--8<-- "literal.md"\n'
    )
    page = read("page.md", text, root=root)
    body = "\n".join(b.text for s in page.sections for b in s.blocks)
    assert "Shared snippet text." in body
    assert "```python\nprint('hi')\n```" in body
    assert "TOP SECRET" not in body
    assert '--8<-- "literal.md"' in body  # the escaped form is shown literally
    assert len(page.notes) == 3 and all("dropped" in n for n in page.notes)
    assert sum("outside the corpus" in n for n in page.notes) == 2


def test_headings_nested_in_an_admonition_or_a_tab_take_their_ids_first():
    # Python-Markdown 3.11.3 (toc, admonition, pymdownx.tabbed) on this page: page, setup, setup_1, setup_2
    text = '# Page\n\n!!! note "A note"\n    ## Setup\n\n    x\n\n=== "Tab"\n\n    ## Setup\n\n    y\n\n## Setup\n\nAfter.\n'
    assert [s.anchor for s in read("a.md", text).sections[1:]] == ["page", "setup_2"]


def test_a_page_is_titled_as_the_nav_names_it(tmp_path):
    from citedocs.ingest.detect import detect
    from citedocs.ingest.readers import for_site

    (tmp_path / "docs" / "advanced").mkdir(parents=True)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Client\nsite_url: https://client.example.com/\nnav:\n  - Home: index.md\n"
        "  - Advanced:\n    - SSL: advanced/ssl.md\n    - advanced/proxies.md\n  - Source: https://github.com/x/y\n"
    )
    pages = {"index.md": "Welcome.\n", "advanced/ssl.md": "Verify certificates.\n", "advanced/proxies.md": "Use a proxy.\n"}
    for rel, text in pages.items():
        (tmp_path / "docs" / rel).write_text(text)
    found = detect(tmp_path)
    reader = for_site(MKDOCS, found.site)

    def title(rel: str) -> str:
        return reader.read(SourceFile(rel, pages[rel], found.docs_dir, SITE)).title

    assert (title("advanced/ssl.md"), title("index.md")) == ("SSL", "Home")  # not "Ssl", "Index"
    assert title("advanced/proxies.md") == "Proxies"  # in the nav without a title: named after the file
    assert found.site.fingerprint() != dataclasses.replace(found.site, nav_titles=()).fingerprint()  # a nav change re-reads


def test_a_block_or_inline_element_an_attribute_list_hides_is_not_text():
    text = (
        "# Setup\n\nShown paragraph.\n\nSECRET paragraph.\n{ style=\"display:none\" }\n\n"
        "Another SECRET block.\n{: style=\"font-size: 0\" }\n\nHidden by attribute SECRET.\n{: hidden }\n\n"
        "Styled but shown.\n{: .note style=\"color: red\" }\n\n"
        "Text with *SECRET emphasis*{ style=\"visibility:hidden\" } and **shown strong**{ .x } end.\n\n"
        "A [SECRET link](https://evil.example){: style=\"display: none\"} here.\n"
    )
    page = MKDOCS.read(SourceFile("index.md", text, Path("/nonexistent"), "https://docs.example.com/"))
    body = "\n".join(b.text for s in page.sections for b in s.blocks)
    assert "SECRET" not in body and "evil.example" not in body, body
    for shown in ("Shown paragraph.", "Styled but shown.", "shown strong", "end."):
        assert shown in body
    assert sum("attribute list sets" in note for note in page.notes) == 5
