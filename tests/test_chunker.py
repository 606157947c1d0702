"""What the chunker promises, checked on the real Astro pages (and a few tiny inline pages).

Every chunk must be readable on its own and point at the exact section the docs site publishes:
code stays code, notes keep their label, anchors are the site's slugs, nothing is cut inside a
fence or a component, and ids are stable and unique.
"""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from citedocs.ingest.budget import embedder_budget
from citedocs.ingest.chunker import ParsedDocument, chunk_document
from citedocs.ingest.document import DocumentError
from citedocs.ingest.readers.mdx import build_parser

from conftest import ASTRO_BASE_URL, ASTRO_DOCS

BASE = ASTRO_BASE_URL


def parse(rel: str) -> ParsedDocument:
    return chunk_document(rel, (ASTRO_DOCS / rel).read_text(encoding="utf-8"), BASE)


def chunks_by_anchor(doc: ParsedDocument, anchor: str) -> list:
    found = [c for c in doc.chunks if c.anchor == anchor]
    assert found, f"{doc.doc_path}: no chunk for #{anchor}; anchors: {sorted({c.anchor for c in doc.chunks})}"
    return found


def section_text(doc: ParsedDocument, anchor: str) -> str:
    return "\n\n".join(c.text for c in chunks_by_anchor(doc, anchor))


@pytest.fixture(scope="module")
def corpus() -> dict[str, ParsedDocument]:
    """Every page of the Astro corpus, chunked (a couple of seconds, no model needed)."""
    docs = {}
    for path in sorted(ASTRO_DOCS.rglob("*.mdx")):
        rel = path.relative_to(ASTRO_DOCS).as_posix()
        docs[rel] = chunk_document(rel, path.read_text(encoding="utf-8"), BASE)
    assert len(docs) == 420
    return docs


_FENCE_LINE = re.compile(r"^(?:\s*>)*\s*(`{3,}|~{3,})(.*)$")


def unclosed_fence(text: str) -> str | None:
    """CommonMark fence matching over a chunk's text: the fence still open at its end, if any."""
    open_marker: str | None = None
    for line in text.splitlines():
        match = _FENCE_LINE.match(line)
        if not match:
            continue
        marker, rest = match.groups()
        if open_marker is None:
            if marker[0] == "`" and "`" in rest:
                continue  # backticks in the info string: not a fence opener
            open_marker = marker
        elif marker[0] == open_marker[0] and len(marker) >= len(open_marker) and not rest.strip():
            open_marker = None
    return open_marker


def code_blocks(text: str) -> list[str]:
    """The code blocks a Markdown renderer would show for this chunk text."""
    tokens = MarkdownIt("commonmark").parse(text)
    return [t.content for t in tokens if t.type in ("fence", "code_block")]


# --- code stays code ------------------------------------------------------------------------------


def test_fenced_astro_code_with_layout_tags_stays_intact_as_code():
    # basics/layouts.mdx, "Nesting Layouts": an ```astro fence whose body has `import BaseLayout`
    # at column 0 and <BaseLayout ...> / </BaseLayout> lines that look like MDX components.
    doc = parse("basics/layouts.mdx")
    text = section_text(doc, "nesting-layouts")
    expected = (
        "```astro\n"
        "---\n"
        "// src/layouts/BlogPostLayout.astro\n"
        "import BaseLayout from './BaseLayout.astro';\n"
        "const { frontmatter } = Astro.props;\n"
        "---\n"
        "<BaseLayout url={frontmatter.url}>\n"
        "  <h1>{frontmatter.title}</h1>\n"
        "  <h2>Post author: {frontmatter.author}</h2>\n"
        "  <slot />\n"
        "</BaseLayout>\n"
        "```"
    )
    assert expected in text
    assert any("<BaseLayout url={frontmatter.url}>" in block for block in code_blocks(text))


def test_mdx_code_sample_with_frontmatter_imports_and_components_stays_code():
    doc = parse("basics/layouts.mdx")
    blocks = code_blocks(section_text(doc, "importing-layouts-manually-mdx"))
    mdx = next(b for b in blocks if "<BaseLayout title={frontmatter.title}" in b)
    assert mdx.startswith("---\nlayout: ../../layouts/BaseLayout.astro\n")
    assert "import BaseLayout from '../../layouts/BaseLayout.astro';" in mdx
    assert "export function fancyJsHelper() {" in mdx
    assert mdx.rstrip().endswith("</BaseLayout>")


def test_code_sample_showing_a_nested_fence_stays_one_code_block():
    # guides/syntax-highlighting.mdx wraps a ```js example in a ``````markdown fence.
    doc = parse("guides/syntax-highlighting.mdx")
    blocks = code_blocks(section_text(doc, "markdown-code-blocks"))
    nested = [b for b in blocks if "// JavaScript code with syntax highlighting." in b]
    assert len(nested) == 1
    assert nested[0].startswith("```js\n") and nested[0].rstrip().endswith("```")


def test_every_chunk_of_the_corpus_has_balanced_fences(corpus):
    unbalanced = [c.id for doc in corpus.values() for c in doc.chunks if unclosed_fence(c.text)]
    assert unbalanced == []


def test_code_blocks_are_cut_only_when_too_long_to_embed_and_then_between_lines(corpus):
    """A fence the embedder can read whole stays in one chunk; a longer one is split at line
    boundaries, every line kept, in order, each piece its own balanced fence."""
    budget = embedder_budget()
    parser = build_parser()
    cut, lost = [], []
    for rel, doc in corpus.items():
        tokens = parser.parse((ASTRO_DOCS / rel).read_text(encoding="utf-8"))
        for token in tokens:
            if token.type == "fence" and token.content.strip():
                body = token.content.rstrip("\n")
                if any(body in c.text for c in doc.chunks):
                    continue
                if budget.pieces(body) < budget.max_pieces // 2:
                    cut.append(f"{rel}:{token.map[0] + 1}")
                else:
                    text = "\n".join(c.text for c in doc.chunks)
                    # every line kept (a single line too long to embed is itself cut, so skip those)
                    positions = [text.find(line) for line in body.splitlines() if 0 < budget.pieces(line) < 200]
                    if -1 in positions:
                        lost.append(f"{rel}:{token.map[0] + 1}")
    assert cut == [] and lost == []


def test_every_chunk_fits_the_embedder_with_its_heading_path(corpus):
    """No chunk is embedded truncated: title, heading path and text within the model's word pieces."""
    budget = embedder_budget()
    over = [c.id for doc in corpus.values() for c in doc.chunks if budget.count(c.embedding_text()) > budget.max_pieces]
    assert over == []


def test_a_long_code_sample_is_split_between_lines_with_its_heading_path_repeated():
    lines = "\n".join(f"const value{n} = computeSomething({n}, 'argument number {n}');" for n in range(200))
    source = f"---\ntitle: Long\n---\n\n## Sample code\n\n```js\n{lines}\n```\n"
    doc = chunk_document("long.mdx", source, BASE)
    assert len(doc.chunks) > 3
    assert all(c.heading_path == ("Sample code",) and c.text.startswith("```js\n") for c in doc.chunks)
    assert all(c.text.endswith("\n```") and not unclosed_fence(c.text) for c in doc.chunks)
    rebuilt = [line for c in doc.chunks for line in c.text.splitlines()[1:-1]]
    assert rebuilt == lines.splitlines()


def test_a_long_paragraph_is_split_at_sentences_and_a_giant_line_hard():
    sentence = "Astro renders every page to static HTML at build time by default. "
    doc = chunk_document("p.md", f"# P\n\n{sentence * 60}\n\n{'x' * 5000}\n", BASE)
    budget = embedder_budget()
    assert all(budget.count(c.embedding_text()) <= budget.max_pieces for c in doc.chunks)
    prose = [c.text for c in doc.chunks if "Astro" in c.text]
    assert len(prose) > 1 and all(re.sub(r"\s*x+$", "", t).endswith("default.") for t in prose)
    assert sum(c.text.count("x") for c in doc.chunks) == 5000


# --- components -----------------------------------------------------------------------------------


def test_package_manager_tabs_keep_every_command_as_code_in_one_chunk(corpus):
    doc = corpus["recipes/add-yaml-support.mdx"]
    chunk = next(c for c in doc.chunks if "npm install @rollup/plugin-yaml --save-dev" in c.text)
    blocks = code_blocks(chunk.text)
    for command in (
        "npm install @rollup/plugin-yaml --save-dev",
        "pnpm add @rollup/plugin-yaml --save-dev",
        "yarn add @rollup/plugin-yaml --dev",
    ):
        assert f"{command}\n" in blocks, command
    assert "<PackageManagerTabs>" not in chunk.text and "<Fragment" not in chunk.text
    assert 'slot="npm"' not in chunk.text


_TABS = re.compile(r"<PackageManagerTabs>(.*?)</PackageManagerTabs>", re.S)
_FENCE_BODY = re.compile(r"^\s*```[^\n]*\n(.*?)^\s*```", re.S | re.M)


def test_no_package_manager_tabs_component_that_fits_the_embedder_is_split(corpus):
    split = []
    seen = 0
    for rel, doc in corpus.items():
        source = (ASTRO_DOCS / rel).read_text(encoding="utf-8")
        for tabs in _TABS.finditer(source):
            if "<MarkdownProcessorTabs>" in source[: tabs.start()].rsplit("</MarkdownProcessorTabs>", 1)[-1]:
                continue  # nested in a larger tab set inside an oversized list step: split like its step
            commands = [
                line.strip() for body in _FENCE_BODY.findall(tabs.group(1)) for line in body.splitlines() if line.strip()
            ]
            if not commands or embedder_budget().pieces("\n".join(commands)) > embedder_budget().max_pieces // 2:
                continue  # too long to embed in one chunk: split like any long code
            seen += 1
            if not any(all(cmd in c.text for cmd in commands) for c in doc.chunks):
                split.append(f"{rel}: {commands[0]}")
    assert seen > 80  # ~97 pages use <PackageManagerTabs>
    assert split == []


# --- notes ----------------------------------------------------------------------------------------


def test_tip_container_survives_as_a_labelled_note():
    doc = parse("guides/images.mdx")
    text = section_text(doc, "image-")  # the :::tip under ### `<Image />`
    assert "Tip:\n> You can also use the `<Image />` component for images in the `public/` folder" in text


def test_deprecated_caution_is_labelled_with_its_title():
    doc = parse("reference/configuration-reference.mdx")
    text = section_text(doc, "sessionoptions")
    assert (
        "Deprecated:\n> This is deprecated and will be removed in a future major version. "
        "Instead, pass options to the driver function." in text
    )
    assert ":::" not in text


def test_note_nested_in_a_list_step_keeps_its_label_and_its_code(corpus):
    text = "\n".join(c.text for c in corpus["recipes/add-yaml-support.mdx"].chunks)
    assert "Note:" in text
    assert "While you can now import YAML data in your Astro project" in text
    assert 'declare module "*.yml" {' in text


def test_since_component_keeps_the_version_it_names():
    doc = parse("reference/configuration-reference.mdx")
    assert "(added in v5.7.0)" in section_text(doc, "sessionoptions")


# --- anchors, ids, titles, urls -------------------------------------------------------------------


def test_anchors_match_the_sites_slugs():
    env = parse("guides/environment-variables.mdx")
    anchors = {c.anchor for c in env.chunks}
    assert {"default-environment-variables", "env-files", "vites-built-in-support"} <= anchors
    cli = parse("reference/cli-reference.mdx")
    anchors = {c.anchor for c in cli.chunks}
    # #### `--minimumFailingSeverity <error|warning|hint>` and ### `--host [optional host address]`
    assert {"--minimumfailingseverity-errorwarninghint", "--host-optional-host-address", "astro-dev"} <= anchors
    assert "--root-path-to-dir" in anchors  # #### `--root <path-to-dir>`
    assert "--follow--f" in anchors  # ##### `--follow` (`-f`)


def test_component_heading_in_backticks_slugs_like_the_site():
    images = parse("guides/images.mdx")
    anchors = {c.anchor for c in images.chunks}
    assert "image-" in anchors  # ### `<Image />`
    assert "picture-" in anchors  # ### `<Picture />`
    assert "choosing-image--vs-img" in anchors  # ### Choosing `<Image />` vs `<img>`
    image = chunks_by_anchor(images, "image-")[0]
    assert image.heading_path[-1] == "<Image />"
    assert image.url == f"{BASE}guides/images/#image-"


def test_repeated_headings_get_numbered_suffixes():
    images = parse("guides/images.mdx")
    anchors = [c.anchor for c in images.chunks]
    assert {"remote-images", "remote-images-1", "remote-images-2"} <= set(anchors)
    source = (ASTRO_DOCS / "guides/images.mdx").read_text(encoding="utf-8")
    assert len(re.findall(r"^#+ Remote images\s*$", source, re.M | re.I)) == 3


def test_repeated_headings_in_an_inline_page_follow_github_slugger():
    source = "# Intro\n\nHello.\n\n## Usage\n\na\n\n## Usage\n\nb\n\n## Usage\n\nc\n"
    doc = chunk_document("x.md", source, BASE)
    assert [c.anchor for c in doc.chunks] == ["intro", "usage", "usage-1", "usage-2"]


def test_heading_id_syntax_is_heading_text_as_astro_builds_it():
    # Astro has no {#id} syntax: Markdown keeps it as text (the Starlight build's `#setup-custom-id`,
    # tests/data/starlight-build), MDX refuses to compile the page
    source = "---\ntitle: Setup guide\n---\n\n## Install the CLI {#install}\n\nRun it.\n\n## Configure\n\nEdit it.\n"
    doc = chunk_document("setup.md", source, BASE)
    install = chunks_by_anchor(doc, "install-the-cli-install")[0]
    assert install.heading_path == ("Install the CLI {#install}",)
    assert install.url == f"{BASE}setup/#install-the-cli-install"
    assert "configure" in {c.anchor for c in doc.chunks}


def test_sections_carry_their_heading_path_and_anchor_path():
    env = parse("guides/environment-variables.mdx")
    chunk = chunks_by_anchor(env, "define-your-schema")[0]
    assert chunk.heading_path == ("Type safe environment variables", "Basic Usage", "Define your schema")
    assert chunk.anchor_path == ("type-safe-environment-variables", "basic-usage", "define-your-schema")


def test_chunk_ids_have_the_page_anchor_n_form_and_are_unique_over_the_corpus(corpus):
    id_form = re.compile(r"^[a-z0-9][\w./-]*#[^\s#/]*/[1-9]\d*$")
    ids = [c.id for doc in corpus.values() for c in doc.chunks]
    assert len(ids) > 3000
    assert [i for i in ids if not id_form.match(i)] == []
    assert len(ids) == len(set(ids))
    for doc in corpus.values():
        for c in doc.chunks:
            page, _, rest = c.id.partition("#")
            assert rest.rsplit("/", 1)[0] == c.anchor
            assert c.doc_path == doc.doc_path and doc.doc_path.startswith(page)


def test_section_chunks_are_numbered_from_one_in_order():
    cfg = parse("reference/configuration-reference.mdx")
    by_anchor: dict[str, list[int]] = {}
    for c in cfg.chunks:
        by_anchor.setdefault(c.anchor, []).append(int(c.id.rsplit("/", 1)[1]))
    assert all(ns == list(range(1, len(ns) + 1)) for ns in by_anchor.values())
    assert any(len(ns) > 1 for ns in by_anchor.values())  # some sections are long enough to split


def test_frontmatter_title_and_description_are_used():
    doc = parse("basics/layouts.mdx")
    assert doc.page.title == "Layouts"
    assert {c.title for c in doc.chunks} == {"Layouts"}
    first = doc.chunks[0]
    assert first.id == "basics/layouts#/1" and first.anchor == ""
    assert first.text.startswith("An introduction to layouts in Astro.")
    assert first.embedding_text().startswith("Layouts\n")


def test_page_without_frontmatter_title_is_named_after_its_file():
    doc = chunk_document("guides/my-page.md", "Some text.\n", BASE)
    assert doc.page.title == "My page"
    assert doc.chunks[0].url == f"{BASE}guides/my-page/"


def test_import_and_export_lines_are_dropped(corpus):
    rss = "\n".join(c.text for c in corpus["recipes/rss.mdx"].chunks)
    assert "import PackageManagerTabs" not in rss and "import { Steps }" not in rss
    assert "import rss from '@astrojs/rss';" in rss  # ...but imports inside code samples are kept
    leaked = [c.id for doc in corpus.values() for c in doc.chunks if "from '~/components/" in c.text]
    assert leaked == []


def test_comment_expressions_are_dropped():
    source = "---\ntitle: T\n---\n\n{/* a translator's note */}\n\nVisible text.\n"
    doc = chunk_document("t.mdx", source, BASE)
    assert doc.chunks[0].text == "Visible text."


def test_index_page_maps_to_its_folder_url(corpus):
    deploy = corpus["guides/deploy/index.mdx"]
    assert deploy.chunks[0].id.startswith("guides/deploy#")
    assert deploy.chunks[0].url == f"{BASE}guides/deploy/"
    assert chunk_document("index.mdx", "---\ntitle: Home\n---\nHi.\n", BASE).chunks[0].url == BASE


def test_every_chunk_url_is_a_docs_site_url_with_its_anchor(corpus):
    for doc in corpus.values():
        for c in doc.chunks:
            assert c.url.startswith("https://docs.astro.build/en/"), c.id
            if c.anchor:
                assert c.url.endswith(f"/#{c.anchor}"), c.id
            else:
                assert c.url.endswith("/") and "#" not in c.url, c.id


def test_chunking_is_deterministic():
    source = (ASTRO_DOCS / "guides/environment-variables.mdx").read_text(encoding="utf-8")
    first = chunk_document("guides/environment-variables.mdx", source, BASE)
    second = chunk_document("guides/environment-variables.mdx", source, BASE)
    assert [(c.id, c.hash) for c in first.chunks] == [(c.id, c.hash) for c in second.chunks]


def test_chunks_are_never_empty(corpus):
    assert all(c.text.strip() for doc in corpus.values() for c in doc.chunks)


# --- bad pages ------------------------------------------------------------------------------------


def test_broken_yaml_frontmatter_is_a_document_error_naming_the_problem():
    with pytest.raises(DocumentError, match="broken YAML frontmatter"):
        chunk_document("bad.mdx", "---\ntitle: [unclosed\n---\n\nText.\n", BASE)


def test_non_mapping_frontmatter_is_a_document_error():
    with pytest.raises(DocumentError, match="not a key: value mapping"):
        chunk_document("bad.mdx", "---\n- a\n- b\n---\n\nText.\n", BASE)
