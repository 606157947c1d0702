"""Single sign-on: OIDC / JWT bearer tokens from an identity provider, beside the API keys.

A bearer token shaped like a JWT (three dot-separated parts) is verified, when ``oidc_issuer`` is
set, by PyJWT against the issuer's published keys: the JWKS named by the issuer's
``/.well-known/openid-configuration`` (or ``oidc_jwks_url``), fetched by ``PyJWKClient`` and cached.
A token signed by a key the cache does not hold makes it fetch the JWKS again (at most once per
``oidc_jwks_refresh_s``), so an issuer that rotates its keys needs no restart. The signature (an
asymmetric algorithm only: a token cannot pick HMAC with the public key as its secret), ``iss``,
``aud``, ``exp``, ``nbf`` and ``iat`` are checked, with ``oidc_leeway_s`` of clock skew.

The token's claims name the caller: ``oidc_tenant_claim`` its tenant, ``oidc_role_claim`` its role
(a string or a list; a dotted path reaches a nested claim, e.g. ``realm_access.roles``); a role
equal to ``oidc_admin_role`` opens the admin routes. The caller becomes a principal shaped like an
API key (``sso:<sub>``), so every route, the audit log and the rate limit treat both alike.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import httpx
import jwt
from jwt import PyJWKClient

from . import config
from .auth import NAME_PATTERN, AuthError
from .index.store import ADMIN_SCOPE, FULL_SCOPE, ApiKey

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
DISCOVERY_PATH = "/.well-known/openid-configuration"


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and token.startswith("eyJ")


def _claim(claims: dict, path: str) -> object:
    value: object = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class OidcVerifier:
    """Verifies one issuer's tokens; the JWKS location is discovered on first use."""

    def __init__(self, issuer: str, audience: str, jwks_url: str | None = None) -> None:
        self.issuer = issuer
        self.audience = audience
        self._jwks_url = jwks_url
        self._client: PyJWKClient | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls) -> OidcVerifier | None:
        issuer = config.setting("oidc_issuer")
        if not issuer:
            return None
        audience = config.setting("oidc_audience")
        if not audience:
            raise config.ConfigError("oidc_issuer is set but oidc_audience is not: name the audience this server's tokens are issued for")
        return cls(issuer, audience, config.setting("oidc_jwks_url"))

    def _jwks(self) -> PyJWKClient:
        with self._lock:
            if self._client is None:
                url = self._jwks_url or self._discover()
                # the key set is cached (5 min), not each key: a key the issuer withdrew stops working at the next fetch
                refresh = config.setting("oidc_jwks_refresh_s")
                self._client = PyJWKClient(url, cache_keys=False, lifespan=300, timeout=5, cooldown_duration=refresh)
            return self._client

    def _discover(self) -> str:
        where = self.issuer.rstrip("/") + DISCOVERY_PATH
        try:
            document = httpx.get(where, timeout=5).raise_for_status().json()
        except (httpx.HTTPError, ValueError) as exc:
            raise AuthError(503, "issuer_unreachable", f"cannot read the identity provider's {where}: {exc}") from exc
        if document.get("issuer") != self.issuer or not document.get("jwks_uri"):
            raise AuthError(503, "issuer_mismatch", f"{where} names issuer {document.get('issuer')!r}, not {self.issuer!r} (oidc_issuer)")
        return document["jwks_uri"]

    def principal(self, token: str) -> ApiKey:
        """The caller a valid token names, or AuthError (401: bad token, 403: no tenant, 503: issuer down)."""
        try:
            key = self._jwks().get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key,
                algorithms=ALGORITHMS,
                audience=self.audience,
                issuer=self.issuer,
                leeway=config.setting("oidc_leeway_s"),
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWKClientConnectionError as exc:
            raise AuthError(503, "issuer_unreachable", f"cannot fetch the identity provider's signing keys: {exc}") from exc
        except jwt.ExpiredSignatureError as exc:
            raise AuthError(401, "expired_token", "the token has expired; sign in again") from exc
        except jwt.InvalidAudienceError as exc:
            raise AuthError(401, "invalid_token", f"the token is not for this server (audience must be {self.audience!r})") from exc
        except jwt.InvalidIssuerError as exc:
            raise AuthError(401, "invalid_token", f"the token was not issued by {self.issuer}") from exc
        except (jwt.PyJWTError, jwt.PyJWKClientError) as exc:
            raise AuthError(401, "invalid_token", f"the token cannot be verified: {exc}") from exc
        return self._as_key(claims)

    @staticmethod
    def _as_key(claims: dict) -> ApiKey:
        tenant_claim = config.setting("oidc_tenant_claim")
        tenant = _claim(claims, tenant_claim)
        if not isinstance(tenant, str) or not NAME_PATTERN.match(tenant):
            raise AuthError(403, "no_tenant_claim", f"the token's {tenant_claim!r} claim must name a tenant (1-64 letters, digits, '-' or '_')")
        roles = _claim(claims, config.setting("oidc_role_claim"))
        roles = roles if isinstance(roles, list) else [roles]
        admin = config.setting("oidc_admin_role") in roles
        issued = claims.get("iat")
        created = datetime.fromtimestamp(issued, timezone.utc).isoformat(timespec="seconds") if isinstance(issued, (int, float)) else ""
        return ApiKey(
            key_id=f"sso:{claims['sub']}"[:200],
            tenant=tenant,
            name=str(claims.get("email") or claims.get("preferred_username") or claims["sub"]),
            created_at=created,
            scope=ADMIN_SCOPE if admin else FULL_SCOPE,
        )
