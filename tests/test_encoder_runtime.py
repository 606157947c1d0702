"""The ONNX Runtime encoder gives the vectors the torch reference gives (issue #12: the int8/ONNX
path within a cosine tolerance of the float model), and a change of runtime re-embeds a corpus
rather than mixing vectors from two runtimes in one index."""

from __future__ import annotations

import numpy as np
import pytest

from citedocs import config
from citedocs.models import encoders
from citedocs.models.encoders import LATE_INTERACTION_TOKENS, load_bi_encoder
from citedocs.retrieve.hybrid import RetrievalConfig
from citedocs.service import Services
from conftest import ASTRO_BASE_URL, ASTRO_DOCS, copy_astro_pages

# Real chunk-like texts of every shape ingest and queries produce: a question, a heading path with
# prose, code, a text far past the 256-word-piece limit (truncated the same way), non-ASCII, empty.
TEXTS = [
    "How do I read env variables on the client?",
    "Guides > Environment Variables > Default environment variables\nAstro includes a few environment "
    "variables out of the box: import.meta.env.MODE, import.meta.env.PROD and import.meta.env.DEV.",
    "Reference > Configuration\n```js\nimport { defineConfig } from 'astro/config';\nexport default "
    "defineConfig({ site: 'https://example.com', output: 'server' });\n```",
    (ASTRO_DOCS / "guides" / "deploy" / "heroku.mdx").read_text(encoding="utf-8") * 3,
    "Übersetzung: les données « citées » — 日本語のドキュメント",
    "",
]


@pytest.fixture(scope="module")
def reference():
    return load_bi_encoder("torch").encode_with_tokens(TEXTS, LATE_INTERACTION_TOKENS)


def cosines(reference, pairs) -> tuple[np.ndarray, np.ndarray]:
    """Sentence cosine per text, and the lowest per-token cosine per text."""
    sentence = np.array([float(r[0] @ p[0]) for r, p in zip(reference, pairs)])
    tokens = np.array([float(np.min(np.sum(r[1] * p[1], axis=1))) for r, p in zip(reference, pairs)])
    return sentence, tokens


def test_onnx_fp32_gives_the_torch_vectors(reference):
    encoder = load_bi_encoder("onnx-fp32")
    pairs = encoder.encode_with_tokens(TEXTS, LATE_INTERACTION_TOKENS)
    assert [p[1].shape for p in pairs] == [r[1].shape for r in reference]  # same word pieces, same truncation
    sentence, tokens = cosines(reference, pairs)
    assert sentence.min() > 0.9999 and tokens.min() > 0.999, (sentence, tokens)
    # encode() is the sentence half of encode_with_tokens, whatever the batch size
    assert np.allclose(encoder.encode(TEXTS, batch_size=2), np.stack([p[0] for p in pairs]), atol=1e-5)
    assert encoder.dimension == 384


def test_onnx_int8_stays_within_tolerance_of_the_float_model(reference):
    pairs = load_bi_encoder("onnx-int8").encode_with_tokens(TEXTS, LATE_INTERACTION_TOKENS)
    assert [p[1].shape for p in pairs] == [r[1].shape for r in reference]
    sentence, tokens = cosines(reference, pairs)
    # measured on 200 Astro chunks: sentence cosine min 0.984, median 0.993 (docs/benchmarks/ingest.md)
    assert sentence.min() > 0.97 and np.median(sentence) > 0.985, sentence
    assert tokens.min() > 0.8, tokens


def ingest_small_astro(docs, runtime: str, monkeypatch) -> Services:
    """Ingest the small Astro pages as a new process with CITEDOCS_ENCODER_RUNTIME=runtime would."""
    monkeypatch.setenv("CITEDOCS_ENCODER_RUNTIME", runtime)
    services = Services.open(config.database_path())
    services.ingest(docs, "astro", ASTRO_BASE_URL)
    return services


def test_changing_the_encoder_runtime_re_embeds_the_corpus(tmp_home, tmp_path, monkeypatch):
    docs = copy_astro_pages(tmp_path / "docs")
    services = ingest_small_astro(docs, "onnx-fp32", monkeypatch)
    first = services.corpus("astro")
    assert first.chunk_count > 0 and first.pipeline.count("+onnx-fp32") == 1
    services.store.close()

    monkeypatch.setenv("CITEDOCS_ENCODER_RUNTIME", "torch")
    services = Services.open(config.database_path())
    again = services.ingest(docs, "astro", ASTRO_BASE_URL)
    assert again.added + again.changed == first.chunk_count and again.unchanged == 0
    assert encoders.corpus_runtime(services.corpus("astro").pipeline) == "torch"
    services.store.close()


@pytest.mark.parametrize(("embedded", "serving"), [("onnx-int8", "onnx-fp32"), ("onnx-fp32", "onnx-int8")])
def test_queries_are_embedded_by_the_runtime_that_embedded_their_corpus(tmp_home, tmp_path, monkeypatch, embedded, serving):
    """A corpus embedded on one machine and served by a process set to the other runtime is still
    searched with query vectors of its own kind, never a mix of int8 and float vectors."""
    ingest_small_astro(copy_astro_pages(tmp_path / "docs"), embedded, monkeypatch).store.close()
    monkeypatch.setenv("CITEDOCS_ENCODER_RUNTIME", serving)
    services = Services.open(config.database_path())
    question = "How do I deploy my Astro site to Heroku?"
    (own_kind,) = load_bi_encoder(embedded).encode([question])
    (other_kind,) = load_bi_encoder(serving).encode([question])
    assert services.encoder.name.endswith(serving)
    got = services.retriever.encode_query(question, "astro").vector
    assert np.allclose(got, own_kind, atol=1e-6) and not np.allclose(got, other_kind, atol=1e-3)
    hits = services.retriever.retrieve("astro", question, 3, RetrievalConfig()).hits
    assert hits and hits[0].chunk.doc_path == "guides/deploy/heroku.mdx"
    services.store.close()


def test_an_unknown_runtime_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("CITEDOCS_ENCODER_RUNTIME", "cuda")
    with pytest.raises(config.ConfigError, match="CITEDOCS_ENCODER_RUNTIME.*use one of onnx-fp32, onnx-int8, torch"):
        config.setting("encoder_runtime")
