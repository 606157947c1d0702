"""The citation validator against adversarial model outputs (real bi-encoder, hand-built chunks)."""

from __future__ import annotations

import pytest

from citedocs.contract import RefusalReason
from citedocs.models.encoders import bi_encoder
from citedocs.sentences import Unit, settled_units, split_units
from citedocs.types import Chunk, ChunkId
from citedocs.markers import parse_markers
from citedocs.validate.question import code_parts, contains_sequence, starts_command_line, unsupported_question_terms
from citedocs.text import content_terms
from citedocs.validate.support import SupportChecker
from citedocs.validate.thresholds import load_thresholds
from citedocs.validate.validator import CitationValidator

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
RETRIEVED = [ENV_FILES, DEFAULTS]


@pytest.fixture(scope="module")
def validator() -> CitationValidator:
    return CitationValidator(SupportChecker(bi_encoder(), load_thresholds()))


def test_well_formed_marker_groups_are_parsed():
    parsed = parse_markers("Use the flag [a/b#c/1, d#e/2] [f#/3].")
    assert parsed.ids == ["a/b#c/1", "d#e/2", "f#/3"]
    assert parsed.text == "Use the flag."
    assert not parsed.malformed


@pytest.mark.parametrize(
    "near_miss",
    ["[1]", "[[guides/environment-variables#env-files/1]]", "(guides/environment-variables#env-files/1)",
     "[source: guides/environment-variables#env-files/1]", "[guides/environment-variables#env-files]"],
)
def test_near_miss_markers_are_removed_not_honoured(near_miss):
    parsed = parse_markers(f"Load it with the mode flag {near_miss}.")
    assert parsed.ids == []
    assert parsed.malformed == [near_miss]
    assert "#" not in parsed.text and "[1]" not in parsed.text


def test_ordinary_brackets_are_left_alone():
    assert parse_markers("The note is labelled [Deprecated] in the docs.").text == "The note is labelled [Deprecated] in the docs."


def test_invented_chunk_id_never_reaches_user(validator):
    raw = (
        "You can load `.env` files from your project directory [guides/environment-variables#env-files/1]. "
        "Astro also reads secrets from a vault automatically [guides/secrets#vault/1]."
    )
    result = validator.validate(raw, RETRIEVED)
    assert "guides/secrets#vault/1" not in result.answer
    assert all("guides/secrets#vault/1" not in s.ids for s in result.sentences)
    invented = [d for d in result.decisions if d.invented]
    assert invented and invented[0].action == "dropped"


def test_uncited_sentence_is_dropped(validator):
    raw = (
        "Run `astro dev --mode staging` to load the matching `.env` file [guides/environment-variables#env-files/1]. "
        "Most teams keep staging secrets in a separate vault."
    )
    result = validator.validate(raw, RETRIEVED)
    assert "vault" not in result.answer
    assert result.refusal is None
    assert [d.reason for d in result.decisions if d.action == "dropped"] == ["no valid citation"]


def test_real_id_on_unsupported_claim_is_dropped(validator):
    raw = "Use the `--env-file` flag to point Astro at any dotenv file [guides/environment-variables#env-files/1]."
    result = validator.validate(raw, RETRIEVED)
    assert result.refusal == RefusalReason.nothing_verifiable
    assert "env_file" in result.decisions[0].reason


def test_claim_cited_to_the_wrong_retrieved_chunk_is_recited(validator):
    raw = "`import.meta.env.PROD` is `true` if your site is running in production [guides/environment-variables#env-files/1]."
    result = validator.validate(raw, RETRIEVED)
    assert result.refusal is None
    assert result.sentences[0].ids == [DEFAULTS.id]
    assert result.decisions[0].action == "recited"


def test_negated_claim_is_not_supported_by_positive_text(validator):
    raw = "Environment variables cannot be loaded from `.env` files in your project directory [guides/environment-variables#env-files/1]."
    result = validator.validate(raw, RETRIEVED)
    assert result.refusal == RefusalReason.nothing_verifiable


def test_code_must_come_from_a_retrieved_chunk(validator):
    raw = (
        "Use the `--mode` flag to load the matching `.env` file [guides/environment-variables#env-files/1].\n"
        "```shell\nastro dev --mode staging\n```\n"
        "```shell\nastro dev --turbo\n```"
    )
    result = validator.validate(raw, RETRIEVED)
    assert "--mode staging" in result.answer
    assert "--turbo" not in result.answer


def test_no_answer_protocol_becomes_a_refusal(validator):
    result = validator.validate("NO_ANSWER: the docs do not describe GraphQL support", RETRIEVED)
    assert result.refusal == RefusalReason.model_declined
    assert "GraphQL" in result.refusal_detail


def test_only_markers_and_filler_is_a_refusal(validator):
    result = validator.validate("Sure! [guides/environment-variables#env-files/1]", RETRIEVED)
    assert result.refusal == RefusalReason.nothing_verifiable


def test_markers_after_the_period_stay_with_their_sentence(validator):
    raw = (
        "Environment variables can be loaded from `.env` files in your project directory. "
        "[guides/environment-variables#env-files/1] "
        "`import.meta.env.DEV` is `true` if your site is running in development. "
        "[guides/environment-variables#default-environment-variables/1]"
    )
    result = validator.validate(raw, RETRIEVED)
    assert [s.ids for s in result.sentences] == [[ENV_FILES.id], [DEFAULTS.id]]


def test_paraphrased_but_faithful_claim_is_kept(validator):
    raw = "You can name a file .env.staging and pick it with the --mode flag [guides/environment-variables#env-files/1]."
    result = validator.validate(raw, RETRIEVED)
    assert result.refusal is None
    assert result.sentences[0].ids == [ENV_FILES.id]


STREAMED_OUTPUTS = [
    # a real claim, an invented id, a near-miss marker, an uncited sentence, copied code, a half marker
    f"Add a mode name to the file name, e.g. `.env.staging` [{ENV_FILES.id}]. "
    "Secrets can also live in the Astro Cloud vault [guides/astro-cloud#vault/1]. "
    f"`import.meta.env.PROD` is `true` in production [1].\nThis is common practice.\n"
    f"```shell\nastro dev --mode staging\n```\n[{ENV_FILES.id}]\n"
    f"`import.meta.env.DEV` is `true` if your site is running in development [{DEFAULTS.id}",
    f"Pass the `--mode` flag to load the matching `.env` file [{ENV_FILES.id}] [{DEFAULTS.id}]",
    "NO_ANSWER: the docs do not cover staging hosts",
]


@pytest.mark.parametrize("raw", STREAMED_OUTPUTS)
@pytest.mark.parametrize("piece", [1, 7, 40])
def test_streamed_validation_matches_validating_the_whole_answer(validator, raw, piece):
    session = validator.session(RETRIEVED)
    text, fed, streamed = "", 0, []
    for start in range(0, len(raw), piece):
        text += raw[start : start + piece]
        settled = settled_units(text)
        streamed += [s for s in map(session.feed, settled[fed:]) if s is not None]
        fed = len(settled)
    streamed += [s for s in map(session.feed, split_units(text)[fed:]) if s is not None]
    whole = validator.validate(raw, RETRIEVED)
    assert session.finish(raw) == whole
    if whole.refusal is None:
        assert streamed == whole.sentences


def test_a_sentence_is_not_settled_while_its_marker_is_still_arriving():
    assert settled_units("Pass the flag. [guides/env#a") == []
    assert settled_units("Pass the flag. [guides/env#a/1] Then") == [
        Unit("Pass the flag. [guides/env#a/1]")
    ]
    assert settled_units("Run this:\n```shell\nastro dev\n") == []


class ChunksProbe:
    """The question gate's corpus look-ups over an in-memory list of chunks (a two-chunk corpus)."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks

    def mentions(self, term: str) -> bool:
        return any(term in content_terms(c.text) for c in self.chunks)

    def has_sequence(self, parts: list[str]) -> bool:
        return any(contains_sequence(code_parts(c.text), parts) for c in self.chunks)

    def runs_program(self, program: str) -> bool:
        return any(starts_command_line(program, c.text) for c in self.chunks)


def test_option_the_docs_lack_is_named_as_the_user_wrote_it():
    question = "How do I use the client:hover directive to hydrate on mouse over?"
    assert unsupported_question_terms(question, RETRIEVED, ChunksProbe(RETRIEVED)).all == ["client:hover"]


def test_quoted_code_that_appears_nowhere_in_the_corpus_is_flagged():
    question = "What does `astro dev --staging-only` do?"
    assert unsupported_question_terms(question, RETRIEVED, ChunksProbe(RETRIEVED)).all == ["astro dev --staging-only"]


def test_the_users_own_paths_and_values_are_not_looked_up():
    question = "Can I load `config/.env.qa` with `--mode` and read `import.meta.env.PROD`?"
    assert unsupported_question_terms(question, RETRIEVED, ChunksProbe(RETRIEVED)).all == []


def test_contractions_and_possessives_are_not_proper_names():
    question = "On my Mac, why does my IDE's terminal show nothing when I'm loading a .env file?"
    assert unsupported_question_terms(question, RETRIEVED, ChunksProbe(RETRIEVED)).all == ["Mac"]


def test_files_and_names_the_user_introduces_are_never_looked_up():
    # the user's own code, their own component name and their own folder: absent from any docs
    for question in (
        "Can I write `for key in keys if key := env.get(key)` before I pass `--mode`?",
        "I load a component called `mybanner` and the `--mode` flag is ignored. Why?",
        "Every page in my docs/api/ folder should load `.env.staging`. Which flag do I pass?",
    ):
        assert unsupported_question_terms(question, RETRIEVED, ChunksProbe(RETRIEVED)).all == [], question


def test_an_environment_variable_the_docs_never_name_is_flagged_one_they_name_is_not():
    probe = ChunksProbe(RETRIEVED)
    assert unsupported_question_terms("How do I set the temperature with ASTRO_TEMPERATURE?", RETRIEVED, probe).all == ["ASTRO_TEMPERATURE"]
    assert unsupported_question_terms("Does astro dev read the DEV mode from `import.meta.env.DEV`?", RETRIEVED, probe).all == []


def test_a_name_the_user_introduces_is_never_looked_up_in_any_language():
    probe = ChunksProbe(RETRIEVED)
    for question in (
        "Я зарегистрировал глобальный компонент с именем `mybanner`, и флаг `--mode` не работает. Почему?",
        "Warum wird meine Komponente namens `mybanner` mit `--mode` ignoriert?",
        "Pourquoi mon composant nommé `mybanner` ignore-t-il `--mode` ?",
        "¿Por qué mi componente llamado `mybanner` ignora `--mode`?",
        "Por que o meu componente chamado `mybanner` ignora `--mode`?",
        "为什么名为 `mybanner` 的组件会忽略 `--mode`？",
        "`mybanner`というコンポーネントで `--mode` が無視されるのはなぜですか？",
    ):
        assert unsupported_question_terms(question, RETRIEVED, probe).all == [], question
    # a name nobody introduced is still looked up, in Russian as in English
    assert unsupported_question_terms("Как включить `mybanner` вместе с `--mode`?", RETRIEVED, probe).all == ["mybanner"]


def test_names_in_a_sentence_that_states_the_users_situation_are_not_looked_up():
    probe = ChunksProbe(RETRIEVED)
    stated = "My CLI has --json and --csv flags, and I edit settings.yaml on my Mac. Which flag sets the mode?"
    assert unsupported_question_terms(stated, RETRIEVED, probe).all == []
    asked = "My CLI has --json flags. How do I pass --csv to astro dev, i.e. on my Mac?"
    assert unsupported_question_terms(asked, RETRIEVED, probe).all == ["--csv", "Mac"]
    assert unsupported_question_terms("Explain the client:hover directive. Show an example.", RETRIEVED, probe).all == [
        "client:hover"
    ]  # no sentence asks with "?": every sentence counts


def test_another_programs_command_line_is_not_a_false_premise_but_the_documented_ones_is():
    probe = ChunksProbe(RETRIEVED)
    assert unsupported_question_terms("How do I run `pybabel extract` on my pages?", RETRIEVED, probe).all == []
    assert unsupported_question_terms("What does `astro dev --watch-all` do?", RETRIEVED, probe).all == [
        "astro dev --watch-all"
    ]  # `astro` is named in the docs: its made-up flag is still refused


def test_an_api_name_written_without_backticks_must_exist_in_the_docs():
    probe = ChunksProbe(RETRIEVED)
    question = "How do I read import.meta.env.STAGING_ONLY with the @env.load_mode decorator?"
    assert unsupported_question_terms(question, RETRIEVED, probe).all == ["import.meta.env.STAGING_ONLY", "@env.load_mode"]
    assert unsupported_question_terms("What is import.meta.env.PROD in a build?", RETRIEVED, probe).all == []


def test_a_keyword_argument_the_docs_never_name_is_a_false_premise():
    probe = ChunksProbe(RETRIEVED)
    question = "How do I pass the timeout= argument to astro dev so a slow build gives up?"
    assert unsupported_question_terms(question, RETRIEVED, probe).all == ["timeout="]
    assert unsupported_question_terms("Is there a mode= setting for astro dev?", RETRIEVED, probe).all == []
    # inside a call the user writes, the argument is theirs (the call itself is looked up as an API name)
    own_call = "How do I make load_env(retries=3) read the .env file for staging mode?"
    assert "retries=" not in unsupported_question_terms(own_call, RETRIEVED, probe).all


def test_a_language_or_country_name_is_the_users_value_not_an_unknown_product():
    probe = ChunksProbe(RETRIEVED)
    locales = "How do I load a .env file per locale, with English as default plus Spanish and Brazilian Portuguese?"
    assert unsupported_question_terms(locales, RETRIEVED, probe).all == []
    product = "How do I load a .env file from Doppler, with English as default plus Spanish?"
    assert unsupported_question_terms(product, RETRIEVED, probe).all == ["Doppler"]


def test_proper_names_are_read_per_sentence_as_the_asking_rule_splits_them():
    from citedocs.validate.question import _proper_names

    # a sentence's first word is no name; a period inside backticks ends no sentence, and code is no name
    assert _proper_names("It builds. Vercel then shows a 404 on Netlify, i.e. Cloudflare too?") == ["Netlify"]
    assert _proper_names("Why does `npm run build. Deploy` fail on Vercel?") == ["Vercel"]


PREVIEW = Chunk(
    id=ChunkId("reference/cli-reference#astro-preview/1"),
    doc_path="reference/cli-reference.mdx",
    title="CLI Commands",
    heading_path=("astro preview",),
    anchor="astro-preview",
    anchor_path=("astro-preview",),
    url="https://docs.astro.build/en/reference/cli-reference/#astro-preview",
    text="Starts a local server to serve your built site.\n\n```shell\nastro preview --open\n```",
    token_count=20,
)


def test_a_term_the_docs_have_outside_the_retrieved_passages_is_not_called_missing_from_the_docs():
    probe = ChunksProbe([*RETRIEVED, PREVIEW])  # the corpus has --open; the passages retrieved do not
    found = unsupported_question_terms("How do I pass --open when I load the .env file?", RETRIEVED, probe)
    assert (found.absent, found.elsewhere) == ([], ["--open"])
    nowhere = unsupported_question_terms("How do I pass --close when I load the .env file?", RETRIEVED, probe)
    assert (nowhere.absent, nowhere.elsewhere) == (["--close"], [])


def test_terms_are_named_as_the_user_wrote_them():
    probe = ChunksProbe(RETRIEVED)
    question = "Can I set pipelining=True or @Env.LoadMode when astro dev loads the .env file?"
    assert unsupported_question_terms(question, RETRIEVED, probe).absent == ["@Env.LoadMode", "pipelining=True"]


def test_a_command_line_written_without_backticks_must_exist_in_the_docs():
    probe = ChunksProbe([*RETRIEVED, PREVIEW])
    for question in ("How do I run astro backup?", "What does the astro backup command do to my .env files?"):
        assert unsupported_question_terms(question, RETRIEVED, probe).absent == ["astro backup"], question
    assert unsupported_question_terms("Can I run astro preview --offline?", RETRIEVED, probe).absent == [
        "astro preview --offline"
    ]  # a documented command with a flag the docs never give it
    for question in (
        "How do I run astro dev?",  # documented
        "How do I run astro preview for my built site?",  # documented, in a passage not retrieved
        "Can I run pytest on my .env files?",  # another tool's command: the user's own
        "How do I run astro builds behind a proxy?",  # words, not a command line
        "How do I run variables checks?",  # the docs name variables but never run them as a program
    ):
        assert unsupported_question_terms(question, RETRIEVED, probe).absent == [], question


def test_a_lowercase_tool_name_the_docs_never_use_is_a_false_premise():
    probe = ChunksProbe([*RETRIEVED, PREVIEW])
    assert unsupported_question_terms("Can I run astro dev with gevent?", RETRIEVED, probe).absent == ["gevent"]
    assert unsupported_question_terms("Which gevent worker loads the .env file?", RETRIEVED, probe).absent == ["gevent"]
    for question in ("How do I load the .env file with astro dev?", "How do I start a local server with the --mode flag?"):
        assert unsupported_question_terms(question, RETRIEVED, probe).absent == [], question
