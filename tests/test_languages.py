"""What citedocs itself says is in the user's language: the catalogs are complete and faithful, the
language is chosen as documented (request field, then Accept-Language, then the question, then
English), and the HTTP API, the OpenAI-compatible facade and MCP say it in that language while the
quoted docs text stays as written."""

from __future__ import annotations

import gettext
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po
from fastapi.testclient import TestClient

from citedocs import i18n
from citedocs.api.app import create_app
from citedocs.api.openai_facade import ChatCompletionRequest, to_ask_request
from citedocs.service import Services

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = [lang for lang in i18n.LANGUAGES if lang != i18n.SOURCE_LANGUAGE]
PLACEHOLDER = re.compile(r"\{(\w*)[^{}]*\}")
RUSSIAN_OFF_TOPIC = "Сколько варить яйцо всмятку?"  # how long to boil a soft egg: nothing in the Astro docs
ANSWERABLE = "How do I load a different .env file, e.g. .env.staging, when I run the dev server or build?"


def catalog(language: str):
    with open(i18n.LOCALE_DIR / language / "LC_MESSAGES" / "citedocs.po", "rb") as f:
        return read_po(f, locale=language)


def template_ids() -> set[str]:
    with open(i18n.LOCALE_DIR / "citedocs.pot", "rb") as f:
        return {m.id for m in read_po(f) if m.id}


# ---------------------------------------------------------------- the catalogs


def test_the_supported_languages_are_at_least_the_promised_eight():
    assert {"en", "ru", "zh", "ja", "es", "de", "fr", "pt"} <= set(i18n.LANGUAGES)


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_language_has_its_source_and_compiled_catalog(language):
    folder = i18n.LOCALE_DIR / language / "LC_MESSAGES"
    assert (folder / "citedocs.po").is_file() and (folder / "citedocs.mo").is_file(), f"{folder}: run `make messages`"


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_message_is_translated_and_none_is_fuzzy(language):
    messages = [m for m in catalog(language) if m.id]
    assert {m.id for m in messages} == template_ids(), f"{language}: run `make messages` and translate the new msgids"
    untranslated = [m.id for m in messages if not m.string or m.fuzzy]
    assert not untranslated, f"{language} lacks translations of {untranslated}"


@pytest.mark.parametrize("language", TRANSLATED)
def test_a_translation_keeps_exactly_the_placeholders_of_its_msgid(language):
    for message in catalog(language):
        if message.id:
            assert sorted(PLACEHOLDER.findall(message.string)) == sorted(PLACEHOLDER.findall(message.id)), (language, message.id)


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_committed_mo_says_what_its_po_says(language):
    folder = i18n.LOCALE_DIR / language / "LC_MESSAGES"
    with open(folder / "citedocs.mo", "rb") as f:
        compiled = {m.id: m.string for m in read_mo(f) if m.id}
    assert compiled == {m.id: m.string for m in catalog(language) if m.id}, f"{folder}: run `make messages` to recompile"


def test_the_template_holds_every_string_the_code_says(tmp_path):
    """The extraction `make messages` runs, run again: a string added to the code without being
    extracted (and so translated) fails here."""
    keywords = re.search(r"^BABEL_KEYWORDS = (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    out = tmp_path / "fresh.pot"
    pybabel = Path(sys.executable).parent / "pybabel"
    subprocess.run(
        [str(pybabel), "extract", "-F", "babel.cfg", *keywords, "-o", str(out), "."], cwd=ROOT, check=True, capture_output=True
    )
    with open(out, "rb") as f:
        fresh = {m.id for m in read_po(f) if m.id}
    assert fresh == template_ids(), f"new: {fresh - template_ids()}, gone: {template_ids() - fresh}; run `make messages`"
    assert "Sources" in fresh and "I can't answer this from the {corpus} docs: " in fresh


def test_a_missing_catalog_is_an_error_not_silent_english(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n._catalog.cache_clear()
    try:
        with pytest.raises(FileNotFoundError):
            i18n.translate("ru", "Sources")
    finally:
        monkeypatch.undo()
        i18n._catalog.cache_clear()


# ---------------------------------------------------------------- which language


@pytest.mark.parametrize(
    "header, language",
    [
        ("ru-RU,ru;q=0.9,en;q=0.8", "ru"),
        ("pt-BR", "pt"),
        ("zh-TW,zh;q=0.8", "zh"),
        ("fr;q=0, de-CH;q=0.7, it", "de"),  # Italian first, but citedocs does not speak it; French refused (q=0)
        ("it, nl;q=0.5", "en"),  # languages named, none spoken: English
        ("*", None),  # no preference: the question's language decides
        ("", None),
        (None, None),
    ],
)
def test_accept_language_is_negotiated_to_a_language_citedocs_speaks(header, language):
    assert i18n.negotiate(header) == language


def test_the_request_overrides_the_question_and_an_unsupported_language_is_english():
    assert i18n.choose_language(None, "ru") == "ru"
    assert i18n.choose_language("ja", "ru") == "ja"
    assert i18n.choose_language("pt-BR", "en") == "pt"
    assert i18n.choose_language(None, "uk") == "en"  # Ukrainian is detected, but has no catalog
    assert i18n.choose_language("it", "ru") == "en"  # asked for, not spoken: English, not the question's
    assert i18n.requested_language("es", "de") == "es" and i18n.requested_language(None, "de") == "de"


def test_a_message_is_english_as_text_and_translated_on_demand():
    detail = i18n.Message("the docs don't mention {terms}.", terms="Vue")
    assert f"{detail}" == "the docs don't mention Vue."  # what refusal_reason and the traces carry
    assert detail.in_language("ru") == "в документации не упоминается Vue."
    assert detail.in_language("xx") == str(detail)
    said = i18n.Message.verbatim("Документация об этом молчит.")  # a model's own words stay as written
    assert said.in_language("de") == said.in_language("en") == "Документация об этом молчит."


# ---------------------------------------------------------------- over HTTP, the facade, MCP


@pytest.fixture(scope="module")
def client(astro_services) -> TestClient:
    return TestClient(create_app(Services(store=astro_services.store, backend="extractive")))


@pytest.mark.slow
def test_a_russian_question_is_refused_in_russian(client):
    body = client.post("/ask", json={"question": RUSSIAN_OFF_TOPIC}).json()
    assert body["refused"] is True and body["language"] == "ru"
    assert body["answer"].startswith("Я не могу ответить на это по документации astro: "), body["answer"]
    code, _, detail = body["refusal_reason"].partition(": ")
    assert code == "question_language_not_read"  # the Astro corpus is embedded for English questions alone
    assert detail.isascii()  # the reason stays English for operators and the insights
    trace = client.get(f"/traces/{body['trace_id']}").json()
    assert trace["question_language"] == "ru" and trace["language"] == "ru"


@pytest.mark.slow
def test_accept_language_overrides_the_question_language(client):
    body = client.post("/ask", json={"question": RUSSIAN_OFF_TOPIC}, headers={"Accept-Language": "de-DE,de;q=0.9"}).json()
    assert body["language"] == "de" and body["answer"].startswith("Ich kann das nicht aus der Dokumentation von astro beantworten: ")
    # the request's own field overrides the header
    body = client.post(
        "/ask", json={"question": RUSSIAN_OFF_TOPIC, "language": "ja"}, headers={"Accept-Language": "de"}
    ).json()
    assert body["language"] == "ja" and body["answer"].startswith("astro のドキュメントからはこの質問に回答できません：")
    # "*": no preference, so the question's language decides
    body = client.post("/ask", json={"question": RUSSIAN_OFF_TOPIC}, headers={"Accept-Language": "*"}).json()
    assert body["language"] == "ru"


@pytest.mark.slow
def test_an_unsupported_language_is_answered_in_english(client):
    body = client.post("/ask", json={"question": RUSSIAN_OFF_TOPIC, "language": "it"}).json()
    assert body["language"] == "en" and body["answer"].startswith("I can't answer this from the astro docs: ")
    bad = client.post("/ask", json={"question": RUSSIAN_OFF_TOPIC, "language": "not a tag"})
    assert bad.status_code == 422 and "language" in bad.json()["detail"]


@pytest.mark.slow
def test_the_quoted_docs_stay_in_their_language_around_translated_words(client):
    body = client.post("/ask", json={"question": ANSWERABLE}, headers={"Accept-Language": "ru"}).json()
    assert body["refused"] is False and body["language"] == "ru"
    assert "--mode" in body["answer"] and not re.search(r"[А-я]", body["answer"])  # the English docs, quoted as written
    reply = client.post(
        "/v1/chat/completions", json={"model": "astro", "messages": [{"role": "user", "content": ANSWERABLE}]},
        headers={"Accept-Language": "ru"},
    ).json()
    content = reply["choices"][0]["message"]["content"]
    assert "\n\n**Источники**\n1. [" in content and "**Sources**" not in content
    assert reply["citedocs"]["language"] == "ru"


@pytest.mark.slow
def test_the_facade_refuses_in_the_language_its_body_names(client):
    reply = client.post(
        "/v1/chat/completions",
        json={"model": "astro", "language": "fr", "messages": [{"role": "user", "content": RUSSIAN_OFF_TOPIC}]},
    ).json()
    assert reply["choices"][0]["message"]["content"].startswith("Je ne peux pas répondre à cela à partir de la documentation de astro : ")


def test_a_follow_up_drops_the_sources_of_a_reply_in_any_language():
    earlier = f"Ответ [1].\n\n**{i18n.translate('ru', 'Sources')}**\n1. [Page](<https://x/a>)"
    request = to_ask_request(
        ChatCompletionRequest(
            model="astro",
            messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": earlier}, {"role": "user", "content": "и ещё?"}],
        ),
        "ja",
    )
    assert request.history[1].content == "Ответ [1]." and request.language == "ja"


@pytest.mark.slow
def test_the_browser_strings_come_in_the_asked_language(client):
    ru = client.get("/ui/messages", params={"language": "ru"}).json()
    assert ru["language"] == "ru" and ru["messages"]["Not covered by the docs"] == "В документации этого нет"
    chinese = client.get("/ui/messages", headers={"Accept-Language": "zh-CN"})
    assert chinese.json()["language"] == "zh" and chinese.headers["vary"] == "Accept-Language"
    assert client.get("/ui/messages", params={"language": "../../etc/passwd"}).json()["language"] == "en"
    assert client.get("/ui/messages").json() == {"language": "en", "messages": {}}  # the msgids are the English


@pytest.mark.slow
def test_mcp_ask_docs_refuses_in_the_language_it_is_given(astro_services):
    import anyio
    from mcp import ClientSession  # noqa: F401  (the SDK the server is built on)

    from citedocs.mcp_server import build_server

    services = Services(store=astro_services.store, backend="extractive")
    server = build_server(lambda: services)

    async def call():
        return await server.call_tool("ask_docs", {"question": RUSSIAN_OFF_TOPIC, "language": "es"})

    result = anyio.run(call)
    text = str(result)
    assert "No puedo responder a esto con la documentación de astro: " in text, text[:500]


@pytest.mark.slow
def test_a_fabricated_russian_claim_from_a_model_is_dropped_and_the_refusal_is_russian(astro_services):
    from fake_llm import running_fake_llm  # an adversarial model (fault injection), not a quality measure

    from citedocs.generate.openai_compat import EndpointConfig, OpenAICompatibleGenerator

    chunk = "guides/environment-variables#env-files/1"
    with running_fake_llm() as (fake, url):
        services = Services(store=astro_services.store)
        services.__dict__["generator"] = OpenAICompatibleGenerator(EndpointConfig(url, "fake", None, 5.0))
        client = TestClient(create_app(services))
        # "astro dev --mode staging deletes every page of the site": shares identifiers with the chunk, says what it does not
        fake.reply = f"Команда `astro dev --mode staging` удаляет все страницы сайта и файл `.env.staging` [{chunk}]."
        body = client.post("/ask", json={"question": ANSWERABLE, "language": "ru"}).json()
        assert body["refused"] is True and body["citations"] == [] and "удаляет" not in body["answer"]
        assert body["answer"] == "Я не могу ответить на это по документации astro: ни одно предложение не прошло проверку."
        fake.reply = "NO_ANSWER: в документации не сказано, как удалить сайт"
        body = client.post("/ask", json={"question": ANSWERABLE, "language": "ru"}).json()
        assert body["answer"] == "Я не могу ответить на это по документации astro: в документации не сказано, как удалить сайт."
        assert body["refusal_reason"].startswith("model_declined: ")


# ---------------------------------------------------------------- the LLM's prompt


def _chunk(text: str):
    from citedocs.types import Chunk

    return Chunk("guide/x#a/1", "guide/x.md", "X", ("A",), "a", ("a",), "https://x/guide/x#a", text, 20)


RUSSIAN_CHUNK = "Чтобы включить карту сайта, добавьте параметр sitemap с адресом hostname в файл конфигурации."
ENGLISH_CHUNK = "To enable the sitemap, add the sitemap option with a hostname to your config file."


def test_the_prompt_asks_for_the_questions_language_when_the_docs_are_in_it():
    from citedocs.generate.prompt import answer_messages

    system = answer_messages("Как включить карту сайта?", [_chunk(RUSSIAN_CHUNK)], [])[0]["content"]
    assert system.endswith("Write every sentence in Russian, including a sentence saying what the docs do not cover.")


def test_the_prompt_asks_for_the_docs_own_words_when_the_question_is_in_another_language():
    from citedocs.generate.prompt import language_rule

    rule = language_rule("Как включить карту сайта?", [_chunk(ENGLISH_CHUNK)])
    assert "Write every answer sentence in English, in the chunks' own words, never translated" in rule
    assert "do not cover is in Russian" in rule
    assert "in Russian, in the chunks' own words" in language_rule("How do I enable the sitemap?", [_chunk(RUSSIAN_CHUNK)])


def test_an_english_question_over_english_docs_gets_the_prompt_as_it_was():
    from citedocs.generate.prompt import answer_messages, language_rule

    assert language_rule("How do I enable the sitemap?", [_chunk(ENGLISH_CHUNK)]) == ""
    assert answer_messages("How do I enable the sitemap?", [_chunk(ENGLISH_CHUNK)], [])[0]["content"].rstrip().endswith("</chunks>")


def test_a_built_package_carries_every_catalog():
    import fnmatch
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["citedocs"]
    package = ROOT / "src" / "citedocs"
    for language in TRANSLATED:
        for name in ("citedocs.mo", "citedocs.po"):
            path = (i18n.LOCALE_DIR / language / "LC_MESSAGES" / name).relative_to(package).as_posix()
            assert any(fnmatch.fnmatch(path, p) for p in patterns), f"{path} is not in the package data {patterns}"
