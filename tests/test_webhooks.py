"""The signed webhook on a real `citedocs serve`: the signature covers timestamp, delivery id and body
(GitHub's: the body, its replay key the body's digest), a request without a timestamp or with a
captured signature under a new id changes nothing, GitHub's ping, other events and pushes to
other branches start no sync, no header value is answered with a 500, and two servers on one
PostgreSQL admit one webhook rate together."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citedocs.service import Services
from citedocs.sync import webhook
from citedocs.sync.service import Syncs

from conftest import ASTRO_BASE_URL, SMALL_CORPUS, copy_of_small_home, running_server

MAIN = "refs/heads/main"
# what an HTTP header value may hold (h11: visible ASCII, spaces inside, and obs-text 0x80-0xFF)
HEADER_TEXT = st.text(st.characters(codec="latin-1", categories=("L", "N", "P", "S", "Zs")), max_size=60).map(str.strip)
TIMESTAMPS = st.one_of(
    HEADER_TEXT,
    st.integers().map(str),
    st.integers(min_value=1, max_value=6000).map(lambda n: "9" * n),
    st.sampled_from(["²", "¹²³", "½", "1e9", "0x10", "+1", "-1", "1_000", str(int(time.time())), ""]),
)


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def site(small_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The small corpus read from a git working tree whose source names its branch (main), with a
    webhook secret and an admin key."""
    home = copy_of_small_home(small_home, tmp_path_factory.mktemp("webhooks-home"))
    docs = home / "docs"
    shutil.copytree(small_home / "docs", docs)
    _git(docs, "init", "-q", "-b", "main")
    _git(docs, "add", "-A")
    _git(docs, "-c", "user.name=docs", "-c", "user.email=docs@example.com", "commit", "-q", "-m", "docs")
    services = Services.open(home / "citedocs.sqlite3")
    syncs = Syncs(services)
    syncs.set_source(SMALL_CORPUS, "git", str(docs), {"base_url": ASTRO_BASE_URL, "branch": "main"})
    secret = syncs.rotate_webhook_secret(SMALL_CORPUS)
    admin = services.create_key("default", "ops", admin=True)[1]
    services.store.close()
    return {"home": home, "secret": secret, "admin": admin}


@pytest.fixture(scope="module")
def server(site) -> str:
    env = {"CITEDOCS_DATABASE_URL": "", "CITEDOCS_AUTH": "off", "CITEDOCS_WEBHOOK_RATE_PER_MINUTE": "100000", "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0"}
    with running_server(site["home"], **env) as (base, _):
        yield base


def hook(server: str, body: bytes, headers: dict[str, str | bytes]) -> httpx.Response:
    return httpx.post(f"{server}/hooks/corpora/{SMALL_CORPUS}", content=body, headers=headers, timeout=30)


def signed(secret: str, body: bytes, delivery: str | None = None, timestamp: str | None = None) -> dict[str, str]:
    """citedocs' own scheme, as a deploy script signs it."""
    timestamp = timestamp or str(int(time.time()))
    delivery = delivery or str(uuid.uuid4())
    return {
        "X-Citedocs-Signature": webhook.sign(secret, body, timestamp, delivery),
        "X-Citedocs-Timestamp": timestamp,
        "X-Citedocs-Delivery": delivery,
    }


def from_github(secret: str, body: bytes, event: str = "push") -> dict[str, str]:
    """What GitHub sends: the body's signature, the event, a delivery GUID (not signed)."""
    return {"X-Hub-Signature-256": webhook.sign_github(secret, body), "X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4())}


def push(ref: str = MAIN, pushed_at: int | None = None) -> bytes:
    """A GitHub push event's payload (the fields citedocs reads, and what makes each push unique)."""
    return json.dumps({
        "ref": ref,
        "before": uuid.uuid4().hex + "00000000",
        "after": uuid.uuid4().hex + "00000000",
        "repository": {"full_name": "acme/docs", "pushed_at": int(time.time()) if pushed_at is None else pushed_at},
        "pusher": {"name": "octocat"},
    }).encode()


def jobs(server: str, site: dict) -> list[str]:
    """The ids of the corpus's sync jobs, newest first."""
    return [j["id"] for j in httpx.get(f"{server}/admin/jobs", headers={"Authorization": f"Bearer {site['admin']}"}).json()["jobs"]]


def accepted(response: httpx.Response) -> dict:
    assert response.status_code in (200, 202), response.text
    assert response.json()["job"]["corpus"] == SMALL_CORPUS, response.text
    return response.json()["job"]


def test_a_captured_request_under_a_new_delivery_id_changes_nothing(server, site):
    body = json.dumps({"ref": MAIN}).encode()
    headers = signed(site["secret"], body)
    accepted(hook(server, body, headers))
    before = jobs(server, site)
    renamed = hook(server, body, {**headers, "X-Citedocs-Delivery": str(uuid.uuid4())})
    assert renamed.status_code == 401 and renamed.json()["error"] == "signature_mismatch"
    again = hook(server, body, headers)
    assert again.status_code == 409 and again.json()["error"] == "replayed_delivery"
    assert jobs(server, site) == before


def test_a_delivery_id_cannot_take_in_part_of_the_signed_body(server, site):
    """The signed message is '<timestamp>.<id>.<body>': an id with a dot could move the boundary
    (a new id under the captured signature), so ids are letters, digits, '-' and '_' only."""
    body = b"release-1.2"
    headers = signed(site["secret"], body, delivery="d-abc")
    shifted = hook(server, b"2", {**headers, "X-Citedocs-Delivery": "d-abc.release-1"})
    assert shifted.status_code == 400 and shifted.json()["error"] == "delivery_id_missing"


def test_a_request_without_a_timestamp_is_refused_and_told_how_to_sign(server, site):
    before = jobs(server, site)
    body = json.dumps({"ref": MAIN}).encode()
    untimed = {k: v for k, v in signed(site["secret"], body).items() if k != "X-Citedocs-Timestamp"}
    response = hook(server, body, untimed)
    assert response.status_code == 400 and response.json()["error"] == "timestamp_missing"
    assert "x-citedocs-timestamp" in response.json()["detail"] and "<timestamp>.<delivery id>.<raw body>" in response.json()["detail"]
    # the body alone signed, as before, by a sender that is not GitHub: no timestamp, no trust
    body_only = {"X-Hub-Signature-256": webhook.sign_github(site["secret"], body), "X-Citedocs-Delivery": str(uuid.uuid4())}
    response = hook(server, body, body_only)
    assert response.status_code == 400 and response.json()["error"] == "timestamp_missing"
    assert jobs(server, site) == before


@pytest.mark.parametrize("timestamp", [b"\xb2", b"9" * 5000, b"-5", b"1e9", b"\xbd"], ids=["superscript-two", "5000-digits", "negative", "exponent", "one-half"])
def test_a_malformed_timestamp_gets_a_400_that_says_what_to_send(server, site, timestamp):
    body = b"{}"
    headers = {**signed(site["secret"], body), "X-Citedocs-Timestamp": timestamp}
    response = hook(server, body, headers)
    assert response.status_code == 400 and response.json()["error"] == "bad_timestamp"
    assert "Unix seconds" in response.json()["detail"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(timestamp=TIMESTAMPS, delivery=st.one_of(HEADER_TEXT, st.uuids().map(str)), scheme=st.sampled_from(["citedocs", "github"]))
def test_whatever_the_headers_hold_the_webhook_answers_never_with_a_500(server, site, timestamp, delivery, scheme):
    """Whatever the timestamp and delivery id hold, the answer is a clear 4xx, or for GitHub's
    scheme (the body signed alone) with a usable id, 200 ignored: a push to another branch."""
    body = push("refs/heads/elsewhere")
    headers: dict[str, str | bytes] = (
        {"X-Citedocs-Signature": webhook.sign(site["secret"], body, "0", "d"), "X-Citedocs-Timestamp": timestamp.encode("latin-1"), "X-Citedocs-Delivery": delivery.encode("latin-1")}
        if scheme == "citedocs"
        else {**from_github(site["secret"], body), "X-GitHub-Delivery": delivery.encode("latin-1"), "X-Citedocs-Timestamp": timestamp.encode("latin-1")}
    )
    response = hook(server, body, headers)
    assert response.status_code < 500, response.text
    assert response.json().get("error") or response.json().get("ignored"), response.text


@settings(max_examples=300, deadline=None)
@given(timestamp=st.text(max_size=40) | st.integers(min_value=1, max_value=6000).map(lambda n: "7" * n), delivery=st.text(max_size=40))
def test_verifying_any_header_text_is_an_answer_or_a_refusal_never_a_crash(timestamp, delivery):
    """The same over every Unicode string (digits of other scripts included), without HTTP's limits."""
    headers = {"x-citedocs-signature": "sha256=00", "x-citedocs-timestamp": timestamp, "x-citedocs-delivery": delivery}
    with pytest.raises(webhook.Refused) as refused:
        webhook.verify("whsec_x", b"{}", headers, 300)
    assert 400 <= refused.value.status < 500


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
PAYLOADS = st.one_of(
    st.binary(max_size=200),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"ref": JSON, "repository": st.fixed_dictionaries({"pushed_at": JSON | st.integers(min_value=-(10**400), max_value=10**400)})}).map(lambda v: json.dumps(v).encode()),
)


@settings(max_examples=300, deadline=None)
@given(body=PAYLOADS, event=st.sampled_from(["push", "ping", "issues", ""]) | st.text(max_size=20))
def test_any_signed_github_body_is_a_delivery_or_a_refusal_never_a_crash(body, event):
    headers = {"x-hub-signature-256": webhook.sign_github("whsec_x", body), "x-github-event": event, "x-github-delivery": "g"}
    try:
        webhook.check_applies(webhook.verify("whsec_x", body, headers, 300), "main")
    except webhook.Refused as refused:
        assert refused.status == 200 or 400 <= refused.status < 500


def test_githubs_ping_and_other_events_start_no_sync(server, site):
    before = jobs(server, site)
    ping = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    response = hook(server, ping, from_github(site["secret"], ping, "ping"))
    assert response.status_code == 200 and response.json()["job"] is None
    assert response.json()["ignored"].startswith("ignored: ping")
    issue = json.dumps({"action": "opened", "issue": {"title": "typo"}}).encode()
    response = hook(server, issue, from_github(site["secret"], issue, "issues"))
    assert response.status_code == 200 and response.json()["ignored"] == "ignored: event 'issues' does not start a sync; only push events do"
    unsigned = hook(server, ping, {"X-GitHub-Event": "ping", "X-GitHub-Delivery": str(uuid.uuid4())})
    assert unsigned.status_code == 401
    assert jobs(server, site) == before


def test_a_push_to_another_branch_starts_no_sync(server, site):
    before = jobs(server, site)
    other = push("refs/heads/dev")
    response = hook(server, other, from_github(site["secret"], other))
    assert response.status_code == 200 and response.json()["job"] is None
    assert response.json()["ignored"] == "ignored: branch 'dev' is not the source's branch 'main'"
    tag = push("refs/tags/v1.0")
    assert hook(server, tag, from_github(site["secret"], tag)).json()["ignored"] == "ignored: ref 'refs/tags/v1.0' is not the source's branch 'main'"
    deploy = json.dumps({"ref": "refs/heads/dev"}).encode()  # citedocs' own scheme, naming a ref in its body
    assert hook(server, deploy, signed(site["secret"], deploy)).json()["ignored"].startswith("ignored: branch 'dev'")
    assert jobs(server, site) == before


def test_a_github_push_syncs_once_and_its_replay_under_a_new_delivery_id_is_refused(server, site):
    body = push()
    accepted(hook(server, body, from_github(site["secret"], body)))
    replayed = hook(server, body, from_github(site["secret"], body))  # the same signed body, a fresh GUID
    assert replayed.status_code == 409 and replayed.json()["error"] == "replayed_delivery"


def test_a_github_push_older_than_the_replay_memory_is_refused(server, site):
    """Its digest may be forgotten after a day; its signed push time is not."""
    body = push(pushed_at=int(time.time()) - 2 * 86400)
    response = hook(server, body, from_github(site["secret"], body))
    assert response.status_code == 401 and response.json()["error"] == "stale_delivery"


pg_only = pytest.mark.parametrize("store_backend", ["postgres"], scope="session")


@pg_only
def test_two_servers_on_one_database_share_one_webhook_rate_limit(tmp_home, small_docs, tmp_path):
    for command in (["ingest", str(small_docs), "--corpus", "small"], ["sources", "webhook-secret", "small"]):
        done = subprocess.run([sys.executable, "-m", "citedocs.cli", *command], env=dict(os.environ), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    env = {"CITEDOCS_BACKEND": "extractive", "CITEDOCS_CORPUS": "small", "CITEDOCS_WEBHOOK_RATE_PER_MINUTE": "6", "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with running_server(tmp_path / "a", **env) as (first, _), running_server(tmp_path / "b", **env) as (second, _):
        # one client alternates between the two servers; unsigned, so each request is refused after the limit
        codes = [httpx.post(f"{(first, second)[i % 2]}/hooks/corpora/small", content=b"{}", timeout=30).status_code for i in range(10)]
    # six requests of burst for the client in all, not six per server
    assert codes == [401] * 6 + [429] * 4, codes
