"""Single sign-on: JWT bearer tokens from an identity provider run here on loopback (a stand-in: no
real provider is reachable; it serves the real OIDC discovery document and JWKS, with RSA keys made
by `cryptography`, and rotates them while it runs). Tokens are checked for signature, issuer,
audience and expiry with the configured clock skew, name their tenant and role by claims, and API
keys keep working beside them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastapi.testclient import TestClient

from citedocs.api.app import create_app
from citedocs.service import Services

from conftest import copy_of_small_home

AUDIENCE = "citedocs-api"


class Issuer:
    """An OIDC identity provider on loopback: discovery document, JWKS, and tokens signed by its current key."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, rsa.RSAPrivateKey]] = []
        self.jwks_fetches = 0
        self.rotate()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks", "id_token_signing_alg_values_supported": ["RS256"]}
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
                    body = {"keys": [issuer.jwk(kid, key) for kid, key in issuer.keys]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def jwk(kid: str, key: rsa.RSAPrivateKey) -> dict:
        return {**jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, "use": "sig", "alg": "RS256"}

    def rotate(self) -> None:
        """A new signing key replaces the old one, which the JWKS no longer lists."""
        self.keys = [(f"key-{len(self.keys) + time.time_ns()}", rsa.generate_private_key(public_exponent=65537, key_size=2048))]

    def token(self, key: tuple[str, rsa.RSAPrivateKey] | None = None, **claims) -> str:
        kid, private = key or self.keys[0]
        now = int(time.time())
        body = {"iss": self.url, "aud": AUDIENCE, "sub": "user-1", "iat": now, "exp": now + 300, "tenant": "default", "role": "user"}
        return jwt.encode({**body, **claims}, private, algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def issuer():
    issuer = Issuer()
    yield issuer
    issuer.server.shutdown()


@pytest.fixture
def client(small_home, tmp_path, monkeypatch, issuer):
    home = copy_of_small_home(small_home, tmp_path / "home")
    for name, value in {
        "HOME": str(home), "DATABASE_URL": "", "AUTH": "required", "OIDC_ISSUER": issuer.url, "OIDC_AUDIENCE": AUDIENCE,
        "OIDC_JWKS_REFRESH_S": "0", "OIDC_LEEWAY_S": "60",
    }.items():
        monkeypatch.setenv(f"CITEDOCS_{name}", value)
    services = Services.open(home / "citedocs.sqlite3", backend="extractive")
    yield TestClient(create_app(services)), services
    services.store.close()


def hs256_token(claims: dict, kid: str, secret: bytes) -> str:
    """A token "signed" with HS256 by hand (PyJWT itself refuses a public key as an HMAC secret)."""
    part = lambda data: base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()  # noqa: E731
    signing_input = f"{part({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{part(claims)}"
    signature = base64.urlsafe_b64encode(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    return f"{signing_input}.{signature}"


def call(client, token: str, path: str = "/corpora"):
    return client.get(path, headers={"Authorization": f"Bearer {token}"})


def test_a_token_names_its_tenant_and_role(client, issuer):
    app, _ = client
    user = issuer.token()
    assert [c["name"] for c in call(app, user).json()["corpora"]] == ["small-docs"]
    assert call(app, issuer.token(tenant="acme")).json()["corpora"] == []  # another tenant sees none of default's
    refused = call(app, user, "/admin/insights")
    assert refused.status_code == 403 and refused.json()["error"] == "admin_key_required"
    admin = call(app, issuer.token(role=["viewer", "admin"]), "/admin/insights?gaps=false")
    assert admin.status_code == 200, admin.text


def test_expired_foreign_and_forged_tokens_are_refused(client, issuer):
    app, _ = client
    now = int(time.time())
    assert call(app, issuer.token(exp=now - 30)).status_code == 200  # within the 60 s clock skew
    expired = call(app, issuer.token(exp=now - 120))
    assert expired.status_code == 401 and expired.json()["error"] == "expired_token"
    assert "audience" in call(app, issuer.token(aud="another-api")).json()["detail"]
    assert call(app, issuer.token(iss="https://evil.example.com")).status_code == 401
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = call(app, issuer.token(key=(issuer.keys[0][0], forger)))  # the issuer's kid, another key
    assert forged.status_code == 401 and forged.json()["error"] == "invalid_token"
    public_pem = issuer.keys[0][1].public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    claims = {"iss": issuer.url, "aud": AUDIENCE, "sub": "x", "exp": now + 60, "tenant": "default"}
    assert call(app, hs256_token(claims, issuer.keys[0][0], public_pem)).status_code == 401  # the public key as an HMAC secret
    no_tenant = call(app, issuer.token(tenant=None))
    assert no_tenant.status_code == 403 and no_tenant.json()["error"] == "no_tenant_claim"


def test_a_key_rotated_while_the_server_runs_is_picked_up_and_the_old_one_dropped(client, issuer):
    app, _ = client
    old_key = issuer.keys[0]
    old_token = issuer.token()
    assert call(app, old_token).status_code == 200
    fetches = issuer.jwks_fetches
    issuer.rotate()
    assert call(app, issuer.token()).status_code == 200  # an unknown kid fetched the keys again
    assert issuer.jwks_fetches == fetches + 1
    assert call(app, issuer.token(key=old_key)).status_code == 401  # the withdrawn key no longer verifies
    assert call(app, old_token).status_code == 401


def test_api_keys_keep_working_beside_single_sign_on(client, issuer):
    app, services = client
    _, secret = services.create_key("default", "beside sso")
    assert call(app, secret).status_code == 200
    assert call(app, "cd_not-a-key").status_code == 401
