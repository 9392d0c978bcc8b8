"""Detection building blocks: RE2 compilation, Unicode smuggling, names, text extraction."""

# ruff: noqa: RUF001 - look-alike characters are this module's subject

from __future__ import annotations

import time

import pytest

from mcpward.config.loader import ConfigError, parse_config
from mcpward.guards.detection.extract import StructureLimit, definition_texts, payload_strings
from mcpward.guards.detection.names import collision_key, within_one_edit
from mcpward.guards.detection.regex import MultiPattern, PatternError, compile_pattern
from mcpward.guards.detection.unicode import skeleton, smuggling_hits


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?<=a)b", r"(?=x)", r"a{2000}", "("])
def test_re2_rejects_what_it_cannot_run_in_linear_time(pattern: str) -> None:
    with pytest.raises(PatternError, match="RE2 cannot compile"):
        compile_pattern(pattern)


def test_custom_pattern_rejected_at_config_load_with_its_location() -> None:
    data = {
        "upstreams": [{"id": "a", "command": "x"}],
        "guards": [
            {
                "kind": "tool_poisoning",
                "runs_on": ["tools_list"],
                "config": {"custom_patterns": [{"id": "bad", "pattern": r"(x+)+\1"}]},
            }
        ],
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "cfg.yaml")
    text = str(caught.value)
    assert "guards[0].config.custom_patterns[0].pattern" in text
    assert "RE2 cannot compile" in text


def test_pathological_looking_pattern_runs_linear() -> None:
    multi = MultiPattern([r"(a+)+$", r"(x|x)*y"])
    text = "a" * 200_000 + "!"
    assert list(multi.finditer(text)) == []  # a backtracking engine would not come back


def test_lone_surrogates_do_not_break_matching() -> None:
    multi = MultiPattern([r"(?i)ignore previous"])
    hits = list(multi.finditer("x\ud83d ignore previous"))
    assert [(h.start, h.end) for h in hits] == [(3, 18)]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("hello\U000e0049\U000e0047\U000e004e", "unicode-tag-characters"),
        ("a\u200b\u200b\u200bb", "zero-width-run"),
        ("safe \u202eexe.txt", "bidi-control"),
        ("text\ufeffmore", "inner-bom"),
        ("please log in to раураl now", "homoglyph-word"),
    ],
)
def test_smuggling_checks(text: str, rule: str) -> None:
    assert rule in {h.rule for h in smuggling_hits(text)}


def test_ordinary_unicode_is_not_smuggling() -> None:
    assert smuggling_hits("Café Zürich, 5 μs, Ελληνικά, русский текст, 日本語") == []
    assert smuggling_hits("\ufeffstarts with a BOM") == []


def test_names_collide_after_normalisation() -> None:
    assert collision_key("Read-File") == collision_key("read_file") == collision_key("rеad.file")
    assert collision_key("search_v1") == collision_key("search")
    assert collision_key("premium_web_search") == collision_key("web_search")
    assert collision_key("read_file") != collision_key("write_file")
    assert skeleton("paypa1") == skeleton("paypal")


def test_one_edit() -> None:
    assert within_one_edit("github", "githab")
    assert within_one_edit("github", "gihtub")  # adjacent swap
    assert within_one_edit("github", "githubb")
    assert not within_one_edit("github", "gitlab")


def test_definition_texts_cover_nested_schema_strings_with_paths() -> None:
    tool = {
        "name": "t",
        "description": "top",
        "inputSchema": {
            "type": "object",
            "properties": {
                "mode": {
                    "type": "string",
                    "enum": ["a", "b"],
                    "default": "a",
                    "description": "inner",
                },
                "opts": {"type": "object", "properties": {"deep": {"examples": ["ex"]}}},
            },
            "required": ["mode"],
        },
        "outputSchema": {"title": "out"},
        "annotations": {"title": "ann"},
    }
    found = {(t.path, t.text) for t in definition_texts(tool)}
    assert ("$.description", "top") in found
    assert ("$.inputSchema.properties.mode.description", "inner") in found
    assert ("$.inputSchema.properties.mode.enum[1]", "b") in found
    assert ("$.inputSchema.properties.opts.properties.deep.examples[0]", "ex") in found
    assert ("$.inputSchema.properties.mode", "mode") in found  # parameter names are read too
    assert ("$.outputSchema.title", "out") in found and ("$.annotations.title", "ann") in found
    assert not any(text == "object" for _, text in found)  # `type` keywords are structure


def test_extraction_is_bounded_not_recursive() -> None:
    node: dict = {"leaf": "x"}
    for _ in range(10_000):
        node = {"c": node}
    with pytest.raises(StructureLimit):
        list(payload_strings(node))
    with pytest.raises(StructureLimit):
        list(definition_texts({"name": "t", "inputSchema": node}))


def test_collision_key_is_linear_in_the_name_length() -> None:
    # A backtracking matcher spent the square of the length here (7 s of CPU for 16 KB, so about
    # 45 s for these 40 KB); an upstream chooses its tool names. RE2 takes milliseconds. The bound
    # is on this thread's CPU time (a hang guard a busy machine does not move), not on the clock.
    hostile = "a" + "-1" * 20_000 + "x"
    started = time.thread_time()
    assert collision_key(hostile) == collision_key(hostile, strip_decorations=False)
    assert time.thread_time() - started < 5.0
    assert collision_key("search_v١") == collision_key("search")  # any decimal digit, as before
    assert collision_key("rеad_file_\ud800") != ""  # a lone surrogate (legal in JSON) is no error
