"""Slack and Discord: a mention or a slash command answered in its thread with the cited answer and
its sources as links (a refusal too), and a "Not helpful" button that stores the same feedback as
the web UI's thumbs-down. A thin adapter over ``service.py``.

**Slack** (Events API): ``POST /integrations/slack/events`` takes ``app_mention`` events and the
``url_verification`` handshake; ``POST /integrations/slack/interactions`` takes the buttons. Every
request's signature is checked by the official ``slack_sdk`` ``SignatureVerifier`` (HMAC-SHA256 of
``v0:<timestamp>:<body>`` with the signing secret, timestamps older than 5 minutes refused), and
each signature is accepted once (a replay is refused); an event Slack retries (same ``event_id``,
signed anew) is answered once. The answer is posted with ``slack_sdk``'s
``WebClient.chat_postMessage`` into the mention's thread.

**Discord** (interactions endpoint): ``POST /integrations/discord/interactions`` checks the
Ed25519 signature of ``<timestamp><body>`` against the application's public key (``cryptography``),
refuses timestamps older than 5 minutes and replays, answers PING, defers the ``/ask`` command
(type 5), then edits the deferred reply through the interaction webhook with the answer.

Secrets come from the environment only (``CITEDOCS_SLACK_SIGNING_SECRET``,
``CITEDOCS_SLACK_BOT_TOKEN``, ``CITEDOCS_DISCORD_PUBLIC_KEY``); ``chat_workspaces`` maps a Slack
team or Discord guild to the tenant and corpus it asks. A workspace not listed is refused.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs

import httpx
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from .. import config
from ..contract import AskRequest, AskResponse
from ..service import Services
from ..i18n import translate
from .openai_facade import SOURCES, Numbering

log = logging.getLogger("citedocs.chat_apps")

MAX_AGE_S = 300  # a signed request older than this is refused (Slack's own rule; Discord's the same here)
MENTION = re.compile(r"<@[A-Z0-9]+>")
NOT_HELPFUL = "not_helpful"


class Replays:
    """Signatures accepted in the last ``MAX_AGE_S``: the same signed request is accepted once."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_time(self, signature: str) -> bool:
        now = time.time()
        with self._lock:
            self._seen = {s: at for s, at in self._seen.items() if now - at < 2 * MAX_AGE_S}
            if signature in self._seen:
                return False
            self._seen[signature] = now
            return True


def _refuse(status: int, error: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status)


def workspace(platform: str, team: str) -> tuple[str, str | None] | None:
    """The (tenant, corpus) a Slack team or Discord guild asks (``chat_workspaces``), or None."""
    entry = config.setting("chat_workspaces").get(f"{platform}:{team}")
    return (entry["tenant"], entry.get("corpus")) if entry else None


def answer_text(response: AskResponse, link: Callable[[str, str], str]) -> str:
    """The answer with numbered markers and its sources as links (``link(url, label)``); a refusal as is."""
    if response.refused:
        return response.answer
    numbering = Numbering()
    text = numbering.render(response.answer)
    numbering.sources(response.citations)
    lines = [
        f"{numbering.numbers[c.id]}. " + link(c.url, f"{c.title} › {c.section}" if c.section != c.title else c.title)
        for c in sorted(response.citations, key=lambda c: numbering.numbers[c.id])
    ]
    return text + (f"\n\n*{translate(response.language, SOURCES)}*\n" + "\n".join(lines) if lines else "")


def create_router(services: Callable[[], Services]) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    slack_replays, discord_replays = Replays(), Replays()

    def ask(tenant: str, corpus: str | None, question: str) -> AskResponse:
        svc = services()
        return svc.ask(AskRequest(question=question[:2000], corpus=corpus or svc.default_corpus(tenant)), tenant)

    # Slack ----------------------------------------------------------------------------------------
    def slack_checked(request: Request, body: bytes) -> JSONResponse | None:
        secret = os.environ.get("CITEDOCS_SLACK_SIGNING_SECRET")
        if not secret:
            return _refuse(503, "slack_not_configured", "set CITEDOCS_SLACK_SIGNING_SECRET (the Slack app's signing secret)")
        timestamp = request.headers.get("x-slack-request-timestamp")
        signature = request.headers.get("x-slack-signature")
        if not SignatureVerifier(secret).is_valid(body, timestamp, signature):
            return _refuse(401, "invalid_signature", "the Slack signature is missing, wrong, or older than 5 minutes")
        if not slack_replays.first_time(signature):
            return _refuse(401, "replayed_request", "this signed Slack request was already received")
        return None

    def slack_client() -> WebClient:
        return WebClient(token=os.environ.get("CITEDOCS_SLACK_BOT_TOKEN"), base_url=config.setting("slack_api_url"))

    def answer_in_slack(team: str, event: dict) -> None:
        mapped = workspace("slack", team)
        thread = event.get("thread_ts") or event["ts"]
        client = slack_client()
        if mapped is None:
            client.chat_postMessage(channel=event["channel"], thread_ts=thread, text="This workspace is not connected to a docs corpus.")
            return
        question = MENTION.sub("", event.get("text", "")).strip()
        try:
            response = ask(*mapped, question)
        except Exception as exc:  # noqa: BLE001 (told in the thread, never a silent drop)
            log.exception("a Slack question could not be answered", extra={"team": team})
            client.chat_postMessage(channel=event["channel"], thread_ts=thread, text=f"I could not answer: {exc}")
            return
        text = answer_text(response, lambda url, label: f"<{url}|{label}>")
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}}]
        if not response.refused:
            blocks.append({
                "type": "actions",
                "elements": [{"type": "button", "action_id": NOT_HELPFUL, "value": response.trace_id, "text": {"type": "plain_text", "text": "👎 Not helpful"}}],
            })
        client.chat_postMessage(channel=event["channel"], thread_ts=thread, text=text, blocks=blocks)

    def first_delivery(payload: dict) -> bool:
        """Whether this ``event_id`` is new (kept a day, beside the webhooks' delivery ids)."""
        now = datetime.now(timezone.utc)
        stamp = lambda at: at.isoformat(timespec="seconds")  # noqa: E731
        team, event_id = payload.get("team_id", ""), str(payload.get("event_id") or "")
        return not event_id or services().store.record_delivery(f"slack:{team}", event_id, stamp(now), stamp(now - timedelta(days=1)))

    @router.post("/integrations/slack/events")
    async def slack_events(request: Request):
        body = await request.body()
        refusal = slack_checked(request, body)
        if refusal is not None:
            return refusal
        payload = json.loads(body)
        if payload.get("type") == "url_verification":
            return {"challenge": payload.get("challenge")}
        event = payload.get("event") or {}
        if payload.get("type") == "event_callback" and not first_delivery(payload):
            return {"ok": True}  # Slack retries an event it thinks was missed (newly signed): answered once
        if payload.get("type") == "event_callback" and event.get("type") == "app_mention" and not event.get("bot_id"):
            # Slack wants an answer within 3 s: acknowledge now, answer in the thread when ready
            threading.Thread(target=answer_in_slack, args=(payload.get("team_id", ""), event), daemon=True).start()
        return {"ok": True}

    @router.post("/integrations/slack/interactions")
    async def slack_interactions(request: Request):
        body = await request.body()
        refusal = slack_checked(request, body)
        if refusal is not None:
            return refusal
        payload = json.loads(parse_qs(body.decode()).get("payload", ["{}"])[0])
        mapped = workspace("slack", (payload.get("team") or {}).get("id", ""))
        for action in payload.get("actions", []):
            if action.get("action_id") == NOT_HELPFUL and mapped is not None:
                user = (payload.get("user") or {}).get("id", "")
                services().add_feedback(action["value"], "down", f"Slack user {user}", mapped[0])
        return {"ok": True}

    # Discord --------------------------------------------------------------------------------------
    def discord_checked(request: Request, body: bytes) -> JSONResponse | None:
        key = os.environ.get("CITEDOCS_DISCORD_PUBLIC_KEY")
        if not key:
            return _refuse(503, "discord_not_configured", "set CITEDOCS_DISCORD_PUBLIC_KEY (the Discord application's public key, hex)")
        timestamp = request.headers.get("x-signature-timestamp", "")
        signature = request.headers.get("x-signature-ed25519", "")
        try:
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(key)).verify(bytes.fromhex(signature), timestamp.encode() + body)
        except (InvalidSignature, ValueError):
            return _refuse(401, "invalid_signature", "the Discord Ed25519 signature is missing or wrong")
        if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_AGE_S:
            return _refuse(401, "stale_request", "the signed Discord request is older than 5 minutes")
        if not discord_replays.first_time(signature):
            return _refuse(401, "replayed_request", "this signed Discord request was already received")
        return None

    def answer_in_discord(interaction: dict, question: str) -> None:
        mapped = workspace("discord", interaction.get("guild_id", ""))
        if mapped is None:
            content, components = "This server is not connected to a docs corpus.", []
        else:
            try:
                response = ask(*mapped, question)
                content = answer_text(response, lambda url, label: f"[{label}](<{url}>)")[:1990]
                components = [] if response.refused else [{
                    "type": 1,
                    "components": [{"type": 2, "style": 2, "label": "👎 Not helpful", "custom_id": f"{NOT_HELPFUL}:{response.trace_id}"}],
                }]
            except Exception as exc:  # noqa: BLE001 (told in the reply, never a silent drop)
                log.exception("a Discord question could not be answered", extra={"guild": interaction.get("guild_id")})
                content, components = f"I could not answer: {exc}", []
        url = f"{config.setting('discord_api_url').rstrip('/')}/webhooks/{interaction['application_id']}/{interaction['token']}/messages/@original"
        try:
            httpx.patch(url, json={"content": content, "components": components}, timeout=10).raise_for_status()
        except httpx.HTTPError:
            log.exception("the answer could not be sent to Discord", extra={"guild": interaction.get("guild_id")})

    @router.post("/integrations/discord/interactions")
    async def discord_interactions(request: Request):
        body = await request.body()
        refusal = discord_checked(request, body)
        if refusal is not None:
            return refusal
        interaction = json.loads(body)
        kind = interaction.get("type")
        if kind == 1:  # PING
            return {"type": 1}
        if kind == 2:  # APPLICATION_COMMAND: /ask question:<text>
            options = {o.get("name"): o.get("value") for o in (interaction.get("data") or {}).get("options", [])}
            question = str(options.get("question") or "").strip()
            threading.Thread(target=answer_in_discord, args=(interaction, question), daemon=True).start()
            return {"type": 5}  # deferred: the answer replaces "thinking..." when ready
        if kind == 3:  # MESSAGE_COMPONENT: the Not helpful button
            custom_id = str((interaction.get("data") or {}).get("custom_id", ""))
            mapped = workspace("discord", interaction.get("guild_id", ""))
            if custom_id.startswith(f"{NOT_HELPFUL}:") and mapped is not None:
                user = ((interaction.get("member") or {}).get("user") or {}).get("id", "")
                services().add_feedback(custom_id.split(":", 1)[1], "down", f"Discord user {user}", mapped[0])
            return {"type": 4, "data": {"content": "Thanks: your feedback was recorded.", "flags": 64}}
        return _refuse(400, "unsupported_interaction", f"interaction type {kind!r} is not handled")

    return router
