"""Slack and Discord, end to end against loopback stand-ins for their APIs (no network here): the
stand-ins check the bot token and the real payload shapes, and record what citedocs posts. Requests
to citedocs are signed as Slack (HMAC-SHA256, via slack_sdk) and Discord (Ed25519) sign them; bad,
old and replayed signatures are refused, a mention is answered in its thread with the cited answer
and its sources as links (a refusal too), and "Not helpful" is stored as the web UI's thumbs-down."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastapi.testclient import TestClient
from slack_sdk.signature import SignatureVerifier

from citedocs.api.app import create_app
from citedocs.service import Services

from conftest import copy_of_small_home

SIGNING_SECRET = "slack-signing-secret-for-tests"
BOT_TOKEN = "xoxb-test-token"
ANSWERABLE = "How do I deploy my Astro site to Heroku?"
OUT_OF_SCOPE = "How should I tune PostgreSQL autovacuum for a write-heavy table?"


class PlatformStandIn:
    """Slack's chat.postMessage and Discord's interaction webhook, on loopback (a stand-in)."""

    def __init__(self) -> None:
        self.posts: list[dict] = []
        self.edits: list[tuple[str, dict]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _reply(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict:
                return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

            def do_POST(self) -> None:
                if self.path != "/api/chat.postMessage":
                    return self._reply(404, {"ok": False, "error": "unknown_method"})
                if self.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
                    return self._reply(200, {"ok": False, "error": "invalid_auth"})
                body = self._body()
                if not isinstance(body.get("channel"), str) or not isinstance(body.get("text"), str):
                    return self._reply(200, {"ok": False, "error": "invalid_arguments"})
                stand_in.posts.append(body)
                self._reply(200, {"ok": True, "channel": body["channel"], "ts": f"{time.time():.6f}"})

            def do_PATCH(self) -> None:
                parts = self.path.strip("/").split("/")  # webhooks/<app id>/<token>/messages/@original
                if len(parts) != 5 or parts[0] != "webhooks" or parts[3:] != ["messages", "@original"]:
                    return self._reply(404, {"message": "Unknown Webhook", "code": 10015})
                body = self._body()
                if not isinstance(body.get("content"), str) or len(body["content"]) > 2000:
                    return self._reply(400, {"message": "Invalid Form Body", "code": 50035})
                stand_in.edits.append((parts[2], body))
                self._reply(200, {"id": "1", "content": body["content"]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, attribute: str, count: int, timeout_s: float = 120.0) -> list:
        deadline = time.time() + timeout_s
        while len(getattr(self, attribute)) < count and time.time() < deadline:
            time.sleep(0.1)
        return getattr(self, attribute)


@pytest.fixture
def setup(small_home, tmp_path, monkeypatch):
    stand_in = PlatformStandIn()
    discord_key = Ed25519PrivateKey.generate()
    public_hex = discord_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    home = copy_of_small_home(small_home, tmp_path / "home")
    workspaces = {"slack:T0001": {"tenant": "default", "corpus": "small-docs"}, "discord:G0001": {"tenant": "default"}}
    for name, value in {
        "HOME": str(home), "DATABASE_URL": "", "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_BOT_TOKEN": BOT_TOKEN,
        "DISCORD_PUBLIC_KEY": public_hex, "CHAT_WORKSPACES": json.dumps(workspaces),
        "SLACK_API_URL": f"{stand_in.url}/api/", "DISCORD_API_URL": stand_in.url,
    }.items():
        monkeypatch.setenv(f"CITEDOCS_{name}", value)
    services = Services.open(home / "citedocs.sqlite3", backend="extractive")
    yield TestClient(create_app(services)), services, stand_in, discord_key
    stand_in.server.shutdown()
    services.store.close()


def slack_post(client, path: str, body: bytes, content_type: str, age_s: int = 0, secret: str = SIGNING_SECRET):
    timestamp = str(int(time.time()) - age_s)
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    headers = {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature, "Content-Type": content_type}
    return client.post(path, content=body, headers=headers), headers


def mention(text: str, team: str = "T0001", ts: str = "1700000000.000100") -> bytes:
    event = {"type": "app_mention", "user": "U1", "text": f"<@U0BOT> {text}", "ts": ts, "channel": "C1", "event_ts": ts}
    return json.dumps({"type": "event_callback", "team_id": team, "event_id": f"Ev{ts}", "event": event}).encode()


def discord_post(client, key: Ed25519PrivateKey, payload: dict, age_s: int = 0):
    body = json.dumps(payload).encode()
    timestamp = str(int(time.time()) - age_s)
    headers = {"X-Signature-Ed25519": key.sign(timestamp.encode() + body).hex(), "X-Signature-Timestamp": timestamp, "Content-Type": "application/json"}
    return client.post("/integrations/discord/interactions", content=body, headers=headers), headers, body


def test_a_slack_mention_is_answered_in_its_thread_with_sources_and_not_helpful_is_stored(setup):
    client, services, stand_in, _ = setup
    challenge, _ = slack_post(client, "/integrations/slack/events", json.dumps({"type": "url_verification", "challenge": "c-1"}).encode(), "application/json")
    assert challenge.json() == {"challenge": "c-1"}
    accepted, _ = slack_post(client, "/integrations/slack/events", mention(ANSWERABLE), "application/json")
    assert accepted.status_code == 200
    [post] = stand_in.wait_for("posts", 1)
    assert post["channel"] == "C1" and post["thread_ts"] == "1700000000.000100"
    assert "*Sources*" in post["text"] and "<https://docs.astro.build/en/guides/deploy/heroku/" in post["text"]
    button = post["blocks"][1]["elements"][0]
    trace_id = button["value"]
    assert services.trace(trace_id)["refused"] is False
    payload = {"type": "block_actions", "team": {"id": "T0001"}, "user": {"id": "U1"}, "actions": [{"action_id": button["action_id"], "value": trace_id}]}
    clicked, _ = slack_post(client, "/integrations/slack/interactions", urlencode({"payload": json.dumps(payload)}).encode(), "application/x-www-form-urlencoded")
    assert clicked.status_code == 200
    assert [f["verdict"] for f in services.trace(trace_id)["feedback"]] == ["down"]
    assert services.insights("default", gaps=False)["feedback"]["down"] == 1


def test_a_slack_question_the_docs_do_not_answer_gets_the_refusal_in_the_thread(setup):
    client, _, stand_in, _ = setup
    slack_post(client, "/integrations/slack/events", mention(OUT_OF_SCOPE), "application/json")
    [post] = stand_in.wait_for("posts", 1)
    assert post["text"].startswith("I can't answer this from the") and len(post["blocks"]) == 1  # no feedback button


def test_bad_old_and_replayed_slack_signatures_are_refused(setup):
    client, _, stand_in, _ = setup
    body = mention(ANSWERABLE)
    forged, _ = slack_post(client, "/integrations/slack/events", body, "application/json", secret="another-secret")
    old, _ = slack_post(client, "/integrations/slack/events", body, "application/json", age_s=600)
    assert (forged.status_code, forged.json()["error"]) == (401, "invalid_signature")
    assert (old.status_code, old.json()["error"]) == (401, "invalid_signature")
    first, headers = slack_post(client, "/integrations/slack/events", body, "application/json")
    replayed = client.post("/integrations/slack/events", content=body, headers=headers)
    assert first.status_code == 200 and (replayed.status_code, replayed.json()["error"]) == (401, "replayed_request")
    assert len(stand_in.wait_for("posts", 1)) == 1  # one answer for the one accepted request
    time.sleep(1)
    assert len(stand_in.posts) == 1


def test_an_event_slack_retries_is_answered_once(setup):
    client, _, stand_in, _ = setup
    body = mention(ANSWERABLE)
    first, _ = slack_post(client, "/integrations/slack/events", body, "application/json")
    retried, _ = slack_post(client, "/integrations/slack/events", body, "application/json", age_s=1)  # signed anew
    assert first.status_code == retried.status_code == 200
    stand_in.wait_for("posts", 1)
    time.sleep(2)
    assert len(stand_in.posts) == 1


def test_a_workspace_not_mapped_to_a_tenant_gets_no_answer(setup):
    client, _, stand_in, _ = setup
    slack_post(client, "/integrations/slack/events", mention(ANSWERABLE, team="T9999"), "application/json")
    [post] = stand_in.wait_for("posts", 1)
    assert post["text"] == "This workspace is not connected to a docs corpus."


def test_a_discord_ask_command_is_answered_with_sources_and_not_helpful_is_stored(setup):
    client, services, stand_in, key = setup
    ping, _, _ = discord_post(client, key, {"type": 1, "id": "i0", "application_id": "A1", "token": "t0"})
    assert ping.json() == {"type": 1}
    command = {
        "type": 2, "id": "i1", "application_id": "A1", "token": "tok-1", "guild_id": "G0001",
        "data": {"name": "ask", "options": [{"name": "question", "type": 3, "value": ANSWERABLE}]},
    }
    deferred, _, _ = discord_post(client, key, command)
    assert deferred.json() == {"type": 5}
    [(token, edit)] = stand_in.wait_for("edits", 1)
    assert token == "tok-1" and "](<https://docs.astro.build/en/guides/deploy/heroku/" in edit["content"]
    custom_id = edit["components"][0]["components"][0]["custom_id"]
    trace_id = custom_id.split(":", 1)[1]
    button = {"type": 3, "id": "i2", "application_id": "A1", "token": "tok-2", "guild_id": "G0001",
              "member": {"user": {"id": "D1"}}, "data": {"custom_id": custom_id, "component_type": 2}}
    thanks, _, _ = discord_post(client, key, button)
    assert thanks.json()["type"] == 4
    assert [f["verdict"] for f in services.trace(trace_id)["feedback"]] == ["down"]


def test_bad_old_and_replayed_discord_signatures_are_refused(setup):
    client, _, _, key = setup
    ping = {"type": 1, "id": "i0", "application_id": "A1", "token": "t0"}
    forged, _, _ = discord_post(client, Ed25519PrivateKey.generate(), ping)
    old, _, _ = discord_post(client, key, ping, age_s=600)
    assert (forged.status_code, forged.json()["error"]) == (401, "invalid_signature")
    assert (old.status_code, old.json()["error"]) == (401, "stale_request")
    first, headers, body = discord_post(client, key, ping)
    replayed = client.post("/integrations/discord/interactions", content=body, headers=headers)
    assert first.status_code == 200 and (replayed.status_code, replayed.json()["error"]) == (401, "replayed_request")
    tampered = client.post("/integrations/discord/interactions", content=body.replace(b'"t0"', b'"t1"'), headers=headers)
    assert tampered.status_code == 401
