"""Credentials generated in each provider's real format (prefixes, lengths, alphabets, GitHub's
CRC32 checksum, JWT and PEM structure) and look-alikes that are not secrets, from a seed.

Development data for the secrets rows: nothing here is a live credential.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass

B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = B62 + "-_"
B64 = B62 + "+/"


@dataclass(frozen=True, slots=True)
class Generated:
    kind: str
    text: str  # the value inside a short line of ordinary output


def _pick(rnd: random.Random, alphabet: str, n: int) -> str:
    return "".join(rnd.choice(alphabet) for _ in range(n))


def _b62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = B62[r] + out
    return out.rjust(width, "0")


def github(rnd: random.Random, prefix: str = "ghp") -> str:
    body = _pick(rnd, B62, 30)
    checksum = _b62(binascii.crc32(body.encode()) & 0xFFFFFFFF, 6)
    return f"{prefix}_{body}{checksum}"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(rnd: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(rnd.randrange(10**6)), "iat": 1700000000 + rnd.randrange(10**6)}
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64url(rnd.randbytes(32))}"


def pem(rnd: random.Random) -> str:
    body = base64.b64encode(rnd.randbytes(600)).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----"


PROVIDERS: dict[str, Callable[[random.Random], str]] = {
    "github-pat": github,
    "github-oauth": lambda r: github(r, "gho"),
    "github-app": lambda r: github(r, "ghs"),
    "github-fine-grained": lambda r: f"github_pat_{_pick(r, B62, 22)}_{_pick(r, B62, 59)}",
    "gitlab": lambda r: "glpat-" + _pick(r, URLSAFE, 20),
    "openai": lambda r: f"sk-proj-{_pick(r, URLSAFE, 58)}T3BlbkFJ{_pick(r, URLSAFE, 58)}",
    "anthropic": lambda r: f"sk-ant-api03-{_pick(r, URLSAFE, 93)}AA",
    "aws-pair": lambda r: (
        f"aws_access_key_id = AKIA{_pick(r, string.ascii_uppercase + '234567', 16)}\n"
        f"aws_secret_access_key = {_pick(r, B64, 40)}"
    ),
    "google-api": lambda r: "AIza" + _pick(r, URLSAFE, 35),
    "azure-storage": lambda r: (
        "DefaultEndpointsProtocol=https;AccountName=acct"
        f"{_pick(r, string.ascii_lowercase, 6)};AccountKey={_pick(r, B64, 86)}==;"
        "EndpointSuffix=core.windows.net"
    ),
    "slack-bot": lambda r: (
        f"xoxb-{_pick(r, string.digits, 12)}-{_pick(r, string.digits, 13)}-{_pick(r, B62, 24)}"
    ),
    "stripe": lambda r: "sk_live_" + _pick(r, B62, 99),
    "stripe-restricted": lambda r: "rk_live_" + _pick(r, B62, 99),
    "twilio": lambda r: "SK" + _pick(r, HEX, 32),
    "sendgrid": lambda r: f"SG.{_pick(r, URLSAFE, 22)}.{_pick(r, URLSAFE, 43)}",
    "npm": lambda r: "npm_" + _pick(r, B62, 36),
    "pypi": lambda r: "pypi-AgEIcHlwaS5vcmc" + _pick(r, URLSAFE, 150),
    "huggingface": lambda r: "hf_" + _pick(r, string.ascii_letters, 34),
    "databricks": lambda r: "dapi" + _pick(r, HEX, 32),
    "shopify": lambda r: "shpat_" + _pick(r, HEX, 32),
    "jwt": jwt,
    "private-key": pem,
    "postgres-url": lambda r: (
        f"postgres://app:{_pick(r, B62, 16)}@db{r.randrange(9)}.internal:5432/orders"
    ),
    "mongodb-url": lambda r: (
        f"mongodb+srv://svc:{_pick(r, B62, 20)}@cluster0.{_pick(r, HEX, 5)}.mongodb.net/prod"
    ),
}

LOOK_ALIKES: dict[str, Callable[[random.Random], str]] = {
    "uuid": lambda r: str(uuid.UUID(int=r.getrandbits(128), version=4)),
    "sha1": lambda r: _pick(r, HEX, 40),
    "sha256": lambda r: _pick(r, HEX, 64),
    "git-sha": lambda r: f"commit {_pick(r, HEX, 40)}",
    "sri": lambda r: "sha384-" + base64.b64encode(r.randbytes(48)).decode(),
    "base64-text": lambda r: base64.b64encode(
        " ".join(
            r.choice(["the", "report", "for", "march", "is", "ready", "thanks", "team"])
            for _ in range(12)
        ).encode()
    ).decode(),
    "arn": lambda r: f"arn:aws:iam::{_pick(r, string.digits, 12)}:role/app-{_pick(r, HEX, 6)}",
    "s3-bucket": lambda r: f"s3://acme-logs-{_pick(r, string.digits, 4)}/2026/11/app.log",
    "oauth-client-id": lambda r: (
        f"{_pick(r, string.digits, 12)}-{_pick(r, string.ascii_lowercase + string.digits, 32)}"
        ".apps.googleusercontent.com"
    ),
}

CONTEXTS = ("{v}", "result: {v}", "Output of the last step:\n{v}\nDone.", '{{"value": "{v}"}}')


def generate(
    table: dict[str, Callable[[random.Random], str]], per_kind: int, seed: int
) -> list[Generated]:
    rnd = random.Random(seed)
    out: list[Generated] = []
    for kind, make in table.items():
        for i in range(per_kind):
            out.append(Generated(kind, CONTEXTS[i % len(CONTEXTS)].format(v=make(rnd))))
    return out
