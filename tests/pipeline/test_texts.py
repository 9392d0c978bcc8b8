"""The payload's strings, walked once per payload and phase and shared by the content guards."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpward.guards.detection.extract import StructureLimit, payload_strings
from mcpward.guards.detection.regex import line_prefilter
from mcpward.guards.detection.secret_scanner import SecretScanner
from mcpward.guards.kinds import resolve_guard_kind
from mcpward.pipeline import subject as subject_module
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.executor import Pipeline
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.texts import MAX_DEPTH, payload_texts, render_path

FAKE_KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2  # a GitHub token's shape, not a real one


def _readings(payload: Any) -> dict[str, tuple[str, bool, bool]]:
    return {
        render_path(link): (text, media, prose)
        for text, link, _depth, media, prose in payload_texts(payload).items
    }


def test_each_string_once_with_its_path_and_readings() -> None:
    payload = {
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///x", "blob": "QUJD"}},
        ],
        "_meta": {"note": "n"},
        "odd key": ["v"],
        "isError": False,
    }
    assert _readings(payload) == {
        "$.content[0].type": ("text", False, False),
        "$.content[0].text": ("hello", False, True),
        "$.content[1].type": ("image", False, False),
        "$.content[1].mimeType": ("image/png", False, False),
        "$.content[1].data": ("AAAA", True, False),
        "$.content[2].type": ("resource", False, False),
        "$.content[2].resource.uri": ("file:///x", False, False),
        "$.content[2].resource.blob": ("QUJD", True, False),
        "$._meta.note": ("n", False, False),
        "$['odd key'][0]": ("v", False, True),
    }
    # the older reading keeps its order and paths
    assert list(payload_strings(payload, frozenset({"type", "_meta"}))) == [
        ("$['odd key'][0]", "v"),
        ("$.content[2].resource.blob", "QUJD"),
        ("$.content[2].resource.uri", "file:///x"),
        ("$.content[1].data", "AAAA"),
        ("$.content[1].mimeType", "image/png"),
        ("$.content[0].text", "hello"),
    ]


def test_nesting_is_bounded_and_reported_not_raised() -> None:
    node: dict[str, Any] = {"leaf": "x"}
    for _ in range(10_000):
        node = {"c": node}
    walked = payload_texts(node)
    assert walked.items == []
    assert walked.too_deep is not None and walked.too_deep_prose is not None
    # deep nesting inside base64 media (no text) or metadata (no prose) refuses neither reading
    in_media = payload_texts({"blob": node})
    assert in_media.too_deep is None and in_media.too_deep_prose is None
    in_meta = payload_texts({"_meta": node})
    assert in_meta.too_deep is not None and in_meta.too_deep_prose is None
    shallow: dict[str, Any] = {"v": 1}  # the number sits at depth MAX_DEPTH - 1: fine
    for _ in range(MAX_DEPTH - 2):
        shallow = {"c": shallow}
    assert payload_texts(shallow).too_deep_prose is None
    assert payload_texts({"c": shallow}).too_deep_prose is not None  # one level more is not
    with pytest.raises(StructureLimit):
        list(payload_strings(node))


def test_joined_prefilter_keeps_end_anchored_rules() -> None:
    # `Pwd=...` is a secret by a rule that ends at `;` or the end of the text: in a join of the
    # payload's strings the text's end is a newline, which only multi-line mode reads as an end.
    scanner = SecretScanner(generic=False, gitleaks=False)
    secret = "Server=db;Uid=app;Pwd=Zq8vT3kLm9"
    redacted, counts = scanner.redact_payload(["other text", secret])
    assert counts == {"connection-string-password": 1}
    assert redacted == ["other text", "Server=db;Uid=app;Pwd=[REDACTED:connection-string-password]"]
    assert not scanner.may_find(["nothing here", "nor here"])


def test_long_strings_are_searched_on_their_own_and_short_ones_joined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scanner = SecretScanner(generic=False, gitleaks=False)
    secret = "Server=db;Uid=app;Pwd=Zq8vT3kLm9"
    long_clean = "ordinary words " * 10_000  # 150,000 characters, over the join's bound
    joined: list[list[str]] = []
    real_may_find = scanner.may_find

    def spying(texts: list[str]) -> bool:
        joined.append(list(texts))
        return real_may_find(texts)

    monkeypatch.setattr(scanner, "may_find", spying)
    # a secret in a short string beside a long one, and in the long one itself
    _, counts = scanner.redact_payload(["a", long_clean, secret])
    assert counts == {"connection-string-password": 1}
    assert [sorted(texts) for texts in joined] == [sorted(["a", secret])]  # not the long one
    redacted, counts = scanner.redact_payload(["a", long_clean + secret])
    assert counts == {"connection-string-password": 1}
    assert redacted[1].endswith("Pwd=[REDACTED:connection-string-password]")
    assert scanner.redact_payload(["a", long_clean])[1] == {}


def test_patterns_anchored_at_the_text_ends_are_not_joined() -> None:
    assert line_prefilter([r"\Aid-\d+"]) is None
    assert line_prefilter([r"(?-m)^id$"]) is None
    joined = line_prefilter([r"^id-\d+$"])
    assert joined is not None and joined.matching("x\nid-12\ny") == [0]


def _pipeline(*guards: tuple[str, dict[str, Any]]) -> Pipeline:
    built = []
    for priority, (kind, config) in enumerate(guards):
        cls = resolve_guard_kind(kind)
        spec = GuardSpec(
            kind=kind,
            id=f"{kind}{priority}",
            priority=priority,
            runs_on=[Phase.TOOL_RESULT],
            config=config,
        )
        built.append(cls(spec, cls.Options.model_validate(config)))
    return Pipeline(built)


def test_content_guards_share_one_walk_until_a_guard_changes_the_payload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[Any] = []

    def counting(payload: Any) -> Any:
        walked.append(payload)
        return payload_texts(payload)

    monkeypatch.setattr(subject_module, "payload_texts", counting)
    ctx = GuardContext(server_name="up", method="tools/call")
    clean = {"content": [{"type": "text", "text": "the weather is fine"}]}
    pipeline = _pipeline(("secrets", {}), ("response_injection", {}))
    out = asyncio.run(pipeline.run([Phase.TOOL_RESULT], "t", clean, ctx))
    assert out.allowed and len(walked) == 1

    # secrets redacts: the guard after it reads the redacted payload, walked afresh
    walked.clear()
    leaky = {"content": [{"type": "text", "text": f"token {FAKE_KEY}"}]}
    pipeline = _pipeline(("secrets", {}), ("secrets", {"egress": "deny"}))
    out = asyncio.run(pipeline.run([Phase.TOOL_RESULT], "t", leaky, ctx))
    assert out.allowed and out.modified
    assert len(walked) == 2 and walked[0] is leaky and walked[1] is out.payload
    assert FAKE_KEY not in str(out.payload)
