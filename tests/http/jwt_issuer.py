"""A throwaway OAuth authorization server's signing side for tests: keys, a JWKS, and tokens."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

ISSUER = "https://as.example.test"
RESOURCE = "http://127.0.0.1:8931/mcp"


class TestIssuer:
    __test__ = False

    def __init__(self, kid: str = "k1") -> None:
        self.kid = kid
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key()))
        rsa_jwk.update(kid=self.kid, alg="RS256", use="sig")
        ec_jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key()))
        ec_jwk.update(kid=self.kid + "-ec", alg="ES256", use="sig")
        return {"keys": [rsa_jwk, ec_jwk]}

    def write_jwks(self, path: Path) -> Path:
        path.write_text(json.dumps(self.jwks()))
        return path

    def token(self, alg: str = "RS256", kid: str | None = None, **overrides: Any) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": RESOURCE,
            "sub": "user-42",
            "client_id": "ide-1",
            "iat": now,
            "exp": now + 300,
            "scope": "mcp:tools",
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        key = self.ec if alg == "ES256" else self.rsa
        default_kid = self.kid + "-ec" if alg == "ES256" else self.kid
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid or default_kid})
