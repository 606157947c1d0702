"""Each page's language is known: declared, from its folder, or read from its text."""

from __future__ import annotations

from collections import Counter

from citedocs.ingest.document import ParsedPage
from citedocs.ingest.page_language import language_notes, language_tag, page_language
from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers.html import HtmlReader


def _page(doc_path: str, frontmatter: dict | None = None) -> ParsedPage:
    return ParsedPage(doc_path, doc_path, "https://example.org/", "T", "", frontmatter or {}, [])


def test_a_declared_language_wins_over_folder_and_text():
    assert page_language(_page("ru/guide.md", {"lang": "zh-CN"}), "Боковая панель") == ("zh", "declared")


def test_a_language_folder_names_the_pages_language():
    assert page_language(_page("ru/guide/sidebar.md"), "sidebar") == ("ru", "folder")
    assert page_language(_page("i18n/ja/docusaurus-plugin-content-docs/current/intro.md"), "x") == ("ja", "folder")
    assert page_language(_page("src/content/docs/pt-br/start.mdx"), "x") == ("pt", "folder")


def test_folders_that_are_not_language_codes_leave_it_to_the_text():
    assert page_language(_page("guide/api/sidebar.md"), "Боковая панель показывает ссылки.") == ("ru", "text")
    assert page_language(_page("api/x.md"), "The sidebar shows links to the section's pages.") == ("en", "text")
    assert language_tag("guide") is None and language_tag("api") is None and language_tag("zh_Hans") == "zh"


def test_html_lang_attribute_is_the_pages_declared_language(tmp_path):
    source = SourceFile("a.html", '<html lang="he"><body><h1>סרגל צד</h1><p>סרגל הצד מציג קישורים.</p></body></html>', tmp_path, "https://example.org/")
    page = HtmlReader().read(source)
    assert page_language(page, "") == ("he", "declared")


def test_the_report_says_which_languages_are_unstemmed_and_when_a_corpus_mixes_languages():
    notes = language_notes(Counter({"ru": 36, "zh": 36}))
    assert notes[0].startswith("no Snowball stemmer for zh (36 pages)")
    assert "mixes languages (ru 36, zh 36)" in notes[1]
    assert language_notes(Counter({"en": 40, "ru": 1})) == []
