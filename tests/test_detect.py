"""`citedocs ingest PATH` recognises the site generator, says why, and is told apart by flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app
from citedocs.index import open_store
from citedocs.ingest.detect import DetectionError, detect, plan_ingest
from conftest import write_docs

CORPORA = Path(__file__).resolve().parents[1] / "evals/corpora"
DEFAULT = "https://docs.astro.build/en/"


def cli_output(result) -> str:
    return " ".join((result.output + (result.stderr if result.stderr_bytes is not None else "")).split())


@pytest.mark.parametrize(
    ("folder", "fmt", "docs", "base_url"),
    [
        # mkdocs.yml with !!python/name tags; read from the project or from its docs folder
        ("mkdocs-material-docs", "mkdocs", "mkdocs-material-docs/docs", "https://squidfunk.github.io/mkdocs-material/"),
        ("mkdocs-material-docs/docs", "mkdocs", "mkdocs-material-docs/docs", "https://squidfunk.github.io/mkdocs-material/"),
        ("vitepress-docs/docs", "vitepress", "vitepress-docs/docs", None),  # no config: its ::: containers
        ("astro-docs/docs", "mdx", "astro-docs/docs", None),
        ("flask-docs", "rst", "flask-docs/docs", None),  # Sphinx conf.py
    ],
)
def test_shared_corpora_are_recognised(folder, fmt, docs, base_url):
    found = detect(CORPORA / folder)
    assert (found.format, found.docs_dir.resolve(), found.base_url) == (fmt, (CORPORA / docs).resolve(), base_url)
    assert found.reason


def test_generator_configs_name_format_docs_folder_and_base_url(tmp_path):
    write_docs(tmp_path / "vp", {"docs/.vitepress/config.mts": "export default { sitemap: { hostname: 'https://x.dev/' } }",
                                 "docs/index.md": "# Hi\n"})
    found = detect(tmp_path / "vp")
    assert (found.format, found.docs_dir.name, found.base_url) == ("vitepress", "docs", "https://x.dev/")
    write_docs(tmp_path / "ds", {"docusaurus.config.js": "module.exports = { url: 'https://d.io', baseUrl: '/docs/' }",
                                 "docs/intro.mdx": "# Intro\n"})
    found = detect(tmp_path / "ds")
    assert (found.format, found.docs_dir.name, found.base_url) == ("mdx", "docs", "https://d.io/docs/")
    write_docs(tmp_path / "site", {f"p{n}.html": "<html></html>" for n in range(5)})
    assert detect(tmp_path / "site").format == "html"


def test_a_folder_with_two_generators_is_an_error_naming_the_flags(tmp_path):
    write_docs(tmp_path, {"mkdocs.yml": "site_url: https://a.io/\n", "docs/conf.py": "project = 'x'\n", "docs/a.md": "# A\n"})
    with pytest.raises(DetectionError, match="--format .*--base-url"):
        detect(tmp_path)


def test_a_folder_with_mixed_sources_is_an_error_naming_the_flags(tmp_path):
    write_docs(tmp_path, {**{f"a{n}.md": "# A\n" for n in range(5)}, **{f"b{n}.rst": "B\n=\n" for n in range(5)}})
    with pytest.raises(DetectionError, match="several docs formats.*--format"):
        detect(tmp_path)
    chosen = plan_ingest(tmp_path, "mdx", "https://a.io/", None, DEFAULT)  # the flags settle it
    assert (chosen.format, chosen.docs_dir) == ("mdx", tmp_path)


def test_a_malformed_mkdocs_yml_is_a_clear_error(tmp_path):
    write_docs(tmp_path, {"mkdocs.yml": "site_url: [https://a.io/\nnav:\n  - x\n", "docs/a.md": "# A\n"})
    with pytest.raises(DetectionError, match=r"mkdocs.yml is not valid YAML at line \d+.*--format"):
        detect(tmp_path)


def test_flags_win_then_the_corpus_memory_then_detection(tmp_path):
    write_docs(tmp_path, {"mkdocs.yml": "site_url: https://a.io/\n", "docs/a.md": "# A\n"})
    detected = plan_ingest(tmp_path, None, None, None, DEFAULT)
    assert (detected.format, detected.docs_dir, detected.base_url) == ("mkdocs", tmp_path / "docs", "https://a.io/")
    forced = plan_ingest(tmp_path, "mdx", "https://b.io/", None, DEFAULT)
    assert (forced.format, forced.docs_dir, forced.base_url) == ("mdx", tmp_path, "https://b.io/")
    remembered = plan_ingest(tmp_path / "docs", None, None, ("vitepress", "https://c.io/"), DEFAULT)
    assert (remembered.format, remembered.base_url) == ("vitepress", "https://c.io/")
    assert "remembered" in remembered.describe()


def test_cli_detects_mkdocs_says_why_and_remembers_the_format(tmp_home, tmp_path):
    project = write_docs(tmp_path / "proj", {
        "mkdocs.yml": "site_url: https://example.org/docs/\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
                      "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n",
        "docs/index.md": "# Home\n\n!!! tip \"Mind this\"\n\n    Body *text*.\n",
        "docs/guide/setup.md": "# Setup\n\n## Install { #install-it }\n\nRun `pip install x`.\n",
        "docs/guide/more.md": '# More\n\n--8<-- "../../secret.txt"\n',
        "secret.txt": "not for the index\n",
    })
    runner = CliRunner()
    first = runner.invoke(app, ["ingest", str(project), "--corpus", "mk"], env={"COLUMNS": "300"})
    out = cli_output(first)
    assert first.exit_code == 0, out
    assert "format mkdocs detected: found mkdocs.yml" in out and "base URL from the generator config" in out
    assert "1 notes on dropped content" in out and "guide/more.md: snippet '../../secret.txt' is outside the corpus" in out
    # later runs on the docs folder alone (no mkdocs.yml beside it) keep the format and base URL
    (project / "docs" / "guide" / "setup.md").write_text("# Setup\n\n## Install { #install-it }\n\nRun `pip install y`.\n")
    (project / "mkdocs.yml").unlink()
    second = runner.invoke(app, ["ingest", str(project / "docs"), "--corpus", "mk"], env={"COLUMNS": "300"})
    out = cli_output(second)
    assert second.exit_code == 0, out
    assert "format mkdocs remembered" in out and "1 changed" in out
    assert "definition lists off, as remembered for this corpus" in out  # the config named no def_list


def test_cli_names_an_unknown_format_and_the_known_ones(tmp_home, tmp_path):
    docs = write_docs(tmp_path / "d", {"index.adoc": "= Title\n"})
    result = CliRunner().invoke(app, ["ingest", str(docs), "--corpus", "a", "--format", "asciidoc"], env={"COLUMNS": "300"})
    out = cli_output(result)
    assert result.exit_code == 2, out
    assert "unknown docs format 'asciidoc'" in out and "mdx, mkdocs, vitepress, rst, html" in out
    assert "a" not in [c.name for c in open_store().list_corpora()]


I18N_DOCS = Path(__file__).resolve().parent.parent / "evals" / "corpora" / "vitepress-i18n-docs" / "docs"


@pytest.mark.parametrize("language", ["ru", "zh"])
def test_a_translated_vitepress_folder_is_vitepress_with_its_headings_anchored_as_vitepress_does(language):
    found = detect(I18N_DOCS / language)
    assert found.format == "vitepress" and "config.ts imports 'vitepress'" in found.reason
    plan = plan_ingest(I18N_DOCS / language, None, f"https://vitepress.dev/{language}/", None, "https://example.org/")
    pages = {p.doc_path: p for p in plan.pages()}
    anchors = {s.heading_path[-1]: s.anchor for s in pages["guide/markdown.md"].sections if s.heading_path}
    # every translated heading pins the English page's anchor with {#id}
    assert anchors[{"ru": "Пользовательские якоря", "zh": "自定义锚点"}[language]] == "custom-anchors"
    assert pages["reference/site-config.md"].url == f"https://vitepress.dev/{language}/reference/site-config"


def test_explicit_heading_ids_alone_do_not_make_a_folder_mkdocs(tmp_path):
    (tmp_path / "a.md").write_text("# Начало {#start}\n\n## Настройка {#setup}\n\nТекст.\n\n::: tip\nСовет.\n:::\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Тема {#theme}\n\n## Цвета {#colors}\n\nТекст.\n", encoding="utf-8")
    assert detect(tmp_path).format == "vitepress"


def test_a_vitepress_heading_without_an_id_keeps_its_letters_in_every_script():
    from citedocs.ingest.slugs import vitepress_slug

    assert vitepress_slug("Боковая панель: настройка") == "боковая-панель-настроика"  # NFKD drops the breve of й, as VitePress does
    assert vitepress_slug("侧边栏 配置") == "侧边栏-配置"
    assert vitepress_slug("الشريط الجانبي") == "الشريط-الجانبي"


def test_a_docusaurus_translation_folder_is_the_sites_pages_under_its_language(tmp_path):
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docusaurus.config.js").write_text("module.exports = { url: 'https://example.org', baseUrl: '/' };\n")
    current = site / "i18n" / "ru" / "docusaurus-plugin-content-docs" / "current"
    current.mkdir(parents=True)
    (current / "intro.md").write_text("# Введение\n\n:::tip Совет\nБоковая панель.\n:::\n", encoding="utf-8")
    found = detect(current)
    assert found.format == "mdx" and found.site.docusaurus is not None
    assert found.docs_dir == current.resolve() and found.base_url == "https://example.org/ru/"
    assert "ru translation" in found.reason and "Docusaurus" in found.reason


def test_a_starlight_language_folder_is_the_sites_pages_under_its_language(tmp_path):
    site = tmp_path / "site"
    folder = site / "src" / "content" / "docs" / "zh-cn"
    folder.mkdir(parents=True)
    (site / "astro.config.mjs").write_text("export default defineConfig({ site: 'https://example.org' });\n")
    (folder / "start.mdx").write_text("# 开始\n\n侧边栏。\n", encoding="utf-8")
    found = detect(folder)
    assert found.format == "mdx" and found.docs_dir == folder.resolve()
    assert found.base_url == "https://example.org/zh-cn/" and "zh-cn translation" in found.reason
