"""Signed webhooks: ``POST /hooks/corpora/{name}`` starts a sync when a docs deploy or a git host says so.

The signature is GitHub's ``X-Hub-Signature-256`` scheme: ``sha256=`` and the hex HMAC-SHA256 of the
raw request body under the corpus's secret (``citedocs sources webhook-secret CORPUS``), compared
in constant time. So that a captured request cannot be replayed:

- a delivery id is required (``X-GitHub-Delivery``, which GitHub sends, or ``X-Citedocs-Delivery``)
  and an id seen within the replay window is refused;
- a sender that can add headers (a deploy script) also sends ``X-Citedocs-Timestamp`` (Unix
  seconds); the signature then covers ``"<timestamp>.<body>"``, and a timestamp outside the
  replay window is refused, so even a new delivery id cannot revive an old request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SIGNATURE_HEADER = "x-hub-signature-256"
TIMESTAMP_HEADER = "x-citedocs-timestamp"
DELIVERY_HEADERS = ("x-github-delivery", "x-citedocs-delivery")
MAX_DELIVERY_ID = 200


class Refused(Exception):
    """Why a webhook request changes nothing: HTTP status, error code, detail."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def sign(secret: str, body: bytes, timestamp: str | None = None) -> str:
    """The X-Hub-Signature-256 value for ``body`` (and ``timestamp`` when sent)."""
    message = body if timestamp is None else timestamp.encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, headers: dict[str, str], window_s: float, now: float | None = None) -> str:
    """The request's delivery id if it is signed with ``secret`` and fresh; else ``Refused``."""
    signature = headers.get(SIGNATURE_HEADER)
    if not signature:
        raise Refused(401, "signature_missing", f"no {SIGNATURE_HEADER} header: sign the raw body with the corpus's webhook secret (HMAC-SHA256, 'sha256=<hex>')")
    timestamp = headers.get(TIMESTAMP_HEADER)
    if timestamp is not None:
        if not timestamp.isdigit():
            raise Refused(400, "bad_timestamp", f"{TIMESTAMP_HEADER} must be Unix seconds, got {timestamp[:40]!r}")
        age = (time.time() if now is None else now) - int(timestamp)
        if abs(age) > window_s:
            raise Refused(401, "stale_timestamp", f"{TIMESTAMP_HEADER} is {age:.0f}s from this server's clock; the replay window is {window_s:.0f}s")
    if not hmac.compare_digest(signature.strip().encode("utf-8"), sign(secret, body, timestamp).encode("utf-8")):
        raise Refused(401, "signature_mismatch", "the signature does not match the body under this corpus's webhook secret (signed over the raw bytes, with the timestamp when one is sent?)")
    delivery = next((headers[h] for h in DELIVERY_HEADERS if headers.get(h)), None)
    if not delivery or len(delivery) > MAX_DELIVERY_ID:
        raise Refused(400, "delivery_id_missing", f"send a unique delivery id (at most {MAX_DELIVERY_ID} characters) in X-Citedocs-Delivery (GitHub sends X-GitHub-Delivery)")
    return delivery
