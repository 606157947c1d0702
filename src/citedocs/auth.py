"""API keys (random secrets stored only as sha256) and a per-process token-bucket rate limiter."""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable

KEY_PREFIX = "cd_"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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


def new_secret() -> str:
    """A fresh key: 256 random bits, so a plain sha256 is enough to store it (no salt or KDF needed)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


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
