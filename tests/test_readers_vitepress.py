"""The VitePress reader on the real VitePress docs: anchors as vitepress.dev makes them, Vue and
container syntax understood rather than leaked into the text. Parsing only (no model)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers.vitepress import VITEPRESS

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "evals/corpora/vitepress-docs/docs"
SITE = "https://vitepress.dev/"



def read(rel: str, text: str | None = None, root: Path = ROOT):
    source = text if text is not None else (root / rel).read_text(encoding="utf-8")
    return VITEPRESS.read(SourceFile(rel_path=rel, text=source, root=root, base_url=SITE))


def anchors(rel: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for section in read(rel).sections[1:]:
        found.setdefault(section.heading_path[-1], []).append(section.anchor)
    return found


@pytest.mark.parametrize(
    ("rel", "heading", "expected"),
    [
        # quotes and apostrophes become hyphens (not GitHub's rule)
        ("reference/default-theme-nav.md", 'Customize link\'s "active" state', ["customize-link-s-active-state"]),
        # badges are not heading text; code keeps its content, punctuation around it trimmed
        ("reference/runtime-api.md", "useData", ["usedata"]),
        ("reference/runtime-api.md", "$frontmatter", ["frontmatter"]),
        ("reference/runtime-api.md", "<Content />", ["content"]),
        ("reference/site-config.md", 'Example: Adding a <meta name="og:title">', ["example-adding-a-meta-name-og-title"]),
        ("guide/routing.md", "Type-safe loader with defineRoutes", ["type-safe-loader-with-defineroutes"]),
        # repeated headings get -1, -2, ...
        ("reference/default-theme-badge.md", "Title", ["title", "title-1", "title-2", "title-3"]),
        ("reference/default-theme-badge.md", "<Badge>", ["badge-1"]),
        ("reference/default-theme-config.md", "i18nRouting", ["i18nrouting"]),
        # an emoji shortcode is an emoji, not text VitePress slugs (checked against its build)
        ("guide/markdown.md", "Emoji :tada:", ["emoji"]),
    ],
)
def test_heading_anchors_match_the_live_site(rel, heading, expected):
    assert anchors(rel)[heading] == expected


def test_explicit_id_wins_and_a_leading_digit_gets_an_underscore():
    page = read("x.md", "# Doc\n\n## Custom Anchor {#my-anchor}\n\n## 2024 plans\n\ntext\n")
    assert [s.anchor for s in page.sections[1:]] == ["doc", "my-anchor", "_2024-plans"]
    assert page.sections[2].heading_path[-1] == "Custom Anchor"


def test_clean_urls():
    assert read("guide/getting-started.md").url == SITE + "guide/getting-started"
    assert read("index.md").url == SITE
    assert VITEPRESS.page_url(SITE, "guide/index.md") == SITE + "guide/"


def test_every_dev_set_anchor_exists_in_the_corpus():
    for line in (REPO / "evals/vitepress-dev.jsonl").read_text().splitlines():
        for source in json.loads(line)["expected_sources"]:
            rel, _, anchor = source.partition("#")
            assert anchor in {s.anchor for s in read(rel).sections}, source


def test_no_container_marker_vue_script_or_interpolation_leaks_into_text():
    for path in sorted(ROOT.rglob("*.md")):
        page = read(path.relative_to(ROOT).as_posix())
        for section in page.sections:
            for block in section.blocks:
                prose = re.sub(r"(`{3,}).*?\1", "", block.text, flags=re.S)
                prose = re.sub(r"`[^`\n]*`", "", prose)
                assert not re.search(r"^\s*:::|\{\{|\[\[toc\]\]|<script|<style|^\s*<<<", prose, re.M), (
                    page.doc_path,
                    prose[:300],
                )


def test_containers_are_labelled_notes_and_nest():
    text = "# T\n\n:::: warning Careful\nOuter.\n\n::: details Click me\nInner **text**.\n:::\n::::\n"
    body = read("x.md", text).sections[1].blocks[0].text
    assert body.splitlines()[0] == "Careful:"
    assert "Click me:" in body and "Inner text." in body and ":::" not in body


def test_home_page_text_comes_from_frontmatter():
    page = read("index.md")
    text = "\n".join(b.text for b in page.sections[0].blocks)
    assert "Vite & Vue Powered Static Site Generator" in text
    assert "Focus on your content" in text


def test_code_imports_read_inside_the_root_only(tmp_path):
    root = tmp_path / "docs"
    (root / "snippets").mkdir(parents=True)
    (root / "snippets" / "demo.js").write_text("// #region part\nconst a = 1\n// #endregion part\nconst b = 2\n")
    (tmp_path / "secret.js").write_text("const secret = 'TOP'\n")
    text = "# T\n\n<<< @/snippets/demo.js#part{1}\n\n<<< @/../secret.js\n\n<<< ./missing.js\n"
    page = read("page.md", text, root=root)
    body = "\n".join(b.text for s in page.sections for b in s.blocks)
    assert "```js\nconst a = 1\n```" in body
    assert "TOP" not in body and "const b" not in body
    assert len(page.notes) == 2 and "outside the corpus" in page.notes[0]


def test_raw_html_whose_v_if_or_v_show_is_false_is_not_text():
    text = (
        '# T\n\nShown.\n\n<div v-if="false">\n\nSECRET never rendered.\n\n</div>\n\n'
        '<p v-show="false">SECRET never shown.</p>\n\n<div v-if="isDark">\n\nShown when dark.\n\n</div>\n\nAfter.\n'
    )
    page = VITEPRESS.read(SourceFile("index.md", text, Path("/nonexistent"), "https://docs.example.com/"))
    body = "\n".join(b.text for s in page.sections for b in s.blocks)
    assert "SECRET" not in body and "Shown when dark." in body and "After." in body, body
    assert dict(page.hidden) == {"v-if=false": 1, "v-show=false": 1}
