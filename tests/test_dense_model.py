"""The dense model is chosen at ingest (setting dense_model) and remembered by the corpus: its
queries are encoded by the model that embedded it, whatever the setting says later, and corpora of
both models share one store (SQLite and PostgreSQL). The mpnet tests load the real model
(`make install-mpnet`; CI installs it and sets CITEDOCS_TEST_REQUIRE_MPNET)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from typer.testing import CliRunner

from citedocs.models import encoders
from citedocs.models import mpnet as mpnet_model
from citedocs.cli import app as cli
from citedocs.ingest.pipeline import IngestError
from citedocs.retrieve.hybrid import RetrievalConfig
from conftest import ASTRO_BASE_URL, ASTRO_DOCS, BACKENDS, open_services

QUESTION = "How do I deploy my Astro site to Heroku?"


def _mpnet_ready() -> None:
    try:
        mpnet_model.verify_model()
    except mpnet_model.MpnetMissing as exc:
        if os.environ.get("CITEDOCS_TEST_REQUIRE_MPNET"):
            pytest.fail(f"all-mpnet-base-v2 is required here: {exc}")
        pytest.skip(str(exc))


def _widths(services, corpus: str) -> set[int]:
    return {len(vectors.sentence) for _, vectors in services.store.export_chunks(corpus)}


@pytest.mark.parametrize("store_backend", BACKENDS, scope="session")
def test_corpora_of_both_dense_models_share_a_store_and_each_is_searched_with_its_own(
    request, store_backend, tmp_path, monkeypatch, small_docs
):
    _mpnet_ready()
    services = open_services(request, store_backend, tmp_path, "dense")
    monkeypatch.setenv("CITEDOCS_DENSE_MODEL", "mpnet")
    services.ingest(small_docs, "big", ASTRO_BASE_URL)
    monkeypatch.setenv("CITEDOCS_DENSE_MODEL", "minilm")  # the corpus remembers mpnet
    services.ingest(small_docs, "small", ASTRO_BASE_URL)

    assert "+dense-all-mpnet-base-v2" in services.corpus("big").pipeline
    assert "+dense-" not in services.corpus("small").pipeline
    assert _widths(services, "big") == {768} and _widths(services, "small") == {384}

    dense_only = RetrievalConfig(mode="dense", rerank=False)
    big = services.retriever.retrieve("big", QUESTION, 8, dense_only)
    small = services.retriever.retrieve("small", QUESTION, 8, dense_only)
    assert "encode_dense" in big.stage_ms and "encode_dense" not in small.stage_ms
    # the dense stage ranks by mpnet's own similarity to the question, read back from the store
    vectors = {chunk.id: v.sentence for chunk, v in services.store.export_chunks("big")}
    query = encoders.dense_encoder("mpnet").encode([QUESTION])[0]
    by_mpnet = sorted(vectors, key=lambda cid: -float(np.dot(vectors[cid], query)))
    assert [h.chunk.id for h in big.hits] == by_mpnet[:8]
    assert big.hits[0].chunk.doc_path == small.hits[0].chunk.doc_path == "guides/deploy/heroku.mdx"
    # the whole pipeline (hybrid + rerank) answers from both
    for corpus in ("big", "small"):
        assert services.search(QUESTION, corpus, 3).hits[0].chunk.doc_path == "guides/deploy/heroku.mdx"
    services.store.close()


def test_mpnet_runs_on_onnx_runtime_with_the_vectors_of_the_torch_reference():
    _mpnet_ready()
    from citedocs.models.encoders import TorchBiEncoder

    texts = [QUESTION, (ASTRO_DOCS / "guides" / "deploy" / "heroku.mdx").read_text(encoding="utf-8") * 3, "Übersetzung — 日本語", ""]
    reference = TorchBiEncoder(mpnet_model.model_dir(), mpnet_model.MODEL_NAME).encode(texts)
    vectors = encoders.dense_encoder("mpnet").encode(texts, batch_size=2)
    assert vectors.shape == (4, 768) and float(np.min(np.sum(reference * vectors, axis=1))) > 0.9999


def test_changing_the_dense_model_re_embeds_the_corpus_at_its_next_ingest(tmp_path, monkeypatch, small_docs):
    _mpnet_ready()
    monkeypatch.setenv("CITEDOCS_HOME", str(tmp_path))
    monkeypatch.delenv("CITEDOCS_DATABASE_URL", raising=False)
    runner = CliRunner()

    def ingest() -> str:
        result = runner.invoke(cli, ["ingest", str(small_docs), "--corpus", "docs"], env={"COLUMNS": "250"})
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())

    assert "dense model minilm" in ingest()
    assert "0 added, 0 changed, 0 removed" in ingest()
    monkeypatch.setenv("CITEDOCS_DENSE_MODEL", "mpnet")
    switched = ingest()
    services = open_services(None, "sqlite", tmp_path, "dense")
    count = services.corpus("docs").chunk_count
    assert f"{count} added" in switched and "dense model mpnet" in switched and _widths(services, "docs") == {768}
    services.store.close()


def test_choosing_mpnet_without_installing_it_changes_nothing_and_says_what_to_run(tmp_path, monkeypatch, small_docs):
    services = open_services(None, "sqlite", tmp_path, "dense")
    services.ingest(small_docs, "docs", ASTRO_BASE_URL)
    before = services.corpus("docs")
    monkeypatch.setattr(mpnet_model, "model_dir", lambda: tmp_path / "not-installed")
    encoders._mpnet.cache_clear()
    monkeypatch.setenv("CITEDOCS_DENSE_MODEL", "mpnet")
    try:
        with pytest.raises(IngestError, match=r"make install-mpnet.*CITEDOCS_DENSE_MODEL=minilm\. Nothing was changed"):
            services.ingest(small_docs, "docs", ASTRO_BASE_URL)
    finally:
        encoders._mpnet.cache_clear()
    assert services.corpus("docs") == before
    services.store.close()


def test_weights_other_than_the_pinned_ones_are_refused(tmp_path):
    folder = tmp_path / "all-mpnet-base-v2"
    folder.mkdir()
    with (folder / "model.safetensors").open("wb") as handle:
        handle.truncate(mpnet_model.WEIGHTS_BYTES)  # sparse: the right size, all zeros
    with pytest.raises(mpnet_model.MpnetMissing, match="refusing to load .*not the pinned all-mpnet-base-v2 weights"):
        mpnet_model.verify_model(folder)


def test_parts_that_assemble_to_another_zip_install_nothing(tmp_path, monkeypatch):
    parts = [tmp_path / "all-mpnet-base-v2.zip.001", tmp_path / "all-mpnet-base-v2.zip.002"]
    for n, part in enumerate(parts):
        part.write_bytes(b"not the zip" * (n + 1))
    monkeypatch.setattr(mpnet_model, "part_files", lambda: parts)
    target = tmp_path / "models" / "all-mpnet-base-v2"
    with pytest.raises(mpnet_model.MpnetMissing, match="reinstall them with pip install --force-reinstall"):
        mpnet_model.install_model(target)
    assert not target.exists() and list((tmp_path / "models").iterdir()) == []


def test_a_postgres_store_from_before_two_widths_is_migrated_to_one_index_per_width(request, tmp_path, monkeypatch, small_docs):
    """Its vector index covered the whole table, so the first 768-d row could not even be inserted."""
    _mpnet_ready()
    import psycopg

    from citedocs.index.postgres import PostgresStore
    from citedocs.service import Services
    from conftest import stored_rows

    services = open_services(request, "postgres", tmp_path, "migrate")
    services.ingest(small_docs, "small", ASTRO_BASE_URL)
    url = services.store.url
    services.store.close()
    with psycopg.connect(url, autocommit=True) as conn:  # the index as earlier releases created it
        conn.execute("DROP INDEX chunks_dense_hnsw_384")
        conn.execute("CREATE INDEX chunks_embedding_hnsw_384 ON chunks USING hnsw ((embedding::vector(384)) vector_ip_ops)")

    services = Services(store=PostgresStore(url))  # opening it migrates the schema
    monkeypatch.setenv("CITEDOCS_DENSE_MODEL", "mpnet")
    services.ingest(small_docs, "big", ASTRO_BASE_URL)
    indexes = dict(stored_rows(services, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks'"))
    assert "chunks_embedding_hnsw_384" not in indexes
    assert "WHERE (vector_dims(embedding) = 384)" in indexes["chunks_dense_hnsw_384"]
    assert "WHERE (vector_dims(embedding) = 768)" in indexes["chunks_dense_hnsw_768"]
    for corpus in ("big", "small"):
        assert services.search(QUESTION, corpus, 3).hits[0].chunk.doc_path == "guides/deploy/heroku.mdx"
    services.store.close()


def test_a_corpus_whose_dense_model_is_gone_makes_the_server_unready_and_says_what_to_install(
    tmp_path, monkeypatch, small_docs
):
    _mpnet_ready()
    from fastapi.testclient import TestClient

    from citedocs.api.app import create_app

    monkeypatch.setenv("CITEDOCS_DENSE_MODEL", "mpnet")
    services = open_services(None, "sqlite", tmp_path, "dense", backend="extractive")
    services.ingest(small_docs, "docs", ASTRO_BASE_URL)
    monkeypatch.setattr(mpnet_model, "model_dir", lambda: tmp_path / "uninstalled")  # e.g. a new venv
    encoders._mpnet.cache_clear()
    monkeypatch.setenv("CITEDOCS_AUTH", "off")
    try:
        client = TestClient(create_app(services))
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "corpus 'docs'" in ready.json()["detail"] and "make install-mpnet" in ready.json()["detail"]
        asked = client.post("/ask", json={"question": QUESTION, "corpus": "docs"})
        assert asked.status_code == 503 and asked.json()["error"] == "model_missing"
    finally:
        encoders._mpnet.cache_clear()
    services.store.close()
