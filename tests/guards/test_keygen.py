"""The provider-format key generator and the look-alikes: real structure, and the secrets guard's
default scanner redacts every key while leaving every look-alike byte-identical.
"""

from __future__ import annotations

import binascii
import random

from mcpward.evaluation import keygen
from mcpward.evaluation.detectors import secrets_guard


def test_github_tokens_carry_a_valid_crc32_checksum() -> None:
    token = keygen.github(random.Random(1))
    body, checksum = token[4:34], token[34:]
    assert token.startswith("ghp_") and len(token) == 40
    assert checksum == keygen._b62(binascii.crc32(body.encode()) & 0xFFFFFFFF, 6)


def test_jwt_has_three_base64url_parts() -> None:
    parts = keygen.jwt(random.Random(2)).split(".")
    assert len(parts) == 3 and parts[0].startswith("eyJ")


def test_every_generated_key_is_found_and_no_look_alike_changes() -> None:
    scanner = secrets_guard().scanner
    keys = keygen.generate(keygen.PROVIDERS, per_kind=3, seed=11)
    missed = [k.kind for k in keys if not scanner.find(k.text)]
    assert missed == []
    alikes = keygen.generate(keygen.LOOK_ALIKES, per_kind=3, seed=12)
    changed = [a.kind for a in alikes if scanner.redact_text(a.text)[0] != a.text]
    assert changed == []
