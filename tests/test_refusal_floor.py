"""The retrieval refusal is a margin above each corpus's own floor, not one absolute similarity:
the floor is measured on the corpus (never fitted), once per corpus version, and every refusal and
trace says what it was."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from citedocs.contract import AskRequest
from citedocs.retrieve.hybrid import RetrievalConfig
from citedocs.retrieve.null_level import NULL_PROBES
from citedocs.validate.thresholds import ThresholdsError, load_thresholds
from conftest import copy_astro_pages

URL = "https://docs.astro.build/en/"


@pytest.fixture
def services(tmp_home: Path, tmp_path: Path):
    from citedocs.service import Services

    services = Services.open(backend="extractive")
    services.ingest(copy_astro_pages(tmp_path / "docs"), "small", URL)
    yield services
    services.store.close()


def test_the_floor_is_the_median_match_of_everyday_questions_measured_once_per_corpus_version(services, tmp_path):
    pipeline, version = services.pipeline, services.corpus("small").version
    expected = statistics.median(
        services.retriever.retrieve("small", probe, 1, RetrievalConfig()).confidence for probe in NULL_PROBES["en"]
    )
    assert pipeline.null_levels.level("small", version) == pytest.approx(expected)
    assert list(pipeline.null_levels._levels) == [("small", version, "en")]  # measured once, then kept
    pipeline.null_levels.level("small", version)
    assert list(pipeline.null_levels._levels) == [("small", version, "en")]

    copy_astro_pages(tmp_path / "docs", ("guides/deploy/netlify.mdx",))
    services.ingest(tmp_path / "docs", "small", URL)
    new_version = services.corpus("small").version
    assert new_version != version
    services.ask(AskRequest(question="How do I deploy to Netlify?", corpus="small"))
    assert ("small", new_version, "en") in pipeline.null_levels._levels  # a new version is measured anew


def test_a_question_no_closer_than_everyday_ones_is_refused_and_says_how_far_above_the_floor(services):
    response = services.ask(AskRequest(question="How do I knit a scarf as a beginner?", corpus="small"))
    assert response.refused and response.refusal_reason.startswith("low_retrieval_confidence")
    assert "above this corpus's floor" in response.refusal_reason
    trace = services.trace(response.trace_id)
    assert trace["retrieval_floor"] == services.pipeline.null_levels.level("small", services.corpus("small").version)
    assert trace["retrieval_confidence"] - trace["retrieval_floor"] < load_thresholds().min_retrieval_margin


def test_a_question_the_pages_answer_clears_the_margin(services):
    response = services.ask(AskRequest(question="How do I deploy my Astro site to Heroku?", corpus="small"))
    trace = services.trace(response.trace_id)
    assert trace["retrieval_confidence"] - trace["retrieval_floor"] >= load_thresholds().min_retrieval_margin
    assert not (response.refusal_reason or "").startswith("low_retrieval_confidence")


def test_a_thresholds_file_with_the_old_absolute_threshold_is_a_clear_error(tmp_path):
    old = tmp_path / "thresholds.toml"
    old.write_text(
        "[thresholds]\nmin_retrieval_score = 0.4971\nsupport_min_coverage = 0.5\n"
        "support_min_similarity = 0.5\nextractive_min_sentence_score = 0.3\n"
    )
    with pytest.raises(ThresholdsError, match="replaced by min_retrieval_margin.*citedocs calibrate"):
        load_thresholds(old)


class _HeldRetriever:
    """Fault injection: a retriever that holds every retrieval of one corpus until released, as a
    slow first measurement of a large corpus would."""

    def __init__(self, held: str) -> None:
        import threading

        self.held = held
        self.release = threading.Event()

    def retrieve(self, corpus, query, top_k, config):
        from citedocs.retrieve.hybrid import RetrievalResult

        if corpus == self.held:
            self.release.wait(timeout=10)
        return RetrievalResult(query=query, hits=[], confidence=0.0)


def test_a_corpus_being_measured_does_not_hold_up_another_corpus_first_question():
    import threading

    from citedocs.retrieve.null_level import NullLevels

    retriever = _HeldRetriever("python-html")
    levels = NullLevels(retriever)
    slow = threading.Thread(target=levels.level, args=("python-html", "v1"))
    slow.start()
    try:
        other = threading.Thread(target=levels.level, args=("starlette", "v1"))
        other.start()
        other.join(timeout=5)
        assert not other.is_alive(), "the other corpus's floor waited behind the one being measured"
        assert ("starlette", "v1", "en") in levels._levels and ("python-html", "v1", "en") not in levels._levels
    finally:
        retriever.release.set()
        slow.join(timeout=10)
    assert ("python-html", "v1", "en") in levels._levels


def test_a_russian_question_is_measured_against_russian_probes_and_an_english_one_as_before(services):
    pipeline, version = services.pipeline, services.corpus("small").version
    english = pipeline.null_levels.level("small", version)
    assert [key[2] for key in pipeline.null_levels._levels] == ["en"]
    russian = pipeline.null_levels.level("small", version, "ru")
    assert russian == pipeline.null_levels._levels[("small", version, "ru")]
    assert pipeline.null_levels._kinds[("small", version, "ru")] == "terms"  # MiniLM cannot read Russian
    assert pipeline.null_levels.level("small", version, "en") == english


def test_a_russian_corpus_is_measured_with_russian_probes(tmp_home: Path, tmp_path: Path):
    from citedocs.service import Services

    docs = Path(__file__).resolve().parents[1] / "evals" / "corpora" / "vitepress-i18n-docs" / "docs" / "ru" / "reference"
    folder = tmp_path / "ru"
    folder.mkdir()
    for name in ("default-theme-sidebar.md", "cli.md", "../config.ts"):  # the locale config: a VitePress folder
        (folder / Path(name).name).write_text((docs / name).read_text(encoding="utf-8"), encoding="utf-8")
    services = Services.open(backend="extractive")
    try:
        services.ingest(folder, "ru", "https://vitepress.dev/ru/reference/")
        levels = services.pipeline.null_levels
        version = services.corpus("ru").version
        assert levels.level("ru", version, "ru") == levels._levels[("ru", version, "ru")]
        assert levels._corpus_languages[("ru", version)] == "ru"
        hit = services.retriever.retrieve("ru", "Как сделать группы в боковой панели сворачиваемыми?", 8, RetrievalConfig())
        # the corpus is embedded with multilingual-e5, whose similarity is the confidence where MiniLM cannot read
        assert hit.confidence_kind == "dense" and hit.confidence > levels._levels[("ru", version, "ru")]
        assert "collapsible-sidebar-groups" in [h.chunk.anchor for h in hit.hits[:3]]
        # an English question crosses a language gap, as the English probes do: they alone set its floor
        english_floor = levels.level("ru", version, "en")
        assert english_floor == levels._levels[("ru", version, "en")] < levels._levels[("ru", version, "ru")]
    finally:
        services.store.close()
