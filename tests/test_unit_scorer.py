"""The trained sentence scorer (generate/unit_features.py) is an option, pinned by sha256: a missing or
altered file is refused with an error naming it, the extractive backend falls back to the hand-set
score, and /healthz says which scorer answers, never silently."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from fastapi.testclient import TestClient

from citedocs.api.app import create_app
from citedocs.generate import unit_features
from citedocs.generate.extractive import ExtractiveGenerator
from citedocs.generate.unit_features import (
    NAMES,
    SCORER_FILE,
    SCORER_SHA256,
    ScorerFileError,
    UnitView,
    configured_unit_scorer,
    load_unit_scorer,
    unit_features as features_of,
)
from citedocs.models.encoders import bi_encoder
from citedocs.types import Chunk, ChunkId


@pytest.fixture(autouse=True)
def fresh_scorer_cache():
    unit_features._shipped_scorer.cache_clear()
    yield
    unit_features._shipped_scorer.cache_clear()


def test_the_shipped_scorer_file_matches_its_pinned_sha256_and_weighs_every_feature():
    scorer = load_unit_scorer()
    assert scorer.weights.shape == (len(NAMES),) and np.isfinite(scorer.weights).all()


def test_an_altered_scorer_file_is_refused_naming_the_file(tmp_path):
    altered = tmp_path / "unit_scorer.json"
    spec = json.loads(SCORER_FILE.read_text(encoding="utf-8"))
    spec["weights"][0] += 1.0
    altered.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ScorerFileError, match=str(altered)) as refused:
        load_unit_scorer(altered, SCORER_SHA256)
    assert "not the pinned" in str(refused.value)
    with pytest.raises(ScorerFileError, match="cannot be read"):
        load_unit_scorer(tmp_path / "missing.json", SCORER_SHA256)


def test_a_missing_scorer_file_falls_back_to_the_hand_set_score_and_healthz_says_so(tmp_path, tenant_services, monkeypatch, caplog):
    monkeypatch.setenv("CITEDOCS_EXTRACTIVE_UNIT_SCORER", "trained")
    monkeypatch.setattr(unit_features, "SCORER_FILE", tmp_path / "gone.json")
    with caplog.at_level(logging.WARNING):
        scorer, said = configured_unit_scorer()
    assert scorer is None and said.startswith("hand-set (fallback:") and "gone.json" in said
    assert any("gone.json" in r.getMessage() for r in caplog.records)
    assert TestClient(create_app(tenant_services)).get("/healthz").json()["unit_scorer"] == said


def test_healthz_names_the_scorer_the_setting_chose(tenant_services, monkeypatch):
    client = TestClient(create_app(tenant_services))
    monkeypatch.setenv("CITEDOCS_EXTRACTIVE_UNIT_SCORER", "hand-set")
    assert client.get("/healthz").json()["unit_scorer"] == "hand-set (setting extractive_unit_scorer)"
    monkeypatch.setenv("CITEDOCS_EXTRACTIVE_UNIT_SCORER", "trained")
    assert client.get("/healthz").json()["unit_scorer"].startswith(f"trained (unit_scorer.json, sha256 {SCORER_SHA256[:12]}")


def test_rare_words_are_read_in_every_script():
    """The feature that reads the asked detail (a word few candidates hold) sees Cyrillic words too."""
    units = [
        UnitView("Боковая панель настраивается в файле конфигурации.", "Боковая панель", 0, 0),
        UnitView("Параметр collapsed сворачивает группы боковой панели по умолчанию.", "Боковая панель", 0, 1),
    ]
    rows = features_of("Как свернуть группы боковой панели по умолчанию?", units, [0.5, 0.5])
    rare = NAMES.index("rare_overlap")
    assert rows[1, rare] > rows[0, rare] and rows[1, NAMES.index("overlap")] > 0


def test_the_trained_scorer_orders_sentences_and_the_answer_still_quotes_verbatim():
    chunk = Chunk(
        id=ChunkId("guide#retries/1"), doc_path="guide.md", title="Guide", heading_path=("Retries",), anchor="retries",
        anchor_path=("retries",), url="https://example.org/guide/#retries",
        text="Retries make flaky networks bearable. The client retries a failed request three times by default. "
             "Set `max_retries` to change how often it retries.",
        token_count=30,
    )
    generator = ExtractiveGenerator(bi_encoder(), min_sentence_score=0.3, scorer=load_unit_scorer())
    text = generator.generate("How do I change how often the client retries a failed request?", [chunk], []).text
    assert "`max_retries`" in text and "[guide#retries/1]" in text
