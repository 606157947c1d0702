"""Search terms in every script: what BM25, the FTS tables of both stores, the question gate,
follow-up detection and the eval's judge all read (``citedocs/text.py``)."""

from __future__ import annotations

import pytest
import snowballstemmer

from citedocs.index.fts5_postings import Fts5Tokenizer
from citedocs.index.sqlite import _FTS_TABLE
from citedocs.language import detect_language
from citedocs.service import Services
from citedocs.text import content_terms, query_terms, search_terms

MIXED = (
    "Боковая панель sidebar · 在vite.config.ts中配置侧边栏 · شَرِيطُ الجانب `appearance` · שָׁלוֹם עולם · "
    "Ώμέγα ΣΊΣΥΦΟΣ · café naïve Straße ﬁle ＶＩＴＥ · क्षेत्र · ข้อความ · 한국어 문서 · 🚀 emoji 😀"
)


def test_words_of_every_script_are_search_terms():
    assert search_terms("Боковая панель sidebar") == ["боков", "панел", "sidebar"]
    terms = search_terms(MIXED)
    assert {"شريط", "جانب", "שלום", "עולם", "ωμεγ", "cafe", "naive", "strasse", "file", "vite", "문서"} <= set(terms)
    assert "emoji" in terms and not any("🚀" in t or "😀" in t for t in terms)


def test_chinese_is_indexed_as_character_bigrams_and_keeps_the_identifiers_around_it():
    assert search_terms("在vite.config.ts中配置侧边栏") == [
        "在", "vite", "config", "ts", "vite_config_ts", "中配", "配置", "置侧", "侧边", "边栏",
    ]  # fmt: skip
    assert "配置" in query_terms("如何配置侧边栏？")


def test_english_text_gives_the_terms_it_always_gave():
    assert search_terms("Use import.meta.env and minimumFailingSeverity with --host.") == [
        "use", "import", "meta", "env", "import_meta_env", "and", "minimumfailingseverity", "minimum", "failing",
        "severity", "with", "host",
    ]  # fmt: skip


def test_every_term_is_one_fts5_token_stemmed_as_the_postgresql_store_stems_it():
    """FTS5's unicode61 splits words at combining marks (Hebrew niqqud, Arabic harakat, Devanagari
    vowel signs); the terms must reach both stores whole, and stem to the same lexeme on both."""
    porter = snowballstemmer.stemmer("porter")
    terms = sorted(t for t in set(search_terms(MIXED)) if not t.isascii())
    tokens = Fts5Tokenizer(_FTS_TABLE).tokens(terms)
    assert tokens == [(porter.stemWord(t) or t,) for t in terms]


def test_content_terms_drop_the_stopwords_of_other_languages_too():
    assert content_terms("Это и есть боковая панель") == frozenset({"боков", "панел"})


def test_languages_are_detected_by_script_and_by_model():
    assert detect_language("Как включить тёмную тему на сайте?") == "ru"
    assert detect_language("如何启用深色模式？") == "zh"
    assert detect_language("ダークモードを有効にするには？") == "ja"
    assert detect_language("كيف أفعّل الوضع الداكن؟") == "ar"
    assert detect_language("איך מפעילים מצב כהה?") == "he"
    assert detect_language("Wie aktiviere ich den Dunkelmodus?") == "de"
    assert detect_language("How do I enable dark mode?") == "en"
    assert detect_language("sidebar") == "en"  # too short to tell: its script says
    assert detect_language("`vite.config.ts`") == "en"


@pytest.mark.parametrize("store_backend", ["sqlite", "postgres"])
def test_pages_in_every_script_are_ingested_and_found_and_a_file_that_is_not_utf8_is_reported(tmp_home, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    pages = {
        "ru.md": "# Боковая панель\n\nБоковая панель показывает ссылки на страницы раздела.\n",
        "zh.md": "# 侧边栏\n\n侧边栏显示本节页面的链接。\n",
        "ar.md": "# الشريط الجانبي\n\nيعرض الشَّرِيط الجانبي روابط صفحات القسم 🚀.\n",
        "he.md": "# סרגל צד\n\nסרגל הצד מציג קישורים לדפי המדור.\n",
        "mixed.md": "# Mixed\n\nThe sidebar (боковая панель, 侧边栏, الشريط) shows links 😀.\n",
    }
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    (docs / "latin1.md").write_bytes("# Café\n\nLe café est prêt.\n".encode("latin-1"))
    services = Services.open()
    try:
        report = services.ingest(docs, "scripts", "https://example.org/")
        assert [s.path for s in report.skipped] == ["latin1.md"]
        assert "UTF-8" in report.skipped[0].reason
        assert report.files_parsed == len(pages)
        assert report.languages == {"ru": 1, "zh": 1, "ar": 1, "he": 1, "en": 1}
        assert any("no Snowball stemmer for he (1 pages), zh (1 pages)" in n for n in report.notes)

        def found(question: str) -> set[str]:
            hits = services.store.lexical_search("scripts", query_terms(question), 10)
            return {services.store.get_chunks("scripts", [cid])[0].doc_path for cid, _ in hits}

        assert found("Что показывает боковая панель?") == {"ru.md", "mixed.md"}
        assert found("侧边栏显示什么？") == {"zh.md", "mixed.md"}
        assert found("ماذا يعرض الشريط الجانبي؟") >= {"ar.md"}
        assert found("מה מציג סרגל הצד?") == {"he.md"}
        chunk = services.store.get_chunks("scripts", [services.store.lexical_search("scripts", query_terms("סרגל"), 1)[0][0]])[0]
        assert "סרגל הצד מציג קישורים לדפי המדור." in chunk.text  # stored as written, right to left intact
    finally:
        services.store.close()
