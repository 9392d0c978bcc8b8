"""Keyword-anchored secrets: values of families that are not secrets (type annotations, time
zones and other paths of names, versions, Markdown emphasis, docstring fields, the rest of a
kebab-case name) are left alone, by every keyword rule, while secrets shaped like words or
versions are still found. Fake credentials are assembled at run time."""

from __future__ import annotations

import pytest

from mcpward.guards.detection.secret_scanner import SecretScanner
from mcpward.guards.detection.secret_values import other_value_family
from tests.guards.test_secrets import fake

SCANNER = SecretScanner()  # the defaults: built-in, generic and gitleaks rules


def found(text: str) -> list[tuple[str, str]]:
    return [(m.kind, text[m.start : m.end]) for m in SCANNER.find(text)]


# Each text was reported by a keyword rule before the value tests (ours or gitleaks').
NOT_SECRETS = {
    "annotation-camelcase": "        key: AllowedPrivateKeyTypes,\n",
    "annotation-type-alias": "_PasswordType: TypeAlias = Callable[[], str]\n",
    "annotation-typing-name": "def connect(password: Callable[[], str]) -> None:\n",
    "annotation-union": "db_password: PasswordProvider | None = None\n",
    "annotation-parameter": "def connect(password: PasswordCallback) -> None:\n",
    "annotation-dotted-gitleaks": (
        "    ciphertext: Buffer,\n    private_key: x25519.X25519PrivateKey\n"
        "    | ec.EllipticCurvePrivateKey,\n"
    ),
    "time-zone-argument": "    zoneinfo.ZoneInfo(key='Europe/Warsaw')\n",
    "time-zone-short-area": "tz = ZoneInfo(key='US/Eastern')\n",
    "time-zone-three-parts": "timezone_key = 'America/Argentina/Buenos_Aires'\n",
    # mcp-server-time's answer to an unknown zone (issue #26): a zone-shaped path of names.
    "name-path-zone-error": (
        "Error executing tool get_current_time: Invalid timezone: "
        "'No time zone found with key Not/AZone'"
    ),
    "name-path-settings": "Open the page with key Settings/Privacy/AdvancedOptions\n",
    "version-dependency": '    "pbkdf2-password": "1.2.1",\n',
    "version-caret-range": '    "password-validator": "^5.3.0",\n',
    "version-lower-bound": '    "password-hash": ">=2.0",\n',
    "version-tilde-range": '    "secret-handshake": "~1.1.16",\n',
    "emphasis-bold-heading": "**PRIVATE MODULE**: API reserved for setuptools.\n",
    "emphasis-bold-words": "**SECRET SETTINGS**\n",
    "docstring-return": "    the matching password.\n\n    :return:\n        Password string\n",
    "docstring-raises": "the password.\n\n:raises ValueError: if it is empty\n",
    "docstring-returns": "Hash the password.\n:returns: the hash\n",
    "kebab-package-name": '  "name": "@aws-sdk/signature-v4-multi-region",\n',
    "kebab-path": "see packages/token-list-v2-beta for the list\n",
}


@pytest.mark.parametrize("text", NOT_SECRETS.values(), ids=NOT_SECRETS.keys())
def test_values_of_other_families_are_not_secrets(text: str) -> None:
    assert found(text) == []


def test_each_family_is_named() -> None:
    assert other_value_family("AllowedPrivateKeyTypes", "key: ", ",") == "type-annotation"
    assert other_value_family("x25519.X25519PrivateKey", "private_key: ") == "type-annotation"
    assert other_value_family("Europe/Warsaw", "key='") == "time-zone"
    assert other_value_family("Not/AZone", "key ") == "name-path"
    assert other_value_family("1.2.1", '-password": "') == "version"
    assert other_value_family("MODULE**", "PRIVATE ") == "markdown-emphasis"
    assert other_value_family("return", "password.\n\n:") == "docstring-field"
    assert other_value_family("v4-multi-region", "signature-") == "kebab-case-name"


# Secrets that look like a word, a CamelCase name, a version or a path are still secrets:
# each sits where the family test does not apply (quoted, `=`, no annotation after it,
# digits after a word, short parts, symbols).
STILL_SECRETS = {
    "quoted-word-and-year": ('password = "Summer2024!"\n', "hardcoded-password", "Summer2024!"),
    "quoted-camelcase": ('password: "SummerTime"\n', "hardcoded-password", "SummerTime"),
    "yaml-camelcase-words": (
        "password: CorrectHorseBatteryStaple\n",
        "generic-secret",
        "CorrectHorseBatteryStaple",
    ),
    "yaml-words-and-year": ("password: SummerTime2024\n", "generic-secret", "SummerTime2024"),
    "prose-password": ("The password is Tr0ub4dor&3 for now.\n", "generic-secret", "Tr0ub4dor&3"),
    "version-prefix-and-symbols": (
        'access_key: "1.2.1-Zq8$Lp3!"\n',
        "generic-secret",
        "1.2.1-Zq8$Lp3!",
    ),
    "slashed-base64": ("api_key: aB3xQ/Yz9kLmPq\n", "generic-secret", "aB3xQ/Yz9kLmPq"),
    "slashed-random-case": ("token: xYzAbc/DefGhQ\n", "generic-secret", "xYzAbc/DefGhQ"),
    "path-with-year": ('password = "2024-Europe/Warsaw!"\n', "hardcoded-password", None),
}


@pytest.mark.parametrize(
    ("text", "kind", "value"), STILL_SECRETS.values(), ids=STILL_SECRETS.keys()
)
def test_secrets_shaped_like_words_or_versions_are_still_found(
    text: str, kind: str, value: str | None
) -> None:
    expected = value or text.split('"')[1]
    assert found(text) == [(kind, expected)]


@pytest.mark.parametrize("separator", [": ", ': "', " = "], ids=["colon", "quoted", "equals"])
def test_random_mixed_case_keys_are_still_found(separator: str) -> None:
    key = "AbCdEf" + fake("camel", 16)
    quote = '"' if separator.endswith('"') else ""
    assert found(f"api_key{separator}{key}{quote},\n") == [("generic-secret", key)]
