"""Publishable keys: a key safe to put in a public page for the widget. Against a real `citedocs
serve` with keys required: it answers only the widget's routes, only from its own origins (the
request's Origin, which a page cannot forge), is rate-limited per visitor IP, and stops at revocation."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from citedocs.auth import secret_sha256
from citedocs.cli import app as cli
from citedocs.index.sqlite import SQLiteStore
from citedocs.service import InvalidKeyOrigins, Services

from conftest import BACKENDS, SMALL_CORPUS, copy_of_small_home, open_services, running_server, stored_rows

SITE = "https://docs.example.com"  # the page that embeds the widget with the publishable key
OTHER_SITE = "https://evil.example"
RATE_LIMIT = 20  # per minute; the rate-limit test exhausts it from its own loopback addresses
QUESTION = "How do I deploy my Astro site to Heroku?"
PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}


def bearer(secret: str, origin: str | None = SITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", **({"Origin": origin} if origin else {})}


def from_address(address: str) -> httpx.Client:
    """A client whose requests come from ``address`` (any 127.x.y.z is loopback): another visitor."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=120)


@pytest.fixture(scope="module")
def home(small_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the small corpus's home (its keys must not leak into the other modules' server)."""
    return copy_of_small_home(small_home, tmp_path_factory.mktemp("publishable-home"))


@pytest.fixture(scope="module")
def services(home: Path):
    services = Services.open(home / "citedocs.sqlite3")
    yield services
    services.store.close()


@pytest.fixture(scope="module")
def keys(services) -> dict[str, str]:
    return {
        "publishable": services.create_key("default", "widget", publishable=True, origins=[SITE])[1],
        "full": services.create_key("default", "backend")[1],
    }


@pytest.fixture(scope="module")
def server(home: Path, keys) -> str:
    env = {
        "CITEDOCS_DATABASE_URL": "",
        "CITEDOCS_AUTH": "required",
        "CITEDOCS_CORS_ORIGINS": "",  # no static origin: only the keys' own open the API to pages
        "CITEDOCS_RATE_LIMIT_PER_MINUTE": str(RATE_LIMIT),
    }
    with running_server(home, **env) as (base, _):
        yield base


def test_a_publishable_key_answers_the_widget_from_its_own_origin(server, keys):
    key = keys["publishable"]
    assert key.startswith("cdp_")
    corpora = httpx.get(f"{server}/corpora", headers=bearer(key))
    assert corpora.status_code == 200 and corpora.json()["default"] == SMALL_CORPUS
    assert corpora.headers["access-control-allow-origin"] == SITE  # the page may read it

    answer = httpx.post(f"{server}/ask", json={"question": QUESTION}, headers=bearer(key), timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.json()["citations"] and answer.headers["access-control-allow-origin"] == SITE

    with httpx.stream("POST", f"{server}/ask/stream", json={"question": QUESTION}, headers=bearer(key), timeout=120) as stream:
        assert stream.status_code == 200
        assert "event: final" in stream.read().decode()

    trace_id = answer.json()["trace_id"]
    feedback = httpx.post(f"{server}/traces/{trace_id}/feedback", json={"verdict": "up"}, headers=bearer(key))
    assert feedback.status_code == 200 and feedback.json()["status"] == "stored"


@pytest.mark.parametrize("origin", [OTHER_SITE, None, SITE + ".evil.example"])
def test_a_publishable_key_is_refused_from_any_other_origin_or_without_one(server, keys, origin):
    refused = httpx.post(f"{server}/ask", json={"question": QUESTION}, headers=bearer(keys["publishable"], origin))
    assert refused.status_code == 403
    body = refused.json()
    assert body["error"] == "origin_not_allowed_for_key" and SITE in body["detail"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/traces/{trace_id}", None),
        ("GET", "/v1/models", None),
        ("POST", "/v1/chat/completions", {"model": SMALL_CORPUS, "messages": [{"role": "user", "content": QUESTION}]}),
        ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ],
)
def test_a_publishable_key_is_refused_on_every_route_the_widget_does_not_use(server, keys, method, path, body):
    answer = httpx.post(f"{server}/ask", json={"question": QUESTION}, headers=bearer(keys["full"]), timeout=120)
    url = server + path.format(trace_id=answer.json()["trace_id"])
    origin = None if path == "/mcp" else SITE  # /mcp refuses any page's origin before keys are read
    mcp_headers = {"Accept": "application/json, text/event-stream"}
    refused = httpx.request(method, url, json=body, headers={**bearer(keys["publishable"], origin), **mcp_headers}, timeout=120)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == "publishable_key_not_allowed"
    assert "full API key" in refused.json()["detail"]
    if path == "/traces/{trace_id}":  # the same route with a full key still answers
        assert httpx.get(url, headers=bearer(keys["full"], None)).status_code == 200


def test_preflight_passes_from_a_publishable_keys_origin_only(server):
    allowed = httpx.options(f"{server}/ask/stream", headers={"Origin": SITE, **PREFLIGHT})
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == SITE
    assert "authorization" in allowed.headers["access-control-allow-headers"]
    refused = httpx.options(f"{server}/ask/stream", headers={"Origin": OTHER_SITE, **PREFLIGHT})
    assert refused.status_code == 403 and refused.json()["error"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in refused.headers


def test_a_revoked_publishable_key_and_its_origin_are_refused_at_once(server, services):
    old_site = "https://old-docs.example.com"
    key, secret = services.create_key("default", "old site", publishable=True, origins=[old_site])
    assert httpx.options(f"{server}/ask", headers={"Origin": old_site, **PREFLIGHT}).status_code == 204
    assert httpx.get(f"{server}/corpora", headers=bearer(secret, old_site)).status_code == 200

    services.revoke_key(key.key_id)
    refused = httpx.get(f"{server}/corpora", headers=bearer(secret, old_site))
    assert refused.status_code == 403 and refused.json()["error"] == "revoked_api_key"
    assert httpx.options(f"{server}/ask", headers={"Origin": old_site, **PREFLIGHT}).status_code == 403


def test_a_publishable_key_is_rate_limited_per_visitor_ip_not_per_key(server, keys):
    key = keys["publishable"]
    with from_address("127.0.0.2") as visitor, from_address("127.0.0.3") as other_visitor:
        for _ in range(3 * RATE_LIMIT):  # the bucket refills while this runs, but slower than it spends
            limited = visitor.get(f"{server}/corpora", headers=bearer(key))
            if limited.status_code != 200:
                break
        assert limited.status_code == 429 and limited.json()["error"] == "rate_limited"
        assert other_visitor.get(f"{server}/corpora", headers=bearer(key)).status_code == 200  # same key, own bucket
        assert visitor.get(f"{server}/corpora", headers=bearer(keys["full"], None)).status_code == 200  # full keys: per key


@pytest.mark.parametrize("store_backend", BACKENDS)
def test_a_publishable_key_is_stored_as_sha256_with_its_scope_and_origins(request, store_backend, tmp_path):
    services = open_services(request, store_backend, tmp_path, "publishable")
    try:
        key, secret = services.create_key("acme", "widget", publishable=True, origins=[SITE, "http://LOCALHOST:4321/"])
        rows = stored_rows(services, "SELECT * FROM api_keys WHERE key_id = ?", (key.key_id,))
        assert len(rows) == 1 and secret not in " ".join(str(v) for v in rows[0])
        assert secret_sha256(secret) in rows[0]
        assert services.store.find_api_key(secret_sha256(secret)) == key
        assert key.scope == "publishable" and key.origins == (SITE, "http://localhost:4321")
        assert services.publishable_origins() == {SITE, "http://localhost:4321"}
        services.revoke_key(key.key_id)
        assert services.publishable_origins() == frozenset()
        full, _ = services.create_key("acme")
        assert full.scope == "full" and full.origins == () and not full.publishable
    finally:
        services.store.close()


@pytest.mark.parametrize(
    ("publishable", "origins", "problem"),
    [(True, [], "needs the origins"), (False, [SITE], "only to publishable"), (True, ["*"], "not an origin"), (True, [SITE + "/widget"], "not an origin")],
)
def test_a_publishable_key_without_valid_origins_is_a_clear_error(tmp_path, publishable, origins, problem):
    services = Services.open(tmp_path / "citedocs.sqlite3")
    with pytest.raises(InvalidKeyOrigins, match=problem):
        services.create_key("acme", publishable=publishable, origins=origins)
    assert services.keys() == []  # nothing half-created
    services.store.close()


def test_keys_cli_creates_a_publishable_key_and_lists_its_scope_and_origins(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEDOCS_HOME", str(tmp_path))
    monkeypatch.delenv("CITEDOCS_DATABASE_URL", raising=False)
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    missing = runner.invoke(cli, ["keys", "create", "--tenant", "acme", "--publishable"], env=env)
    assert missing.exit_code == 2 and "--origin" in missing.output
    created = runner.invoke(
        cli, ["keys", "create", "--tenant", "acme", "--publishable", "--origin", SITE, "--origin", "https://beta.example.com"], env=env
    )
    assert created.exit_code == 0, created.output
    assert "cdp_" in created.stdout
    listed = runner.invoke(cli, ["keys", "list"], env=env)
    assert "publishable" in listed.output and SITE in listed.output and "https://beta.example.com" in listed.output


def test_a_database_from_before_publishable_keys_keeps_its_keys_as_full_keys(tmp_path):
    path = tmp_path / "citedocs.sqlite3"
    with sqlite3.connect(path) as db:  # the api_keys table as earlier releases created it
        db.execute(
            "CREATE TABLE api_keys (key_id TEXT PRIMARY KEY, secret_sha256 TEXT NOT NULL UNIQUE, tenant TEXT NOT NULL,"
            " name TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT)"
        )
        db.execute("INSERT INTO api_keys VALUES ('key_old', ?, 'acme', 'old', '2026-01-01T00:00:00+00:00', NULL)", (secret_sha256("cd_old"),))
    store = SQLiteStore(path)
    try:
        old = store.find_api_key(secret_sha256("cd_old"))
        assert old is not None and old.scope == "full" and old.origins == () and old.tenant == "acme"
    finally:
        store.close()


def test_the_widget_answers_with_a_publishable_key_on_a_page_of_its_origin(server, services):
    """The widget in Chromium on Debian's Python docs, its tag holding a publishable key for the
    page's origin: it lists corpora, streams an answer and sends feedback, all with that key."""
    from docs_site import PYTHON_DOCS, serving_docs

    if not (PYTHON_DOCS / "library" / "json.html").is_file():
        pytest.skip(f"needs the Python docs at {PYTHON_DOCS}: apt-get install python3.11-doc")
    from browser import headless_chromium  # skips without Chromium (fails under CI)
    from fake_llm import free_port
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    port = free_port()
    _, secret = services.create_key("default", "python docs", publishable=True, origins=[f"http://127.0.0.1:{port}"])
    tag = f'<script src="{server}/widget.js" data-corpus="{SMALL_CORPUS}" data-key="{secret}" defer></script>'
    with serving_docs(port, tag) as site, headless_chromium(1200, 900) as driver:
        until = WebDriverWait(driver, 90, poll_frequency=0.1).until
        driver.get(site + "/library/json.html")
        until(lambda d: d.execute_script("return document.getElementById('citedocs-widget')?.dataset.ready"))
        root = driver.find_element(By.ID, "citedocs-widget").shadow_root
        ActionChains(driver).key_down(Keys.CONTROL).send_keys("k").key_up(Keys.CONTROL).perform()
        root.find_element(By.CSS_SELECTOR, "#cd-question").send_keys(QUESTION + Keys.ENTER)
        until(lambda d: root.find_elements(By.CSS_SELECTOR, '.turn:not([data-state="streaming"])'))
        turn = root.find_element(By.CSS_SELECTOR, ".turn")
        assert turn.get_attribute("data-state") == "answered", turn.text
        assert turn.find_elements(By.CSS_SELECTOR, ".answer .pill") and not root.find_elements(By.CSS_SELECTOR, ".error-message")
        turn.find_element(By.CSS_SELECTOR, ".thumb-up").click()
        turn.find_element(By.CSS_SELECTOR, ".feedback-form button[type=submit]").click()
        until(lambda d: "Thanks" in turn.find_element(By.CSS_SELECTOR, ".feedback-status").text)
