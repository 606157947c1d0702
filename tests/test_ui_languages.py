"""The chat page, the widget and the console in the user's language, in headless Chromium against a
real `citedocs serve`: the page's own words in the page's language, the words around an answer in
the answer's, the quoted docs as written."""

from __future__ import annotations

import os

import pytest

from conftest import running_server

pytestmark = pytest.mark.slow

from browser import headless_chromium, wait  # noqa: E402  (skips this module without Chromium)
from docs_site import PYTHON_DOCS, serving_docs  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from conftest import SMALL_CORPUS  # noqa: E402

ANSWERABLE = "How do I load a different .env file, e.g. .env.staging, when I run the dev server or build?"
RUSSIAN_OFF_TOPIC = "Сколько варить яйцо всмятку?"  # how long to boil a soft egg
DONE = '.turn:not([data-state="streaming"])'


@pytest.fixture(scope="module")
def server(astro_services):
    with running_server(astro_services.store.path.parent, CITEDOCS_BACKEND="extractive") as (base, _):
        yield base


@pytest.fixture(scope="module")
def driver():
    with headless_chromium() as browser:
        yield browser


def open_chat(driver, url: str):
    driver.get(url)
    wait(driver, lambda d: d.execute_script("return !!window.citedocs"), "the chat page did not start")


def ask(driver, root, question: str, count: int):
    box = root.find_element(By.CSS_SELECTOR, "#question, #cd-question")
    box.send_keys(question + Keys.ENTER)
    wait(driver, lambda d: len(root.find_elements(By.CSS_SELECTOR, DONE)) >= count, f"no answer to {question!r}")
    return root.find_elements(By.CSS_SELECTOR, ".turn")[count - 1]


def test_the_chat_page_speaks_the_language_it_is_given_and_quotes_the_docs_as_written(driver, server):
    open_chat(driver, server + "/?lang=ru")
    assert driver.execute_script("return document.documentElement.lang") == "ru"
    assert driver.find_element(By.CSS_SELECTOR, "#empty-state h2").text == "Спросите документацию"
    assert driver.find_element(By.ID, "send").text == "Спросить"
    assert driver.find_element(By.CSS_SELECTOR, "#empty-state p").text.endswith("Уточняющие вопросы учитывают контекст беседы.")
    assert driver.find_element(By.ID, "question").get_attribute("placeholder") == "Задайте вопрос по документации…"
    turn = ask(driver, driver, ANSWERABLE, 1)
    assert turn.get_attribute("data-state") == "answered" and turn.get_attribute("lang") == "ru"
    assert "--mode" in turn.find_element(By.CSS_SELECTOR, ".answer").text  # the English docs, as written
    heading = turn.find_element(By.CSS_SELECTOR, ".sources h3").get_attribute("textContent")  # shown in capitals
    assert heading == "Источник" or heading.startswith("Источники ("), heading
    assert turn.find_element(By.CSS_SELECTOR, ".feedback .meta-label").get_attribute("textContent") == "Полезно?"


def test_a_russian_question_is_refused_in_russian_on_an_english_page(driver, server):
    open_chat(driver, server + "/")
    assert driver.find_element(By.CSS_SELECTOR, "#empty-state h2").text == "Ask the docs"  # the browser's language
    turn = ask(driver, driver, RUSSIAN_OFF_TOPIC, 1)
    assert turn.get_attribute("data-state") == "refused" and turn.get_attribute("lang") == "ru"
    assert turn.find_element(By.CSS_SELECTOR, ".refusal-title").get_attribute("textContent") == "В документации этого нет"
    assert turn.find_element(By.CSS_SELECTOR, ".answer").text.startswith("Я не могу ответить на это по документации astro:")


def test_the_console_frame_is_in_the_language_it_is_given(driver, server):
    driver.get(server + "/admin?lang=ja")
    wait(driver, lambda d: d.execute_script("return !!(window.citedocsAdmin && window.citedocsAdmin.ready)"), "the console did not start")
    assert driver.find_element(By.CSS_SELECTOR, "#sign-in h2").text == "コンソールを開く"
    assert driver.find_element(By.CSS_SELECTOR, "label[for=admin-key]").text == "管理者キー"
    assert driver.execute_script("return document.getElementById('tab-traces').textContent") == "トレース一覧"
    assert driver.execute_script("return document.querySelector('#insights-since option[value=\"7d\"]').textContent") == "過去 7 日"
    assert driver.execute_script("return document.getElementById('tabs').getAttribute('aria-label')") == "コンソールのセクション"


@pytest.mark.skipif(not (PYTHON_DOCS / "library" / "json.html").is_file() and not os.environ.get("CI"), reason="needs python3.11-doc")
def test_the_widget_speaks_its_data_language_attribute(driver, integration_server):
    tag = f'<script src="{integration_server.base}/widget.js" data-corpus="{SMALL_CORPUS}" data-language="ru" defer></script>'
    with serving_docs(integration_server.allowed_port, tag) as site:
        driver.get(site + "/library/json.html")
        wait(driver, lambda d: d.execute_script("return document.getElementById('citedocs-widget')?.dataset.ready"), "no widget")
        root = driver.find_element(By.ID, "citedocs-widget").shadow_root
        launcher = root.find_element(By.CSS_SELECTOR, ".cd-launcher")
        assert launcher.find_element(By.CSS_SELECTOR, ".cd-launcher-label").text == "Спросить ИИ"
        launcher.click()
        assert root.find_element(By.CSS_SELECTOR, "#cd-title").text == "Спросите документацию"
        assert root.find_element(By.CSS_SELECTOR, ".cd-intro").text.startswith("Ответы цитируют только то, что написано в документации")
        answered = ask(driver, root, "How do I deploy my Astro site to Heroku?", 1)
        assert answered.get_attribute("data-state") == "answered"
        assert "Heroku" in answered.find_element(By.CSS_SELECTOR, ".answer").text
        assert answered.find_element(By.CSS_SELECTOR, ".source-card summary").get_attribute("textContent") == "Показать источник"
        refused = ask(driver, root, "How should I tune PostgreSQL autovacuum for a write-heavy table?", 2)
        assert refused.get_attribute("data-state") == "refused"  # an English question, answered in the widget's Russian
        assert refused.find_element(By.CSS_SELECTOR, ".refusal-title").get_attribute("textContent") == "В документации этого нет"
        assert refused.find_element(By.CSS_SELECTOR, ".answer").text.startswith(f"Я не могу ответить на это по документации {SMALL_CORPUS}:")
