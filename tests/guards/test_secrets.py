"""secrets: redaction on egress (text, structuredContent, JSON inside strings), ingress denial,
evidence with counts only. Fake credentials are assembled at run time."""

from __future__ import annotations

import copy
import hashlib
import json
import string
from typing import Any

import pytest

from mcpward.guards.detection.secret_scanner import SecretScanner
from mcpward.pipeline.decisions import Allow, Deny, Modify
from tests.guards.conftest import make_guard, replaced_payload, run_hook


def fake(label: str, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    raw = b"".join(hashlib.sha256(f"{label}{i}".encode()).digest() for i in range(n // 16 + 2))
    return "".join(alphabet[b % len(alphabet)] for b in raw[:n])


UPPER = string.ascii_uppercase + "234567"
CASES = {
    "github-token": "gh" + "p_" + fake("gh", 36),
    "aws-access-key-id": "AK" + "IA" + fake("aws", 16, UPPER),
    "openai-key": "sk-" + "proj-" + fake("oa", 60),
    "anthropic-key": "sk-" + "ant-api03-" + fake("an", 90),
    "google-api-key": "AI" + "za" + fake("g", 35),
    "slack-token": "xo" + "xb-" + fake("sl", 30, string.digits) + "-" + fake("sl2", 24),
    "stripe-key": "sk" + "_live_" + fake("st", 24),
    "npm-token": "np" + "m_" + fake("npm", 36),
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiIxMjM0In0." + fake("jwt", 43),
}


@pytest.mark.parametrize(("kind", "secret"), sorted(CASES.items()))
def test_provider_kinds_are_found(kind: str, secret: str) -> None:
    found = SecretScanner().find(f"the value is {secret} ok")
    assert [m.kind for m in found] == [kind]


def test_private_key_block_and_connection_string_and_assignment() -> None:
    body = fake("pem", 64, string.ascii_letters + string.digits + "+/")
    pem = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + body + "\n-----END RSA " + "PRIVATE KEY-----"
    password, key = fake("pw", 14), fake("k", 32)
    text = f"key:\n{pem}\ndb=postgres://app:{password}@db.internal/app\napi_key = '{key}'"
    redacted, counts = SecretScanner().redact_text(text)
    assert counts == {"private-key": 1, "connection-string-password": 1, "generic-secret": 1}
    assert (
        body not in redacted
        and "postgres://app:[REDACTED:connection-string-password]@db" in redacted
    )


@pytest.mark.parametrize(
    "text",
    [
        "password = $_POST['password']",
        "api_key: <YOUR_API_KEY>",
        "token = process.env.GITHUB_TOKEN",
        "secret = LOCAL_DATABASE_PASSWORD",
        "The access token expires after one hour.",
        "Send your passport details to the travel desk.",
        "commit 3b335d612137949d2f21fcc6c8c8164db7603227",
    ],
)
def test_placeholders_references_and_prose_are_left_alone(text: str) -> None:
    assert SecretScanner().find(text) == []


def test_egress_redacts_text_structured_content_and_json_strings_without_mutating() -> None:
    token = CASES["github-token"]
    key = CASES["aws-access-key-id"]
    result = {
        "content": [
            {"type": "text", "text": f"GITHUB_TOKEN={token}"},
            {"type": "text", "text": json.dumps({"cfg": {"aws_key": key}})},
            {"type": "image", "data": "iVBORw0KGgo" + fake("img", 200), "mimeType": "image/png"},
        ],
        "structuredContent": {"deep": [{"x": {"y": f"token {token}"}}]},
    }
    original: dict[str, Any] = copy.deepcopy(result)
    guard = make_guard("secrets", ["tool_result"])
    decision = run_hook(guard, "tool_result", result, name="read_env")
    assert result == original
    payload = replaced_payload(decision)
    shown = json.dumps(payload)
    assert token not in shown and key not in shown
    assert payload["content"][2] == original["content"][2]
    assert isinstance(decision, Modify)
    counts = {"aws-access-key-id": 1, "github-token": 2}
    assert decision.evidence["redactions"] == {"secret": counts}
    assert token not in json.dumps(decision.evidence)


def test_ingress_denies_by_default_and_can_redact() -> None:
    args = {"note": f"use {CASES['stripe-key']}"}
    denial = run_hook(make_guard("secrets", ["tool_invoke"]), "tool_invoke", args, name="t")
    assert isinstance(denial, Deny) and denial.code == "secret_detected"
    assert CASES["stripe-key"] not in denial.message + json.dumps(denial.details)
    redact = make_guard("secrets", ["tool_invoke"], {"ingress": "redact"})
    decision = run_hook(redact, "tool_invoke", args, name="t")
    assert replaced_payload(decision) == {"note": "use [REDACTED:stripe-key]"}


def test_clean_result_is_allowed_without_copying() -> None:
    guard = make_guard("secrets", ["tool_result"])
    assert isinstance(
        run_hook(guard, "tool_result", {"content": [{"type": "text", "text": "hi"}]}), Allow
    )


def test_custom_pattern_kind() -> None:
    guard = make_guard(
        "secrets",
        ["tool_result"],
        {"custom_patterns": [{"id": "acme-key", "pattern": r"ACME-[0-9]{8}"}]},
    )
    decision = run_hook(guard, "tool_result", {"text": "id ACME-12345678"})
    assert replaced_payload(decision) == {"text": "id [REDACTED:acme-key]"}


def test_too_deep_payload_fails_closed() -> None:
    node: dict = {"v": "x"}
    for _ in range(200):
        node = {"c": node}
    decision = run_hook(make_guard("secrets", ["tool_result"]), "tool_result", node)
    assert isinstance(decision, Deny) and decision.code == "secrets_unscannable"


def test_gitleaks_rules_load_with_reasons_for_the_skipped() -> None:
    from mcpward.guards.detection.gitleaks_rules import default_rules

    ruleset = default_rules()
    assert len(ruleset.rules) > 200
    assert ruleset.skipped["pkcs12-file"] == "matches file paths only"
    assert ruleset.skipped["jwt"] == "keywords too short to prefilter"
    assert all(r.keywords and r.regex is not None for r in ruleset.rules)


def test_gitleaks_rule_finds_a_kind_without_a_built_in_rule() -> None:
    secret = fake("adafruit", 32, string.ascii_lowercase + string.digits)
    text = f'adafruit_io_key = "{secret}"\n'
    found = SecretScanner().find(text)
    assert [(m.kind, text[m.start : m.end]) for m in found] == [("adafruit-api-key", secret)]
    assert SecretScanner(gitleaks=False).find(f"adafruit {secret} ") == []


def test_gitleaks_entropy_and_placeholders_reject_documentation_values() -> None:
    scanner = SecretScanner(generic=False)
    assert scanner.find('adobe_client_id = "' + "ab" * 16 + '"\n') == []  # entropy 1.0 <= 2
    assert scanner.find('adafruit_key = "xxxx' + fake("ph", 28).lower() + '"\n') == []


def test_built_in_kind_names_a_span_gitleaks_also_matches() -> None:
    token = CASES["github-token"]
    assert [m.kind for m in SecretScanner().find(f"GITHUB_TOKEN={token}\n")] == ["github-token"]


def test_gitleaks_rules_are_skipped_beyond_the_size_cap() -> None:
    secret = fake("adafruit2", 32, string.ascii_lowercase + string.digits)
    text = "filler " * 2000 + f'adafruit_key = "{secret}"\n'
    assert SecretScanner(generic=False, gitleaks_max_chars=1024).find(text) == []
    assert [m.kind for m in SecretScanner(generic=False, gitleaks_max_chars=0).find(text)] == [
        "adafruit-api-key"
    ]


def test_word_chains_and_long_dotted_tokens() -> None:
    scanner = SecretScanner(gitleaks=False)
    chain = 'id="ws_plugin__s2member_amazon_s3_comp_files_access_key"'
    assert scanner.find(chain) == []
    dotted = fake("dot1", 60) + "." + fake("dot2", 20)
    assert [m.kind for m in scanner.find(f"viewneo_token = {dotted}")] == ["generic-secret"]


def test_references_are_not_connection_passwords_but_weak_literals_are() -> None:
    scanner = SecretScanner()
    assert scanner.find("password = env.PERKEEP_TEST_PASSWORD\n") == []
    assert scanner.find("postgresql://user:${DB_PASSWORD}@db.internal/app") == []
    # In the password slot of a URL even a common word is the password in use.
    weak = scanner.find("postgresql://user:secret@db.internal/app")
    assert [(m.kind, m.start, m.end) for m in weak] == [("connection-string-password", 18, 24)]
    found = scanner.find("postgresql://user:" + fake("pw", 12) + "@db.internal/app")
    assert [m.kind for m in found] == ["connection-string-password"]


def kinds_and_values(text: str) -> list[tuple[str, str]]:
    return [(m.kind, text[m.start : m.end]) for m in SecretScanner().find(text)]


def test_literal_passwords_found_by_syntax() -> None:
    """Human-chosen passwords have no provider shape: the assignment, comparison, config
    setting or constructor argument they sit in is what gives them away."""
    pw = "Vq" + fake("lit", 6) + "!"
    assert kinds_and_values(f"password = '{pw} 9'\n") == [("hardcoded-password", f"{pw} 9")]
    assert kinds_and_values(f'if password == "{pw}":\n') == [("hardcoded-password", pw)]
    xml = f'<add key="SmtpPassword" value="{pw}"/>'
    assert kinds_and_values(xml) == [("hardcoded-password", pw)]
    call = f'new NetworkCredential("ops@example.org", "{pw}");'
    assert kinds_and_values(call) == [("credential-argument", pw)]
    # the password slot of a constructor holds the password even when it is a common word
    entry = 'DirectoryEntry("LDAP://dc1", "corp\\\\svc", "secret")'
    assert kinds_and_values(entry) == [("credential-argument", "secret")]
    assert kinds_and_values(f'requests.get(url, auth=("admin", "{pw}"))') == [
        ("credential-argument", pw)
    ]
    prose = f"The default password for the user 'deploy' is '{pw}'."
    assert kinds_and_values(prose) == [("hardcoded-password", pw)]


def test_literal_rules_leave_prose_routes_and_references_alone() -> None:
    for text in (
        '"password": "The password of the account holder, at least 12 characters."',
        'add them to the "hosts:", "passwd:" and "group:" lines',
        "put '/forgot-password' => \"accounts/passwords#update\"",
        "echo 'password = '.$cfg['db']['password'];",
        'password = "${DB_PASSWORD}"',
        'password: "<your password>"',
    ):
        assert SecretScanner().find(text) == [], text


def test_keyword_then_a_plain_word_in_prose_is_not_a_secret() -> None:
    for text in (
        "Packets pass through the filter before initialization.",
        "The token Tokens are refreshed hourly.",
        "Shamir secret sharing splits a key into shares.",
    ):
        assert SecretScanner().find(text) == [], text
    # An explicit assignment still counts, and so does a random-looking value after a space.
    token = fake("sp", 32)
    assert [m.kind for m in SecretScanner(gitleaks=False).find(f"token {token}")] == [
        "generic-secret"
    ]


def test_more_provider_formats() -> None:
    cases = {
        "tailscale-key": "ts" + "key-api-" + fake("ts", 12) + "-" + fake("ts2", 20),
        "salesforce-token": "00D" + fake("sf", 15) + "!" + fake("sf2", 90),
        "vault-unseal-key": "vault operator unseal " + fake("un", 44, string.ascii_letters + "+/"),
    }
    for kind, text in cases.items():
        assert [m.kind for m in SecretScanner(gitleaks=False).find(text)] == [kind], kind
