"""Grading and claim verification with the real local model, on hand-built pairs: a supported, a
contradicted and an unrelated claim; a passage that answers the question and one that does not;
and, in the write answer style, citations the schema confines to the chunks given.

Skips without the model (`make install-llm`); CI sets CITEDOCS_TEST_REQUIRE_LLM=1 to fail instead.
"""

from __future__ import annotations

import re

import pytest

from citedocs.generate.grader import LlmGrader
from citedocs.generate.local import LocalGenerator
from citedocs.generate.llm_server import ManagedServer, ServerConfig
from citedocs.generate.yesno import PassageJudge
from citedocs.types import Chunk, ChunkId
from citedocs.validate.entailment import LlmEntailmentChecker
from citedocs.validate.thresholds import load_thresholds

from test_local_llm import require_local_model

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
        "You can also add a custom mode name to the filename itself (e.g `.env.staging`). Run "
        "`astro dev --mode staging` to load `.env.staging`."
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
    text="Specifies which port to run on. Defaults to `4321`.",
    token_count=20,
)


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    require_local_model()
    from citedocs.models.llm_file import model_path

    server = ManagedServer(ServerConfig(model=model_path(), threads=1, log_file=tmp_path_factory.mktemp("llm") / "server.log"))
    server.start()
    try:
        yield PassageJudge(LocalGenerator(server, timeout_s=600))  # .client: the same model, writing
    finally:
        server.stop()


@pytest.fixture(scope="module")
def checker(judge):
    from citedocs.models.encoders import bi_encoder
    from citedocs.validate.support import SupportChecker

    thresholds = load_thresholds()
    return LlmEntailmentChecker(judge, SupportChecker(bi_encoder(), thresholds), thresholds.min_entailment)


def test_a_passage_that_answers_is_kept_and_an_unrelated_one_dropped(judge):
    grader = LlmGrader(judge, load_thresholds().min_grade)
    relevant, unrelated = grader.grade("How do I load .env.staging when I run the dev server?", [ENV_FILES, PORT])
    assert relevant.kept and not unrelated.kept
    assert relevant.p_relevant > unrelated.p_relevant


def test_grading_stops_once_it_has_kept_as_many_chunks_as_the_answer_can_use(judge):
    grader = LlmGrader(judge, load_thresholds().min_grade, enough=1)
    grades = grader.grade("How do I load .env.staging when I run the dev server?", [ENV_FILES, PORT])
    assert [(g.chunk_id, g.kept) for g in grades] == [(ENV_FILES.id, True)]  # PORT is never sent to the model


def test_a_supported_claim_is_entailed(checker):
    verdict = checker.check("Running astro dev --mode staging loads .env.staging.", [ENV_FILES])
    assert verdict.supported and verdict.method == "llm"
    probabilities = verdict.entailment[ENV_FILES.id]
    assert probabilities["entailment"] == max(probabilities[k] for k in ("entailment", "contradiction", "neutral"))


def test_a_contradicted_claim_is_not_supported(checker):
    verdict = checker.check("Astro never loads environment variables from .env files.", [ENV_FILES])
    assert not verdict.supported and verdict.method == "llm"
    probabilities = verdict.entailment[ENV_FILES.id]
    assert probabilities["contradiction"] > probabilities["entailment"]


def test_an_unrelated_claim_is_not_supported(checker):
    verdict = checker.check("Astro can set up a MongoDB replica set for your backend.", [ENV_FILES])
    assert not verdict.supported and verdict.method == "llm"


def test_in_the_write_style_the_model_cites_only_the_ids_it_was_given(judge):
    """llm_answer = write: the schema's enum of the request's chunk ids constrains the real model."""
    generation = judge.client.generate("How do I load .env.staging when I run the dev server?", [ENV_FILES, PORT], [])
    assert generation.prompt_version == "cited_json_v2+llamacpp"
    cited = set(re.findall(r"\[([^\[\]]+#[^\[\]]*/\d+)\]", generation.text))
    assert cited and cited <= {ENV_FILES.id, PORT.id}, generation.raw
