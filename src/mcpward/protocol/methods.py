"""MCP method names the gateway routes or judges."""

from __future__ import annotations

INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
DISCOVER = "server/discover"
PING = "ping"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
PROMPTS_LIST = "prompts/list"
PROMPTS_GET = "prompts/get"
RESOURCES_LIST = "resources/list"
RESOURCE_TEMPLATES_LIST = "resources/templates/list"
RESOURCES_READ = "resources/read"
RESOURCES_SUBSCRIBE = "resources/subscribe"
RESOURCES_UNSUBSCRIBE = "resources/unsubscribe"
COMPLETION_COMPLETE = "completion/complete"
LOGGING_SET_LEVEL = "logging/setLevel"
SUBSCRIPTIONS_LISTEN = "subscriptions/listen"

CANCELLED = "notifications/cancelled"
PROGRESS = "notifications/progress"
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"
RESOURCES_UPDATED = "notifications/resources/updated"
ROOTS_LIST_CHANGED = "notifications/roots/list_changed"
SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"

SAMPLING_CREATE = "sampling/createMessage"
ELICITATION_CREATE = "elicitation/create"
ROOTS_LIST = "roots/list"

LIST_CHANGED = frozenset({TOOLS_LIST_CHANGED, PROMPTS_LIST_CHANGED, RESOURCES_LIST_CHANGED})

# MCP's requests (either direction) and 2026-07-28's tasks: sent without an id, one would reach
# the other side past every check the gateway makes of that request, and nothing would answer it.
REQUESTS = frozenset(
    {
        INITIALIZE,
        DISCOVER,
        PING,
        TOOLS_LIST,
        TOOLS_CALL,
        PROMPTS_LIST,
        PROMPTS_GET,
        RESOURCES_LIST,
        RESOURCE_TEMPLATES_LIST,
        RESOURCES_READ,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        COMPLETION_COMPLETE,
        LOGGING_SET_LEVEL,
        SUBSCRIPTIONS_LISTEN,
        SAMPLING_CREATE,
        ELICITATION_CREATE,
        ROOTS_LIST,
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
    }
)

# The client capability a server->client request needs before it may be forwarded.
SERVER_REQUEST_CAPABILITY = {
    SAMPLING_CREATE: "sampling",
    ELICITATION_CREATE: "elicitation",
    ROOTS_LIST: "roots",
}
