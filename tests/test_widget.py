"""The embeddable widget on a real published docs site: Debian's Python 3.11 HTML docs served from
one loopback port with the widget's one tag injected, `citedocs serve` on another (so every call is
really cross-origin), driven in headless Chromium. Plus the CORS policy at the HTTP level."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import httpx
import pytest

from browser import headless_chromium, wait  # skips this module without Chromium
from conftest import SMALL_CORPUS
from docs_site import PYTHON_DOCS, serving_docs
from fake_llm import free_port
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

if not (PYTHON_DOCS / "library" / "json.html").is_file():
    if os.environ.get("CI"):
        raise RuntimeError(f"the widget tests need the Python docs at {PYTHON_DOCS}: apt-get install python3.11-doc")
    pytest.skip(f"needs the Python docs at {PYTHON_DOCS}: apt-get install python3.11-doc", allow_module_level=True)

ANSWERABLE = "How do I deploy my Astro site to Heroku?"
FOLLOW_UP = "Which file do I create in the root of my project for it?"
OUT_OF_SCOPE = "How should I tune PostgreSQL autovacuum for a write-heavy table?"
HOSTILE = "What image tag does the hostile page hold?"
PAGE = "/library/json.html"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
FINISHED = '.turn:not([data-state="streaming"])'


def widget_tag(server: str) -> str:
    return (
        f'<script src="{server}/widget.js" data-corpus="{SMALL_CORPUS}" data-title="Ask the Astro docs" '
        'data-accent="#0b7285" defer></script>'
    )


@pytest.fixture(scope="module")
def site(integration_server):
    """The docs site on the one origin the server allows."""
    with serving_docs(integration_server.allowed_port, widget_tag(integration_server.base)) as base:
        yield base


@pytest.fixture(scope="module")
def foreign_site(integration_server):
    """The same docs site on an origin the server does not allow."""
    with serving_docs(free_port(), widget_tag(integration_server.base)) as base:
        yield base


@pytest.fixture(scope="module")
def driver():
    with headless_chromium(1200, 900) as browser:
        yield browser


def open_page(driver, url: str):
    """Load a docs page and wait for the widget; returns its shadow root."""
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(1200, 900)
    driver.get(url)
    wait(driver, lambda d: d.execute_script("return document.getElementById('citedocs-widget')?.dataset.ready"), "the widget never loaded")
    return driver.find_element(By.ID, "citedocs-widget").shadow_root


def press_shortcut(driver) -> None:
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("k").key_up(Keys.CONTROL).perform()


def active_id(driver) -> str | None:
    return driver.execute_script("return document.getElementById('citedocs-widget').shadowRoot.activeElement?.id || null")


def dialog_open(driver) -> bool:
    return driver.execute_script("return document.getElementById('citedocs-widget').shadowRoot.querySelector('dialog').open")


def ask(driver, root, question: str, count: int):
    """Type a question into the widget and wait for the ``count``-th turn to finish."""
    box = root.find_element(By.CSS_SELECTOR, "#cd-question")
    box.send_keys(question + Keys.ENTER)
    wait(driver, lambda d: len(root.find_elements(By.CSS_SELECTOR, FINISHED)) >= count, f"no answer to {question!r}")
    return root.find_elements(By.CSS_SELECTOR, ".turn")[count - 1]


def test_a_reader_asks_follows_up_gets_a_refusal_and_sends_feedback_on_the_python_docs(driver, site, integration_server):
    root = open_page(driver, site + PAGE)
    assert not dialog_open(driver)
    press_shortcut(driver)
    assert dialog_open(driver) and active_id(driver) == "cd-question"

    first = ask(driver, root, ANSWERABLE, 1)
    assert first.get_attribute("data-state") == "answered"
    pills = first.find_elements(By.CSS_SELECTOR, ".answer .pill")
    cards = first.find_elements(By.CSS_SELECTOR, ".source-card")
    assert pills and cards and pills[0].text == "1"
    assert "Deploy your Astro Site to Heroku" in cards[0].text
    assert cards[0].find_element(By.CSS_SELECTOR, "a.source-url").get_attribute("href").startswith(
        "https://docs.astro.build/en/guides/deploy/heroku/"
    )
    pills[0].click()
    assert "selected" in cards[0].get_attribute("class")
    chunk = cards[0].find_element(By.CSS_SELECTOR, ".chunk-text")
    assert not chunk.is_displayed()
    cards[0].find_element(By.CSS_SELECTOR, "summary").click()
    assert chunk.is_displayed() and "Heroku" in chunk.text
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / "widget-answer.png"))

    second = ask(driver, root, FOLLOW_UP, 2)
    assert second.get_attribute("data-state") == "answered" and "static.json" in second.text

    third = ask(driver, root, OUT_OF_SCOPE, 3)
    assert third.get_attribute("data-state") == "refused"
    assert "Not covered by the docs" in third.find_element(By.CSS_SELECTOR, ".refusal-banner").text
    assert not third.find_elements(By.CSS_SELECTOR, ".pill, .source-card")
    driver.execute_script("arguments[0].scrollIntoView({block: 'end'})", third)
    driver.save_screenshot(str(SCREENSHOTS / "widget-refusal.png"))

    first.find_element(By.CSS_SELECTOR, ".thumb-up").click()
    first.find_element(By.CSS_SELECTOR, ".feedback-comment").send_keys("Found it on the Python docs site")
    first.find_element(By.CSS_SELECTOR, ".feedback-form button[type=submit]").click()
    wait(driver, lambda d: "Thanks" in first.find_element(By.CSS_SELECTOR, ".feedback-status").text, "feedback not confirmed")
    trace_id = first.find_element(By.CSS_SELECTOR, ".trace-id").text
    feedback = httpx.get(f"{integration_server.base}/traces/{trace_id}").json()["feedback"]
    assert [(f["verdict"], f["comment"]) for f in feedback] == [("up", "Found it on the Python docs site")]

    first.find_element(By.CSS_SELECTOR, ".copy-trace").click()
    wait(driver, lambda d: first.find_element(By.CSS_SELECTOR, ".copy-status").text, "trace copy gave no status")

    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    assert not dialog_open(driver)
    assert driver.execute_script("return document.getElementById('citedocs-widget').shadowRoot.activeElement.className") == "cd-launcher"


def test_focus_stays_in_the_dialog_and_controls_are_labelled(driver, site):
    root = open_page(driver, site + PAGE)
    launcher = root.find_element(By.CSS_SELECTOR, ".cd-launcher")
    assert launcher.get_attribute("aria-haspopup") == "dialog" and launcher.get_attribute("aria-expanded") == "false"
    launcher.click()
    assert launcher.get_attribute("aria-expanded") == "true"
    dialog = root.find_element(By.CSS_SELECTOR, "dialog")
    assert root.find_element(By.CSS_SELECTOR, f"#{dialog.get_attribute('aria-labelledby')}").text == "Ask the Astro docs"
    assert root.find_element(By.CSS_SELECTOR, "label[for=cd-question]").get_attribute("textContent")
    assert root.find_element(By.CSS_SELECTOR, ".cd-close").get_attribute("aria-label") == "Close"
    seen = set()
    for _ in range(8):  # more presses than the dialog has controls: focus must wrap, never leave
        ActionChains(driver).send_keys(Keys.TAB).perform()
        inside = driver.execute_script(
            "const r = document.getElementById('citedocs-widget').shadowRoot;"
            "return document.activeElement === r.host && r.querySelector('dialog').contains(r.activeElement)"
        )
        assert inside
        seen.add(driver.execute_script("const a = document.getElementById('citedocs-widget').shadowRoot.activeElement; return a.id || a.className"))
    assert {"cd-question", "icon-button cd-close"} <= seen
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    assert not dialog_open(driver)


def test_widget_fills_a_phone_screen(driver, site):
    root = open_page(driver, site + PAGE)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
    )
    press_shortcut(driver)
    ask(driver, root, ANSWERABLE, 1)
    width = driver.execute_script(
        "return document.getElementById('citedocs-widget').shadowRoot.querySelector('dialog').getBoundingClientRect().width"
    )
    assert width == 390
    overflow = driver.execute_script(
        "const b = document.getElementById('citedocs-widget').shadowRoot.querySelector('.cd-body'); return b.scrollWidth - b.clientWidth"
    )
    assert overflow <= 0
    driver.save_screenshot(str(SCREENSHOTS / "widget-phone.png"))


LAUNCHER_SHADOW_PX = 32  # widget.css: box-shadow 0 6px 20px reaches 26px past the launcher's box
PIXEL_DIFF = """
const [a, b, box, done] = arguments;
const load = (src) => new Promise((ok) => { const i = new Image(); i.onload = () => ok(i); i.src = src; });
Promise.all([load(a), load(b)]).then(([x, y]) => {
  if (x.width !== y.width || x.height !== y.height) return done(-1);
  const data = (img) => { const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
    const g = c.getContext('2d'); g.drawImage(img, 0, 0); return g.getImageData(0, 0, img.width, img.height).data; };
  const p = data(x), q = data(y);
  let differing = 0;
  for (let yy = 0; yy < x.height; yy++) for (let xx = 0; xx < x.width; xx++) {
    if (xx >= box.left && xx < box.right && yy >= box.top && yy < box.bottom) continue;
    const k = (yy * x.width + xx) * 4;
    if (p[k] !== q[k] || p[k + 1] !== q[k + 1] || p[k + 2] !== q[k + 2]) differing++;
  }
  done(differing);
});
"""


def settle_layout(driver) -> None:
    """Lay the host page out the same way on every load before comparing two loads. Chromium decides
    per load whether a code block's horizontal scrollbar shows (the page's own nondeterminism, not
    the widget's: the same plain page measured 12,672 / 12,687 / 12,702 px tall across loads, its
    shell-session <pre> blocks 123 or 138 px), so both loads get the same rule hiding those
    scrollbars, then wait for web fonts and a height unchanged for half a second."""
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const style = document.createElement('style');"
        "style.textContent = 'pre { overflow: hidden !important; }';"
        "document.head.appendChild(style);"
        "document.fonts.ready.then(() => {"
        "  let last = -1, same = 0, tries = 0;"
        "  const tick = () => {"
        "    const h = document.documentElement.scrollHeight;"
        "    same = h === last ? same + 1 : 0; last = h;"
        "    if (same >= 5 || ++tries > 100) done(true); else setTimeout(tick, 100);"
        "  };"
        "  tick();"
        "});"
    )


def test_the_host_page_looks_exactly_the_same_with_the_launcher_closed(driver, site):
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(1200, 900)
    driver.get(site + PAGE + "?plain")
    wait(driver, lambda d: d.execute_script("return document.readyState") == "complete", "page did not load")
    settle_layout(driver)
    plain = driver.get_screenshot_as_base64()
    plain_height = driver.execute_script("return document.documentElement.scrollHeight")
    root = open_page(driver, site + PAGE)
    settle_layout(driver)
    tagged = driver.get_screenshot_as_base64()
    assert driver.execute_script("return document.documentElement.scrollHeight") == plain_height
    launcher = driver.execute_script(
        "const r = document.getElementById('citedocs-widget').shadowRoot.querySelector('.cd-launcher').getBoundingClientRect();"
        f"const m = {LAUNCHER_SHADOW_PX};"
        "return {left: Math.floor(r.left) - m, top: Math.floor(r.top) - m, right: Math.ceil(r.right) + m, bottom: Math.ceil(r.bottom) + m}"
    )
    ratio = driver.execute_script("return window.devicePixelRatio")
    box = {k: v * ratio for k, v in launcher.items()}
    driver.get("about:blank")
    differing = driver.execute_async_script(PIXEL_DIFF, "data:image/png;base64," + plain, "data:image/png;base64," + tagged, box)
    assert differing == 0
    assert root  # the widget was there (a launcher area was excluded, nothing else)
    (SCREENSHOTS / "widget-closed.png").write_bytes(base64.b64decode(tagged))


def test_a_site_not_in_cors_origins_cannot_use_the_widget(driver, foreign_site):
    root = open_page(driver, foreign_site + PAGE)  # the assets are public; the API is not
    press_shortcut(driver)
    wait(driver, lambda d: root.find_elements(By.CSS_SELECTOR, ".error-message"), "no notice about the refused origin")
    assert "may not be allowed" in root.find_element(By.CSS_SELECTOR, ".error-message").text
    turn = ask(driver, root, ANSWERABLE, 1)
    assert turn.get_attribute("data-state") == "error"
    assert not turn.find_elements(By.CSS_SELECTOR, ".pill, .source-card")


def test_markup_in_a_doc_is_shown_as_text_and_never_runs(driver, site):
    root = open_page(driver, site + PAGE)
    press_shortcut(driver)
    turn = ask(driver, root, HOSTILE, 1)
    assert turn.get_attribute("data-state") == "answered"
    assert '<img src=x onerror="window.__citedocsXss=1">' in turn.find_element(By.CSS_SELECTOR, ".answer").text
    card = turn.find_element(By.CSS_SELECTOR, ".source-card")
    assert '<img src=x onerror="window.__citedocsXss=3">' in card.find_element(By.CSS_SELECTOR, ".card-title").text
    card.find_element(By.CSS_SELECTOR, "summary").click()
    assert "javascript:window.__citedocsXss=2" in card.find_element(By.CSS_SELECTOR, ".chunk-text").text
    for link in card.find_elements(By.CSS_SELECTOR, "a"):
        assert link.get_attribute("href").startswith("https://")
    assert not root.find_elements(By.CSS_SELECTOR, "img, script, iframe, a[href^='javascript:']")
    for link in card.find_elements(By.CSS_SELECTOR, ".chunk-text"):
        link.click()  # clicking the quoted link text does nothing either
    assert driver.execute_script("return window.__citedocsXss === undefined")


# ---------------------------------------------------------------- CORS at the HTTP level


def test_cors_allows_only_the_configured_origin(integration_server):
    base, allowed = integration_server.base, integration_server.allowed_origin
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}

    ok = httpx.options(f"{base}/ask/stream", headers={"Origin": allowed, **preflight})
    assert ok.status_code == 204
    assert ok.headers["access-control-allow-origin"] == allowed and "content-type" in ok.headers["access-control-allow-headers"]
    answered = httpx.post(f"{base}/ask", json={"question": ANSWERABLE}, headers={"Origin": allowed}, timeout=120)
    assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == allowed

    refused = httpx.options(f"{base}/ask/stream", headers={"Origin": "https://evil.example", **preflight})
    assert refused.status_code == 403 and refused.json()["error"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in refused.headers
    unread = httpx.get(f"{base}/corpora", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in unread.headers  # the browser will not let that page read it

    no_origin = httpx.get(f"{base}/corpora")  # curl, servers, same-origin pages: unaffected
    assert no_origin.status_code == 200 and "access-control-allow-origin" not in no_origin.headers

    for asset in ("/widget.js", "/static/chat.js", "/static/app.css"):
        public = httpx.get(f"{base}{asset}", headers={"Origin": "https://evil.example"})
        assert public.status_code == 200 and public.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize("value", ["*", "docs.example.com", "https://docs.example.com/path"])
def test_a_bad_cors_origin_setting_is_a_clear_error(value, monkeypatch):
    from citedocs import config

    monkeypatch.setenv("CITEDOCS_CORS_ORIGINS", value)
    with pytest.raises(config.ConfigError, match="scheme://host"):
        config.setting("cors_origins")
