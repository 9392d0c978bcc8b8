"""python-pattern-guard: a mcpward WASM guard written in Python (built with componentize-py).

Configured through `wasm_config` (each value arrives as a string; lists arrive as JSON):
  blocked_patterns      tools/call is denied when its arguments contain one (case-insensitive)
  secret_argument_keys  top-level argument keys whose values are redacted before the call goes upstream
  hidden_phrases        tools whose description contains one are hidden from tools/list
  warn_phrases          a tool result that contains one gets a warning for the client

Build: componentize-py -d WIT_DIR -w security-guard componentize app -o python-pattern-guard.wasm
(WIT_DIR holds the contract: `mcpward guard wit > WIT_DIR/guard.wit`). Needs `needs_wasi: true`.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import guard as g
from wit_world.imports import host


def _config_list(key):
    raw = host.get_config(key)
    if raw is None:
        return []
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise Err(f"wasm_config.{key} is not JSON: {exc}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Err(f"wasm_config.{key} must be a list of strings")
    return value


def _modify(action):
    return g.Decision_Modify(json.dumps(action))


def _first_match(text, phrases):
    lowered = text.lower()
    for phrase in phrases:
        if phrase.lower() in lowered:
            return phrase
    return None


class Guard(exports.Guard):
    def evaluate_tools_list(self, tools, context):
        phrases = _config_list("hidden_phrases")
        kept = [t for t in tools if _first_match(t.description or "", phrases) is None]
        if len(kept) == len(tools):
            return g.Decision_Allow()
        host.log(host.LogLevel.INFO, f"hiding {len(tools) - len(kept)} tool(s) of {context.server_name}")
        host.record_metric("tools_hidden", float(len(tools) - len(kept)), [("upstream", context.server_name)])
        return _modify({"type": "replace_tools", "tools": [{"name": t.name} for t in kept]})

    def evaluate_tool_call(self, tool_name, arguments, context):
        pattern = _first_match(arguments, _config_list("blocked_patterns"))
        if pattern is not None:
            host.record_metric("calls_denied", 1.0, [("tool", tool_name)])
            return g.Decision_Deny(
                g.DenyReason(
                    code="blocked_pattern",
                    message=f"the arguments of {tool_name} contain a blocked pattern",
                    details=json.dumps({"pattern": pattern}),
                )
            )
        args = json.loads(arguments)
        secrets = [k for k in _config_list("secret_argument_keys") if isinstance(args, dict) and k in args]
        if secrets:
            paths = [f"$['{k}']" for k in secrets]
            return _modify({"type": "redact_fields", "paths": paths, "replacement": "[REDACTED]"})
        return g.Decision_Allow()

    def evaluate_tool_response(self, tool_name, result, context):
        phrase = _first_match(result, _config_list("warn_phrases"))
        if phrase is not None:
            return _modify({"type": "add_warning", "message": f"the result of {tool_name} mentions {phrase!r}"})
        return g.Decision_Allow()

    def evaluate_prompt_request(self, prompt_name, arguments, context):
        return g.Decision_Allow()

    def evaluate_resource_request(self, uri, context):
        return g.Decision_Allow()
