"""API keys (random secrets stored only as sha256), what a key may call, and token-bucket
rate limiters.

Three kinds of key: a full key (``cd_``) opens every route of its tenant except the admin ones; an
admin key (``cda_``) opens those too (``/admin/...``: syncs, uploads, jobs, insights), still only for
its own tenant's corpora; a publishable key (``cdp_``) is meant to sit in a public page's HTML for the
embeddable widget, so it opens only the widget's routes (PUBLISHABLE_ROUTES), only from a page on one
of its own origins.

Rate limits: a token bucket per caller, in this process (``RateLimiter``), or in the store when it
keeps buckets for every process on it (``SharedRateLimiter`` over PostgreSQL), so several servers
on one database admit the configured rate together.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .index.store import ADMIN_SCOPE, FULL_SCOPE, PUBLISHABLE_SCOPE

if TYPE_CHECKING:
    from .index.store import ApiKey

# Each scope's secrets start with their own prefix, so a leaked key says at a glance what it opens.
KEY_PREFIXES = {FULL_SCOPE: "cd_", PUBLISHABLE_SCOPE: "cdp_", ADMIN_SCOPE: "cda_"}
# (method, route path template): what the widget calls, and all a publishable key may call.
PUBLISHABLE_ROUTES = frozenset(
    {("POST", "/ask"), ("POST", "/ask/stream"), ("POST", "/traces/{trace_id}/feedback"), ("GET", "/corpora")}
)
NAME_PATTERN = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")  # \Z: "$" would let a trailing newline through


class AuthError(Exception):
    """The request cannot be attributed to a live API key; carries the HTTP status and error body."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail


class RateLimited(Exception):
    def __init__(self, retry_after_s: float, per_minute: int) -> None:
        super().__init__(f"rate limit of {per_minute} requests per minute reached; retry in {retry_after_s:.1f}s")
        self.retry_after_s = retry_after_s


def new_secret(scope: str = FULL_SCOPE) -> str:
    """A fresh key: 256 random bits, so a plain sha256 is enough to store it (no salt or KDF needed)."""
    return KEY_PREFIXES[scope] + secrets.token_urlsafe(32)


def secret_sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_key_id() -> str:
    return "key_" + secrets.token_hex(6)


def bearer_token(authorization: str | None) -> str:
    """The key from an ``Authorization: Bearer <key>`` header, or an AuthError saying what is wrong."""
    if not authorization:
        raise AuthError(401, "missing_api_key", "this server requires an API key: send 'Authorization: Bearer <key>'")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError(401, "invalid_api_key", "the Authorization header must be 'Bearer <key>'")
    return token.strip()


def check_publishable(key: ApiKey, method: str, route: str | None, origin: str | None) -> None:
    """Raise AuthError (403) unless a publishable ``key`` may make this request; full keys always may.

    ``route`` is the matched route's path template (None for a route outside the REST API, such as
    /mcp); ``origin`` is the request's own Origin header, which a browser sets and a page cannot.
    """
    if not key.publishable:
        return
    if (method, route) not in PUBLISHABLE_ROUTES:
        allowed = ", ".join(f"{m} {p}" for m, p in sorted(PUBLISHABLE_ROUTES))
        raise AuthError(
            403,
            "publishable_key_not_allowed",
            f"{key.key_id} is a publishable key, accepted only on {allowed}; use a full API key for this route",
        )
    if origin is None or origin.strip().lower().rstrip("/") not in key.origins:
        sent = f"from origin {origin}" if origin else "without an Origin header"
        raise AuthError(
            403,
            "origin_not_allowed_for_key",
            f"publishable key {key.key_id} is accepted only from pages on {', '.join(key.origins)}; this request came {sent}",
        )


def check_admin(key: ApiKey) -> None:
    """Raise AuthError (403) unless ``key`` is an admin key: the only kind the /admin routes take."""
    if not key.admin:
        raise AuthError(
            403,
            "admin_key_required",
            f"{key.key_id} is a {key.scope} key; admin routes take an admin key (`citedocs keys create --admin --tenant {key.tenant}`)",
        )


@runtime_checkable
class RateBuckets(Protocol):
    """A store that keeps token buckets shared by every process using it (index/postgres.py)."""

    def take_rate_token(self, identity: str, per_minute: int) -> float:
        """0.0 when a token was spent, else the seconds until the next one."""
        ...


class SharedRateLimiter:
    """The token bucket of ``RateLimiter``, kept in the store: one limit for every process on it."""

    def __init__(self, per_minute: int, buckets: RateBuckets) -> None:
        self.per_minute = per_minute
        self._buckets = buckets

    def take(self, identity: str) -> None:
        if self.per_minute <= 0:
            return
        wait = self._buckets.take_rate_token(identity, self.per_minute)
        if wait > 0:
            raise RateLimited(wait, self.per_minute)


def rate_limiter(per_minute: int, store: object) -> RateLimiter | SharedRateLimiter:
    """Shared through the store when it keeps buckets (PostgreSQL), else per process."""
    return SharedRateLimiter(per_minute, store) if isinstance(store, RateBuckets) else RateLimiter(per_minute)


class RateLimiter:
    """Token bucket per identity: ``per_minute`` requests of burst, refilled evenly. Per process, in memory.

    Past ``max_identities`` buckets, the ones that have refilled completely are forgotten (a full
    bucket is what a new identity gets anyway), so many client IPs cannot grow memory without bound.
    """

    def __init__(
        self, per_minute: int, clock: Callable[[], float] = time.monotonic, max_identities: int = 10_000
    ) -> None:
        self.max_identities = max_identities
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # identity -> (tokens, updated at)
        self._lock = threading.Lock()

    def take(self, identity: str) -> None:
        """Spend one token for ``identity`` or raise RateLimited with the wait until the next one."""
        if self.per_minute <= 0:
            return
        rate = self.per_minute / 60.0
        with self._lock:
            now = self._clock()
            tokens, updated = self._buckets.get(identity, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - updated) * rate)
            if tokens < 1.0:
                self._buckets[identity] = (tokens, now)
                raise RateLimited((1.0 - tokens) / rate, self.per_minute)
            self._buckets[identity] = (tokens - 1.0, now)
            if len(self._buckets) > self.max_identities:
                full_after = 60.0  # seconds for an empty bucket to refill completely
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}
