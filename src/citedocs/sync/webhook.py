"""Signed webhooks: ``POST /hooks/corpora/{name}`` starts a sync when a docs deploy or a git host says so.

Two ways to sign, both HMAC-SHA256 under the corpus's secret (``citedocs sources webhook-secret
CORPUS``), compared in constant time:

- **citedocs' own** (a deploy script): ``X-Citedocs-Signature: sha256=<hex>`` over
  ``"<timestamp>.<delivery id>.<raw body>"``, with ``X-Citedocs-Timestamp`` (Unix seconds, required)
  and ``X-Citedocs-Delivery``. The signature covers all three, so a captured request can be neither
  sent again (its delivery id is remembered) nor given a new id (the signature breaks), and once
  its timestamp leaves the replay window it is refused whatever its id.
- **GitHub's** (``X-Hub-Signature-256`` over the raw body, with ``X-GitHub-Event`` and
  ``X-GitHub-Delivery``). GitHub signs neither a timestamp nor the delivery id, so the replay key is
  the signed body itself (its SHA-256: a push's payload names its commits and push time, so two
  pushes never share one), remembered for ``remembered_s``; a push whose signed
  ``repository.pushed_at`` is older than that is refused, so a captured push cannot be replayed
  once it is forgotten either. A payload without ``pushed_at`` (another host imitating GitHub) is
  bounded by the remembered digest only.

A message of citedocs' scheme starts with digits and a dot, so it is never a JSON object: its
signature cannot pass as a GitHub delivery, which must be one.

A signed request does not always sync: GitHub's ``ping`` and every event other than ``push`` are
``Ignored``, and so is a push (either scheme: a JSON body with a ``ref``) to a branch other than the
source's configured one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass

SIGNATURE_HEADER = "x-citedocs-signature"
TIMESTAMP_HEADER = "x-citedocs-timestamp"
DELIVERY_HEADER = "x-citedocs-delivery"
GITHUB_SIGNATURE_HEADER = "x-hub-signature-256"
GITHUB_EVENT_HEADER = "x-github-event"
GITHUB_DELIVERY_HEADER = "x-github-delivery"
# no dot: the signed message is "<timestamp>.<delivery id>.<body>", and a dot in the id would let a
# captured request move the boundary between id and body (a new id under the same signature)
DELIVERY_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
# ASCII digits, a bounded count: str.isdigit() takes '²', which int() refuses, and int() refuses 5,000 digits
TIMESTAMP = re.compile(r"[0-9]{1,15}")
_DAY_S = 86400.0
_RECIPE = (
    "sign '<timestamp>.<delivery id>.<raw body>' with HMAC-SHA256 under the corpus's webhook secret and send "
    "X-Citedocs-Signature: sha256=<hex>, X-Citedocs-Timestamp: <Unix seconds>, X-Citedocs-Delivery: <unique id>"
)


class Refused(Exception):
    """Why a webhook request changes nothing: HTTP status, error code, detail."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail


class Ignored(Refused):
    """A signed, fresh request that does not ask for a sync (a ping, another event, another branch):
    answered 200 so that the sender does not retry it, and no job is made."""

    def __init__(self, reason: str) -> None:
        super().__init__(200, "ignored", f"ignored: {reason}")


@dataclass(frozen=True)
class Delivery:
    """A verified request: the key the replay store remembers, the event and the ref it pushed."""

    key: str
    event: str
    ref: str | None


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def remembered_s(window_s: float) -> float:
    """How long a delivery's replay key is remembered: the replay window, and at least a day."""
    return max(window_s, _DAY_S)


def sign(secret: str, body: bytes, timestamp: str, delivery: str) -> str:
    """The ``X-Citedocs-Signature`` value of a request."""
    return _hmac(secret, timestamp.encode("ascii") + b"." + delivery.encode("ascii") + b"." + body)


def sign_github(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return _hmac(secret, body)


def _hmac(secret: str, message: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def _check_signature(sent: str, expected: str, what: str) -> None:
    if not hmac.compare_digest(sent.strip().encode("utf-8"), expected.encode("utf-8")):
        raise Refused(401, "signature_mismatch", f"the signature does not match {what} under this corpus's webhook secret")


def verify(secret: str, body: bytes, headers: dict[str, str], window_s: float, now: float | None = None) -> Delivery:
    """The request's ``Delivery`` if it is signed with ``secret`` and fresh; else ``Refused``.
    ``headers`` have lower-case names."""
    now = time.time() if now is None else now
    if headers.get(SIGNATURE_HEADER):
        return _verify_citedocs(secret, body, headers, window_s, now)
    if headers.get(GITHUB_SIGNATURE_HEADER):
        if not headers.get(GITHUB_EVENT_HEADER):
            raise Refused(
                400,
                "timestamp_missing",
                f"a request signed over its body alone is taken only from GitHub (with X-GitHub-Event); {_RECIPE}",
            )
        return _verify_github(secret, body, headers, window_s, now)
    raise Refused(401, "signature_missing", f"no {SIGNATURE_HEADER} header: {_RECIPE} (GitHub's webhooks send {GITHUB_SIGNATURE_HEADER})")


def _verify_citedocs(secret: str, body: bytes, headers: dict[str, str], window_s: float, now: float) -> Delivery:
    timestamp = headers.get(TIMESTAMP_HEADER)
    if not timestamp:
        raise Refused(400, "timestamp_missing", f"no {TIMESTAMP_HEADER} header: {_RECIPE}")
    if not TIMESTAMP.fullmatch(timestamp):
        raise Refused(400, "bad_timestamp", f"{TIMESTAMP_HEADER} must be Unix seconds (ASCII digits), got {timestamp[:40]!r}")
    age = now - int(timestamp)
    if abs(age) > window_s:
        raise Refused(401, "stale_timestamp", f"{TIMESTAMP_HEADER} is {age:.0f}s from this server's clock; the replay window is {window_s:.0f}s")
    delivery = headers.get(DELIVERY_HEADER)
    if not delivery or not DELIVERY_ID.fullmatch(delivery):
        raise Refused(
            400,
            "delivery_id_missing",
            f"send a unique delivery id in {DELIVERY_HEADER}: 1 to 200 letters, digits, '-' or '_' (a UUID)",
        )
    _check_signature(headers[SIGNATURE_HEADER], sign(secret, body, timestamp, delivery), "'<timestamp>.<delivery id>.<raw body>'")
    payload = _json(body)
    ref = payload.get("ref") if isinstance(payload, dict) else None
    return Delivery(delivery, "push", ref if isinstance(ref, str) else None)


def _verify_github(secret: str, body: bytes, headers: dict[str, str], window_s: float, now: float) -> Delivery:
    _check_signature(headers[GITHUB_SIGNATURE_HEADER], sign_github(secret, body), "the raw body")
    if not headers.get(GITHUB_DELIVERY_HEADER):
        raise Refused(400, "delivery_id_missing", f"no {GITHUB_DELIVERY_HEADER} header (GitHub sends one with every delivery)")
    payload = _json(body)
    if not isinstance(payload, dict):
        raise Refused(400, "bad_payload", "a GitHub delivery's body must be a JSON object: set the webhook's content type to application/json")
    event = headers[GITHUB_EVENT_HEADER].strip()
    repository = payload.get("repository")
    pushed_at = repository.get("pushed_at") if isinstance(repository, dict) else None
    if event == "push" and type(pushed_at) is int:  # not bool, not a float (NaN compares as fresh)
        age = int(now) - pushed_at  # in ints: a signed 300-digit pushed_at is no float
        if abs(age) > remembered_s(window_s):
            raise Refused(401, "stale_delivery", f"this push was made {str(age)[:20]}s ago; pushes older than {remembered_s(window_s):.0f}s are refused as replays")
    ref = payload.get("ref")
    return Delivery("github:" + hashlib.sha256(body).hexdigest(), event, ref if isinstance(ref, str) else None)


def _json(body: bytes) -> object:
    """The body as JSON, or None when it is not JSON (a citedocs request's body is the sender's own)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, an int past Python's digit limit, nesting too deep
        return None


def check_applies(delivery: Delivery, branch: str | None) -> None:
    """``Ignored`` unless ``delivery`` asks for a sync of a source on ``branch`` (None: any branch)."""
    if delivery.event == "ping":
        raise Ignored("ping: the webhook reaches citedocs; push events start a sync")
    if delivery.event != "push":
        raise Ignored(f"event {delivery.event[:40]!r} does not start a sync; only push events do")
    if branch and delivery.ref is not None and delivery.ref != f"refs/heads/{branch}":
        pushed = f"branch {delivery.ref[11:211]!r}" if delivery.ref.startswith("refs/heads/") else f"ref {delivery.ref[:200]!r}"
        raise Ignored(f"{pushed} is not the source's branch {branch!r}")
