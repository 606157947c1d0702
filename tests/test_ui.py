"""The web chat UI end to end: headless Chromium (Debian's package) against a real `citedocs serve`.

Needs `chromium` and `chromium-driver` from apt and `selenium` from pip (see .ci/run and tests/browser.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from conftest import running_server

pytestmark = pytest.mark.slow

from browser import headless_chromium  # noqa: E402  (skips this module without Chromium)
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ANSWERABLE = "How do I load a different .env file, e.g. .env.staging, when I run the dev server or build?"
FOLLOW_UP = "and how do I read those variables in client-side code?"
OUT_OF_SCOPE = "How should I tune PostgreSQL autovacuum for a write-heavy table?"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
DONE = '.turn:not([data-state="streaming"])'


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server(astro_services):
    with running_server(astro_services.store.path.parent, CITEDOCS_BACKEND="extractive") as (base, _):
        # warm the models up so the first browser test does not wait on loading them
        httpx.post(f"{base}/ask", json={"question": ANSWERABLE}, timeout=120).raise_for_status()
        yield base


@pytest.fixture(scope="module")
def guarded_server(tenant_services):
    """A real `citedocs serve` with auth required, over the two-tenant index; yields (url, acme's key)."""
    secret = tenant_services.create_key("acme", "browser test")[1]
    home = tenant_services.store.path.parent
    with running_server(home, CITEDOCS_BACKEND="extractive", CITEDOCS_AUTH="required") as (base, _):
        yield base, secret


@pytest.fixture(scope="module")
def driver():
    with headless_chromium() as browser:
        yield browser


@pytest.fixture
def page(driver, server):
    """A fresh load of the chat page at desktop size."""
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(1000, 1300)
    driver.get(server + "/")
    wait(driver, lambda d: d.execute_script("return !!window.citedocs"), "the app did not start")
    wait(driver, lambda d: not d.find_element(By.ID, "corpus-label").get_attribute("hidden")
         or d.find_element(By.ID, "corpus-picker").is_displayed(), "corpora never loaded")
    yield driver
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "/favicon" not in e["message"]]
    # 4xx answers the tests provoke on purpose show up as failed resources; anything else is a bug
    assert all("status of 4" in e["message"] for e in severe), severe


# ---------------------------------------------------------------- helpers


def wait(driver, condition, message, timeout=60):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        pytest.fail(f"{message}\n--- conversation ---\n{driver.find_element(By.ID, 'conversation').text}")


def ask(driver, question: str, count: int) -> "WebElement":
    """Type a question, press Enter, and return the count-th turn once its answer is complete."""
    box = driver.find_element(By.ID, "question")
    box.send_keys(question)
    box.send_keys(Keys.ENTER)
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, DONE)) >= count, f"no answer to {question!r}")
    return driver.find_elements(By.CSS_SELECTOR, ".turn")[count - 1]


def trace(server: str, trace_id: str) -> dict:
    response = httpx.get(f"{server}/traces/{trace_id}", timeout=10)
    response.raise_for_status()
    return response.json()


def no_horizontal_overflow(driver) -> list[str]:
    """Elements that stick out of the viewport sideways (content inside scrollers excepted)."""
    return driver.execute_script(
        """
        const width = document.documentElement.clientWidth;
        const out = [];
        if (document.documentElement.scrollWidth > width) out.push('document ' + document.documentElement.scrollWidth);
        for (const node of document.querySelectorAll('body *')) {
          if (node.closest('.visually-hidden, [hidden], .clipboard-helper')) continue;
          let inner = false;
          for (let p = node.parentElement; p && p !== document.body; p = p.parentElement) {
            const o = getComputedStyle(p).overflowX;
            if (o === 'auto' || o === 'scroll' || o === 'hidden') { inner = true; break; }
          }
          if (inner) continue;
          const r = node.getBoundingClientRect();
          if (r.width && (r.right > width + 1 || r.left < -1)) out.push(node.tagName + '.' + node.className + ' ' + r.left + '..' + r.right);
        }
        return out;
        """
    )


# ---------------------------------------------------------------- tests


def test_answer_is_streamed_with_pills_and_expandable_source_cards(page, server):
    turn = ask(page, ANSWERABLE, 1)
    assert turn.get_attribute("data-state") == "answered", turn.text
    assert int(turn.get_attribute("data-sentences") or 0) >= 1  # sentences arrived as SSE events first
    answer = turn.find_element(By.CSS_SELECTOR, ".answer")
    assert "--mode" in answer.text
    assert "[guides/" not in answer.text  # markers became pills, never raw text

    pills = answer.find_elements(By.CSS_SELECTOR, "button.pill")
    cards = turn.find_elements(By.CSS_SELECTOR, ".source-card")
    assert pills and cards
    cited = list(dict.fromkeys(p.get_attribute("data-cite-id") for p in pills))
    assert cited == [c.get_attribute("data-cite-id") for c in cards]  # numbered by first use = citations order
    assert [p.text for p in pills if p.get_attribute("data-cite-id") == cited[0]][0] == "1"
    assert "guides/environment-variables#env-files/1" in cited

    card = cards[0]
    assert "›" in card.find_element(By.CSS_SELECTOR, ".card-title").text
    link = card.find_element(By.CSS_SELECTOR, "a.source-url")
    assert link.get_attribute("href").startswith("https://docs.astro.build/en/") and "#" in link.get_attribute("href")
    assert link.get_attribute("target") == "_blank" and "noopener" in link.get_attribute("rel")
    assert card.find_element(By.CSS_SELECTOR, ".score").text.startswith("score ")

    # hovering a pill highlights its card; clicking it does too
    ActionChains(page).move_to_element(pills[0]).perform()
    assert "highlight" in card.get_attribute("class")
    ActionChains(page).move_to_element(page.find_element(By.ID, "question")).perform()
    assert "highlight" not in card.get_attribute("class")
    pills[0].click()
    assert "selected" in card.get_attribute("class") and page.switch_to.active_element == card

    # the exact chunk text is behind a "show source" disclosure
    details = card.find_element(By.CSS_SELECTOR, "details.chunk")
    chunk = details.find_element(By.CSS_SELECTOR, ".chunk-text")
    assert details.get_attribute("open") is None and not chunk.is_displayed()
    details.find_element(By.CSS_SELECTOR, "summary").click()
    assert details.get_attribute("open") is not None and chunk.is_displayed()
    body = httpx.post(f"{server}/ask", json={"question": ANSWERABLE}, timeout=60).json()
    expected = next(c["text"] for c in body["citations"] if c["id"] == cited[0])
    assert chunk.get_attribute("textContent") == expected

    trace_id = turn.find_element(By.CSS_SELECTOR, ".trace-id").text
    assert trace(server, trace_id)["question"] == ANSWERABLE

    page.execute_script("arguments[0].scrollIntoView({block: 'start'})", turn)
    page.execute_script("document.activeElement.blur()")
    time.sleep(0.4)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.save_screenshot(str(SCREENSHOTS / "answer.png"))


def test_follow_up_carries_the_conversation_as_history(page, server):
    first = ask(page, ANSWERABLE, 1)
    assert first.get_attribute("data-state") == "answered"
    second = ask(page, FOLLOW_UP, 2)
    assert second.get_attribute("data-state") in {"answered", "refused"}, second.text
    recorded = trace(server, second.find_element(By.CSS_SELECTOR, ".trace-id").text)
    assert recorded["question"] == FOLLOW_UP
    history = recorded["history"]
    assert [t["role"] for t in history] == ["user", "assistant"]
    assert history[0]["content"] == ANSWERABLE
    assert "--mode" in history[1]["content"] and "[guides/" not in history[1]["content"]


def test_a_suggested_follow_up_is_a_button_that_asks_it(page, server):
    first = ask(page, ANSWERABLE, 1)
    buttons = first.find_elements(By.CSS_SELECTOR, ".follow-ups .follow-up")
    recorded = trace(server, first.find_element(By.CSS_SELECTOR, ".trace-id").text)
    assert [b.text for b in buttons] == [s["question"] for s in recorded["suggestions"]] and buttons
    suggested = buttons[0].text
    buttons[0].click()
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, DONE)) >= 2, f"no answer to the suggestion {suggested!r}")
    second = page.find_elements(By.CSS_SELECTOR, ".turn")[1]
    assert trace(server, second.find_element(By.CSS_SELECTOR, ".trace-id").text)["question"] == suggested
    assert second.get_attribute("data-state") == "answered", second.text  # the corpus answers what it suggested


def test_out_of_scope_question_shows_a_refusal_banner_without_sources(page, server):
    turn = ask(page, OUT_OF_SCOPE, 1)
    assert turn.get_attribute("data-state") == "refused"
    banner = turn.find_element(By.CSS_SELECTOR, ".refusal-banner")
    assert banner.is_displayed() and "Not covered by the docs" in banner.text
    recorded = trace(server, turn.find_element(By.CSS_SELECTOR, ".trace-id").text)
    assert recorded["question"] == OUT_OF_SCOPE
    assert "I can't answer this from the astro docs" in turn.find_element(By.CSS_SELECTOR, ".answer").text
    assert not turn.find_elements(By.CSS_SELECTOR, ".source-card, .pill, .sources")
    page.set_window_size(1000, 760)
    page.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    time.sleep(0.4)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.save_screenshot(str(SCREENSHOTS / "refusal.png"))


def test_thumbs_down_with_a_comment_is_stored_on_the_trace(page, server):
    turn = ask(page, ANSWERABLE, 1)
    trace_id = turn.find_element(By.CSS_SELECTOR, ".trace-id").text
    turn.find_element(By.CSS_SELECTOR, "button.thumb-down").click()
    comment = turn.find_element(By.CSS_SELECTOR, ".feedback-comment")
    assert comment.is_displayed() and page.switch_to.active_element == comment
    comment.send_keys("the build example is missing")
    turn.find_element(By.CSS_SELECTOR, ".feedback-form button[type=submit]").click()
    status = turn.find_element(By.CSS_SELECTOR, ".feedback-status")
    wait(page, lambda d: "recorded" in status.text, "no feedback confirmation", timeout=15)
    assert "not helpful" in status.text
    feedback = trace(server, trace_id)["feedback"]
    assert feedback[-1]["verdict"] == "down" and feedback[-1]["comment"] == "the build example is missing"

    # the copy button either copies or selects the id, and says which
    turn.find_element(By.CSS_SELECTOR, "button.copy-trace").click()
    copy_status = turn.find_element(By.CSS_SELECTOR, ".copy-status")
    wait(page, lambda d: copy_status.text in {"Copied", "Selected — press Ctrl+C to copy"}, "copy gave no feedback", 5)


def test_unknown_corpus_from_the_picker_is_shown_as_a_readable_error(driver, server):
    # The server has one corpus; make /corpora report two so the picker shows, then pick the one that is not indexed.
    script = driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {
            "source": """
            const realFetch = window.fetch;
            window.fetch = async (url, init) => {
              if (String(url) === '/corpora') {
                const body = await (await realFetch(url, init)).json();
                body.corpora.push({name: 'nextjs', version: 'x', chunks: 12, updated_at: null});
                return new Response(JSON.stringify(body), {headers: {'Content-Type': 'application/json'}});
              }
              return realFetch(url, init);
            };
            """
        },
    )
    try:
        driver.set_window_size(1000, 1300)
        driver.get(server + "/")
        picker = driver.find_element(By.ID, "corpus-picker")
        wait(driver, lambda d: picker.is_displayed(), "the corpus picker did not appear for two corpora", 15)
        select = driver.find_element(By.ID, "corpus")
        options = [o.get_attribute("value") for o in select.find_elements(By.TAG_NAME, "option")]
        assert options == ["astro", "nextjs"] and select.get_attribute("value") == "astro"
        select.find_element(By.CSS_SELECTOR, "option[value=nextjs]").click()
        turn = ask(driver, ANSWERABLE, 1)
        assert turn.get_attribute("data-state") == "error"
        error = turn.find_element(By.CSS_SELECTOR, ".error-message")
        assert "HTTP 404" in error.text and "unknown corpus 'nextjs'" in error.text and "astro" in error.text
        assert error.get_attribute("role") == "alert"
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        driver.get_log("browser")  # drop the 404 this test provoked


def test_server_down_is_shown_as_a_readable_error(page):
    page.execute_cdp_cmd("Network.enable", {})
    page.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    try:
        turn = ask(page, ANSWERABLE, 1)
    finally:
        page.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        page.get_log("browser")  # the failed fetch is logged on purpose
    assert turn.get_attribute("data-state") == "error"
    error = turn.find_element(By.CSS_SELECTOR, ".error-message")
    assert "Could not reach the citedocs server" in error.text
    error.find_element(By.TAG_NAME, "button").click()  # "Try again" puts the question back
    assert page.find_element(By.ID, "question").get_attribute("value") == ANSWERABLE


def test_a_new_question_aborts_the_one_streaming(page, server):
    page.execute_script("citedocs.ask(arguments[0]); citedocs.ask(arguments[1]);", ANSWERABLE, OUT_OF_SCOPE)
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, DONE)) == 2, "the two questions did not settle")
    first, second = page.find_elements(By.CSS_SELECTOR, ".turn")
    assert first.get_attribute("data-state") == "aborted" and "Stopped" in first.text
    assert second.get_attribute("data-state") == "refused"
    assert trace(server, second.find_element(By.CSS_SELECTOR, ".trace-id").text)["history"] == []


def test_keyboard_and_accessibility_basics(page):
    box = page.find_element(By.ID, "question")
    assert page.find_element(By.CSS_SELECTOR, "label[for=question]").get_attribute("textContent").strip()
    assert page.find_element(By.ID, "conversation").get_attribute("aria-live") == "polite"
    assert page.switch_to.active_element == box
    box.send_keys("first line")
    ActionChains(page).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
    box.send_keys("second line")
    assert box.get_attribute("value") == "first line\nsecond line"
    assert not page.find_elements(By.CSS_SELECTOR, ".turn")  # Shift+Enter did not send
    assert page.find_element(By.ID, "send").tag_name == "button"
    # one corpus indexed: no picker, just a label
    assert not page.find_element(By.ID, "corpus-picker").is_displayed()
    assert "astro" in page.find_element(By.ID, "corpus-label").text


def test_phone_width_has_no_horizontal_scroll(page):
    page.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}
    )
    try:
        page.get(page.current_url)
        wait(page, lambda d: d.execute_script("return !!window.citedocs"), "the app did not start")
        assert page.execute_script("return document.documentElement.clientWidth") == 390
        assert no_horizontal_overflow(page) == []
        turn = ask(page, ANSWERABLE, 1)
        assert turn.get_attribute("data-state") == "answered"
        for summary in turn.find_elements(By.CSS_SELECTOR, "details.chunk summary"):
            page.execute_script("arguments[0].click()", summary)
        ask(page, OUT_OF_SCOPE, 2)
        assert no_horizontal_overflow(page) == []
        assert page.execute_script("return document.documentElement.scrollWidth") <= 390
        page.execute_script("arguments[0].scrollIntoView({block: 'start'}); document.activeElement.blur()", turn)
        time.sleep(0.3)
        page.save_screenshot(str(SCREENSHOTS / "answer-phone.png"))
    finally:
        page.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_with_auth_on_the_chat_asks_for_a_key_then_answers_from_that_tenants_docs(driver, guarded_server):
    base, secret = guarded_server
    driver.set_window_size(1000, 1300)
    driver.get(base + "/")
    key_box = wait(driver, lambda d: d.find_elements(By.ID, "api-key"), "no API key prompt", 30)[0]
    assert "requires an API key" in driver.find_element(By.CSS_SELECTOR, ".key-form").text
    key_box.send_keys("cd_wrong", Keys.ENTER)
    wait(driver, lambda d: "not known" in d.find_element(By.CSS_SELECTOR, ".key-form").text, "wrong key not explained", 30)
    driver.find_element(By.ID, "api-key").send_keys(secret, Keys.ENTER)
    label = driver.find_element(By.ID, "corpus-label")
    wait(driver, lambda d: label.text == "Docs: acme-docs", "the tenant's docs never loaded", 30)
    turn = ask(driver, "How do I deploy my Astro site to Heroku?", 1)
    assert turn.get_attribute("data-state") == "answered", turn.text
    cited = {p.get_attribute("data-cite-id") for p in turn.find_elements(By.CSS_SELECTOR, "button.pill")}
    assert cited and all(c.startswith(("guides/deploy/heroku#", "recipes/add-yaml-support#")) for c in cited)
    driver.execute_script("localStorage.clear()")
    driver.get_log("browser")  # drop the 401s this test provoked
