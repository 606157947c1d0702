"""A site's own config decides its anchors and URLs: for MkDocs ``toc``'s slugify and separator,
``use_directory_urls``, README pages and hidden snippet folders; for Sphinx the builder's URL layout. Modelled on real sites (the PyMdown
Extensions docs configure ``pymdownx.slugs.slugify`` and keep snippets in ``.snippets/``); the
expected ids are what Python-Markdown and PyMdown's documented slug functions produce."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app
from conftest import write_docs

from citedocs.ingest.boundary import walk_docs
from citedocs.ingest.detect import DetectionError, detect, plan_ingest
from citedocs.ingest.readers import SiteOptions, SourceFile, for_site
from citedocs.ingest.readers.mkdocs import MKDOCS
from citedocs.ingest.readers.rst import RST
from citedocs.ingest.slugs import pymdownx_slug, python_markdown_slug, toc_slugify

SITE = "https://docs.example.com/"
PYMDOWNX_LOWER = SiteOptions(toc_slugify="pymdownx.slugs.slugify", toc_slugify_options=(("case", "lower"),))


def read(text: str, rel: str = "guide.md", site: SiteOptions = SiteOptions(), root: Path = Path("/nonexistent")):
    return for_site(MKDOCS, site).read(SourceFile(rel_path=rel, text=text, root=root, base_url=SITE))


def anchors(page) -> list[str]:
    return [section.anchor for section in page.sections[1:]]


@pytest.mark.parametrize(
    ("heading", "default", "pymdownx_lower"),
    [
        ("Contributing & Support", "contributing-support", "contributing--support"),
        ("Gone & Deprecated", "gone-deprecated", "gone--deprecated"),
        ("Übersicht der Optionen", "ubersicht-der-optionen", "übersicht-der-optionen"),
        ("`toc.slugify` option", "tocslugify-option", "tocslugify-option"),
    ],
)
def test_configured_slugify_sets_the_anchor(heading, default, pymdownx_lower):
    text = f"# Page\n\n## {heading}\n\nBody.\n"
    assert anchors(read(text)) == ["page", default]
    assert anchors(read(text, site=PYMDOWNX_LOWER)) == ["page", pymdownx_lower]


def test_pymdownx_slug_options_follow_its_documentation():
    assert pymdownx_slug("Foo Bar") == "Foo-Bar"  # case "none" keeps the case
    assert pymdownx_slug("Straße", case="fold") == "strasse"
    assert pymdownx_slug("ÉTÉ Test", case="lower-ascii") == "ÉtÉ-test"
    assert pymdownx_slug("été", case="lower", percent_encode=True) == "%C3%A9t%C3%A9"
    assert pymdownx_slug("a <b>b</b>", case="lower") == "a-b"


def test_python_markdown_separator_and_unicode_variants():
    assert python_markdown_slug("Some  Title - Here", separator="_") == "some_title_-_here"
    assert toc_slugify("markdown.extensions.toc.slugify_unicode", {}, "-")("Übersicht") == "übersicht"
    with pytest.raises(ValueError):
        toc_slugify("my_site.slugs.custom", {}, "-")


def test_repeated_headings_still_get_python_markdown_suffixes_with_a_configured_slugify():
    page = read("# P\n\n## A & B\n\n## A & B\n\nx\n", site=PYMDOWNX_LOWER)
    assert anchors(page) == ["p", "a--b", "a--b_1"]


def test_attribute_list_with_an_escaped_id_is_the_anchor_and_leaves_the_title():
    page = read("# 6.0 Migration Notes {: #\\6.0}\n\n## Overview\n\nText.\n")
    assert page.title == "6.0 Migration Notes"
    assert [(s.heading_path, s.anchor) for s in page.sections[1:]] == [
        (("6.0 Migration Notes",), "6.0"),
        (("6.0 Migration Notes", "Overview"), "overview"),
    ]


def test_readme_is_its_folders_index_and_file_urls_follow_use_directory_urls():
    assert read("# R\n\nx\n", rel="guide/README.md").url == f"{SITE}guide/"
    assert read("# R\n\nx\n", rel="README.md").url == SITE
    flat = SiteOptions(directory_urls=False)
    assert read("# R\n\nx\n", rel="guide/setup.md", site=flat).url == f"{SITE}guide/setup.html"
    assert read("# R\n\nx\n", rel="guide/index.md", site=flat).url == f"{SITE}guide/index.html"


def test_hidden_snippet_folders_are_not_pages(tmp_path):
    (tmp_path / ".snippets").mkdir()
    (tmp_path / ".snippets" / "links.md").write_text("[ref]: https://example.com\n")
    (tmp_path / ".draft.md").write_text("# Draft\n")
    (tmp_path / "index.md").write_text("# Home\n")
    files, _ = walk_docs(tmp_path, (".md",))
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["index.md"]


MKDOCS_YML = """\
site_name: Demo
site_url: https://demo.example.org/
docs_dir: docs/src/markdown
use_directory_urls: false
markdown_extensions:
  - attr_list
  - toc:
      slugify: !!python/object/apply:pymdownx.slugs.slugify {kwds: {case: lower}}
      permalink: ""
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
"""


@pytest.mark.parametrize("config_name", ["mkdocs.yml", "zensical.yml"])
def test_generator_config_settings_reach_the_reader(tmp_path, config_name):
    (tmp_path / config_name).write_text(MKDOCS_YML)
    docs = tmp_path / "docs" / "src" / "markdown"
    docs.mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\n## Tips & Tricks\n\nx\n")
    detection = detect(tmp_path)
    assert (detection.format, detection.docs_dir, detection.base_url) == ("mkdocs", docs, "https://demo.example.org/")
    assert "pymdownx.slugs.slugify" in detection.reason and "use_directory_urls: false" in detection.reason
    plan = plan_ingest(tmp_path, "mkdocs", None, None, SITE)  # a --format flag keeps the config's settings
    assert plan.site == SiteOptions(False, "pymdownx.slugs.slugify", (("case", "lower"),), "-", definition_lists=False)
    page = read((docs / "index.md").read_text(), rel="index.md", site=plan.site)
    assert (page.url, anchors(page)) == (f"{SITE}index.html", ["home", "tips--tricks"])
    assert for_site(MKDOCS, plan.site).version != MKDOCS.version  # a changed setting rebuilds the index


def test_zensical_toml_is_read(tmp_path):
    (tmp_path / "zensical.toml").write_text(
        '[project]\nsite_url = "https://z.example.org/"\n\n'
        '[project.markdown_extensions.toc]\nslugify = {object = "pymdownx.slugs.slugify", kwds = {case = "lower"}}\n'
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    detection = detect(tmp_path)
    assert (detection.format, detection.base_url, detection.site.toc_slugify) == (
        "mkdocs", "https://z.example.org/", "pymdownx.slugs.slugify"
    )


DEFINITION_PAGE = "# Options\n\n`palette`\n:   Sets the colours.\n"


@pytest.mark.parametrize(
    ("config_name", "config", "definition_lists"),
    [
        ("mkdocs.yml", "site_url: https://d.example.org/\nmarkdown_extensions:\n  - attr_list\n", False),
        ("mkdocs.yml", "site_url: https://d.example.org/\n", False),  # MkDocs' own extensions have no def_list
        ("mkdocs.yml", "site_url: https://d.example.org/\nmarkdown_extensions:\n  - def_list\n", True),
        ("mkdocs.yml", "site_url: https://d.example.org/\nmarkdown_extensions:\n  - pymdownx.extra:\n      x: 1\n", True),
        ("zensical.toml", '[project]\nsite_url = "https://d.example.org/"\n', True),  # Zensical's default set
        ("zensical.toml", '[project]\nsite_url = "https://d.example.org/"\n[project.markdown_extensions.abbr]\n', False),
    ],
)
def test_definition_lists_are_read_only_where_the_config_enables_them(tmp_path, config_name, config, definition_lists):
    (tmp_path / config_name).write_text(config)
    (tmp_path / "docs").mkdir()
    detection = detect(tmp_path)
    assert detection.site.definition_lists is definition_lists
    assert ("def_list not enabled" in detection.reason) is not definition_lists
    blocks = [b.text for b in read(DEFINITION_PAGE, site=detection.site).sections[-1].blocks]
    # without def_list Python-Markdown shows the marker line as part of the paragraph, as the site does
    assert blocks == (["`palette`", "Sets the colours."] if definition_lists else ["`palette` :   Sets the colours."])
    assert (for_site(MKDOCS, detection.site).version == MKDOCS.version) is (detection.site == SiteOptions())


def test_unknown_slugify_falls_back_to_the_default_and_says_so(tmp_path):
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: X\nmarkdown_extensions:\n  - toc:\n      slugify: !!python/name:my_site.slugs.custom\n"
    )
    (tmp_path / "docs").mkdir()
    detection = detect(tmp_path)
    assert detection.site == SiteOptions(definition_lists=False)
    assert "my_site.slugs.custom is not known" in detection.reason


@pytest.mark.parametrize("layout", ["doc", "docs/source", "doc/source"])
def test_sphinx_quickstart_layouts_are_recognised(tmp_path, layout):
    (tmp_path / layout).mkdir(parents=True)
    (tmp_path / layout / "conf.py").write_text("project = 'x'\nhtml_baseurl = 'https://x.example.org/'\n")
    (tmp_path / layout / "index.rst").write_text("Title\n=====\n")
    detection = detect(tmp_path)
    assert (detection.format, detection.docs_dir, detection.base_url) == ("rst", tmp_path / layout, "https://x.example.org/")


def test_inline_hilite_language_prefix_is_not_text():
    page = read("# T\n\nUse `#!python print(1)` or `#!css .a {}`; `#!` alone and `x #!y` stay.\n")
    assert page.sections[1].blocks[0].text == "Use `print(1)` or `.a {}`; `#!` alone and `x #!y` stay."


@pytest.mark.parametrize(
    ("readthedocs", "page_url"),
    [
        (None, "https://x.example.org/guide/setup/"),  # no builder named: dirhtml, as before
        ("version: 2\nsphinx:\n  configuration: docs/conf.py\n  builder: dirhtml\n", "https://x.example.org/guide/setup/"),
        ("version: 2\nsphinx:\n  configuration: docs/conf.py\n", "https://x.example.org/guide/setup.html"),
        ("version: 2\nsphinx:\n  builder: html\n", "https://x.example.org/guide/setup.html"),
    ],
)
def test_sphinx_page_urls_follow_the_builder_read_the_docs_is_told(tmp_path, readthedocs, page_url):
    write_docs(tmp_path, {"docs/conf.py": "project = 'x'\n", "docs/guide/setup.rst": "Setup\n=====\n\nText.\n"})
    if readthedocs:
        (tmp_path / ".readthedocs.yaml").write_text(readthedocs)
    plan = plan_ingest(tmp_path, None, "https://x.example.org/", None, SITE)
    source = SourceFile("guide/setup.rst", "Setup\n=====\n\nText.\n", plan.docs_dir, plan.base_url)
    assert for_site(RST, plan.site).read(source).url == page_url


def test_page_urls_flag_wins_is_remembered_and_refused_where_it_means_nothing(tmp_path):
    write_docs(tmp_path, {"conf.py": "project = 'x'\n", "index.rst": "Title\n=====\n"})
    flagged = plan_ingest(tmp_path, None, None, None, SITE, page_urls="html")
    assert not flagged.site.directory_urls and "html page URLs from --page-urls" in flagged.describe()
    pipeline = f"rst-{for_site(RST, flagged.site).version}+chunker-6"
    later = plan_ingest(tmp_path, None, None, (pipeline, SITE), SITE)
    assert not later.site.directory_urls and "page URL layout remembered" in later.describe()
    assert plan_ingest(tmp_path, None, None, ("rst-3+chunker-6", SITE), SITE).site.directory_urls
    with pytest.raises(DetectionError, match="dir .page/. or html"):
        plan_ingest(tmp_path, None, None, None, SITE, page_urls="flat")
    with pytest.raises(DetectionError, match="applies to Sphinx"):
        plan_ingest(tmp_path, "mdx", None, None, SITE, page_urls="html")


def test_cli_page_urls_flag_sets_citation_urls_and_a_later_ingest_keeps_them(tmp_home, tmp_path):
    docs = write_docs(tmp_path / "d", {
        "conf.py": "project = 'x'\n",
        "guide.rst": "Guide\n=====\n\nInstall\n-------\n\nRun the installer with the quiet flag set.\n",
    })
    runner = CliRunner()
    args = ["ingest", str(docs), "--corpus", "sx", "--base-url", "https://x.example.org/"]
    first = runner.invoke(app, [*args, "--page-urls", "html"], env={"COLUMNS": "300"})
    assert first.exit_code == 0, first.output
    (docs / "guide.rst").write_text("Guide\n=====\n\nInstall\n-------\n\nRun the installer with the silent flag.\n")
    second = runner.invoke(app, ["ingest", str(docs), "--corpus", "sx"], env={"COLUMNS": "300"})
    assert second.exit_code == 0, second.output
    assert "page URL layout remembered" in " ".join(second.output.split())
    from citedocs.service import Services

    store = Services.open().store
    chunks = store.get_chunks("sx", list(store.chunk_hashes("sx")))
    assert {chunk.url for chunk in chunks} == {"https://x.example.org/guide.html#install"}


def test_a_sphinx_site_in_myst_markdown_is_detected_and_its_md_pages_are_read(tmp_path):
    from citedocs.ingest.pipeline import find_documents

    write_docs(tmp_path, {"conf.py": "extensions = ['myst_parser']\n", "index.md": "# Home\n\n```{note}\nHi\n```\n"})
    plan = plan_ingest(tmp_path, None, None, None, SITE)
    assert plan.format == "rst" and "MyST Markdown (.md) via myst_parser" in plan.describe()
    reader = for_site(RST, plan.site)
    assert [p.name for p in find_documents(tmp_path, reader)] == ["index.md"]
    page = reader.read(SourceFile("index.md", (tmp_path / "index.md").read_text(), tmp_path, SITE))
    assert [(s.anchor, [b.text for b in s.blocks]) for s in page.sections[1:]] == [("home", ["Note:\n> Hi"])]


def test_mkdocstrings_lines_are_noted_not_indexed_and_code_samples_of_them_stay():
    text = (
        "# API\n\nThe request class.\n\n::: starlette.requests.Request\n    options:\n      show_source: false\n\n"
        "## Usage\n\nCall it.\n\n```text\n::: not.api\n```\n"
    )
    page = read(text, rel="api.md")
    assert [(s.anchor, [b.text for b in s.blocks]) for s in page.sections[1:]] == [
        ("api", ["The request class."]),
        ("usage", ["Call it.", "```text\n::: not.api\n```"]),
    ]
    assert page.notes == ("mkdocstrings `::: starlette.requests.Request` renders API text from code outside the docs; not indexed",)


def test_pages_of_another_generator_without_a_base_url_are_refused_not_linked_to_the_astro_site(tmp_home, tmp_path):
    """The default base URL is the bundled Astro docs' site: a Sphinx project whose conf.py names no
    ``html_baseurl`` would have every citation link there, so the ingest asks for --base-url instead."""
    docs = write_docs(tmp_path / "d", {"conf.py": "project = 'x'\n", "guide.rst": "Guide\n=====\n\nRun the installer.\n"})
    result = CliRunner().invoke(app, ["ingest", str(docs), "--corpus", "sx"], env={"COLUMNS": "300"})
    message = " ".join(result.output.split())
    assert result.exit_code != 0 and "pass --base-url" in message and "Nothing was changed" in message
    from citedocs.service import Services

    assert Services.open().store.get_corpus("sx") is None
    with_base = CliRunner().invoke(app, ["ingest", str(docs), "--corpus", "sx", "--base-url", "https://x.example.org/"])
    assert with_base.exit_code == 0, with_base.output


def test_an_mdx_site_whose_config_names_no_url_is_refused_too_but_a_bare_mdx_folder_gets_the_default(tmp_home, tmp_path):
    page = {"docs/intro.md": "---\ntitle: Intro\n---\n\n## Install\n\nRun the installer with the quiet flag set.\n"}
    site = write_docs(tmp_path / "site", {**page, "docusaurus.config.js": "module.exports = { title: 'x' };\n"})
    refused = CliRunner().invoke(app, ["ingest", str(site), "--corpus", "ds"], env={"COLUMNS": "300"})
    assert refused.exit_code != 0 and "docusaurus.config.js" in refused.output and "pass --base-url" in refused.output
    bare = write_docs(tmp_path / "bare", {"intro.mdx": page["docs/intro.md"]})
    accepted = CliRunner().invoke(app, ["ingest", str(bare), "--corpus", "bare"], env={"COLUMNS": "300"})
    assert accepted.exit_code == 0 and "using the default https://docs.astro.build/en/" in " ".join(accepted.output.split())
