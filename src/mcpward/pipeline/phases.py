"""The phases at which guards run, and which phases apply to which MCP method."""

from __future__ import annotations

from enum import Enum


class Phase(str, Enum):
    REQUEST = "request"  # every client request, before anything more specific
    RESPONSE = "response"  # every result going back to the client, after anything more specific
    TOOLS_LIST = "tools_list"
    PROMPTS_LIST = "prompts_list"
    RESOURCES_LIST = "resources_list"  # resources/list and resources/templates/list
    TOOL_INVOKE = "tool_invoke"
    TOOL_RESULT = "tool_result"
    PROMPT_REQUEST = "prompt_request"
    PROMPT_RESULT = "prompt_result"
    RESOURCE_REQUEST = "resource_request"
    RESOURCE_RESULT = "resource_result"
    # What an upstream sends the client outside a result (relay/outbound.py):
    UPSTREAM_ERROR = "upstream_error"  # an error answering any client request
    UPSTREAM_MESSAGE = "upstream_message"  # a notification or request of its own (params)


LIST_PHASES = frozenset({Phase.TOOLS_LIST, Phase.PROMPTS_LIST, Phase.RESOURCES_LIST})
# The call that uses an item of each list (a tool, a prompt, a resource by its URI).
CALL_OF_LIST = {
    Phase.TOOLS_LIST: Phase.TOOL_INVOKE,
    Phase.PROMPTS_LIST: Phase.PROMPT_REQUEST,
    Phase.RESOURCES_LIST: Phase.RESOURCE_REQUEST,
}
# Where a judged request (tools/call, prompts/get, resources/read) is decided before it is sent.
CALL_PHASES = (Phase.REQUEST, Phase.TOOL_INVOKE, Phase.PROMPT_REQUEST, Phase.RESOURCE_REQUEST)
