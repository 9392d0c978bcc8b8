"""The guard pipeline used when the config names none (and by the quick `mcpward run -- CMD`)."""

from __future__ import annotations

from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec


def default_guard_specs() -> list[GuardSpec]:
    """Built-in defaults, lowest priority first. Each later guard kind adds its default here."""
    return [
        # access: with no roles configured it enforces only each client's consent ceiling.
        GuardSpec(
            kind="access", id="access", priority=5, runs_on=[Phase.TOOLS_LIST, Phase.TOOL_INVOKE]
        ),
        # rug_pull: pin every contract on first sight, hold calls whose contract moved (guard).
        GuardSpec(
            kind="rug_pull",
            id="rug_pull",
            priority=15,
            timeout_ms=5000,  # may re-read an upstream's lists before a call that can write
            runs_on=[
                Phase.TOOLS_LIST,
                Phase.PROMPTS_LIST,
                Phase.RESOURCES_LIST,
                Phase.TOOL_INVOKE,
                Phase.PROMPT_REQUEST,
                Phase.RESOURCE_REQUEST,
            ],
        ),
        # tool_poisoning: drop listed items whose texts carry hidden instructions, and deny
        # calls to the tools and prompts it drops.
        GuardSpec(
            kind="tool_poisoning",
            id="tool_poisoning",
            priority=20,
            runs_on=[
                Phase.TOOLS_LIST,
                Phase.PROMPTS_LIST,
                Phase.RESOURCES_LIST,
                Phase.TOOL_INVOKE,
                Phase.PROMPT_REQUEST,
                Phase.RESOURCE_REQUEST,
            ],
        ),
        # tool_shadowing: across upstreams the first-configured name wins; references dropped,
        # and calls to the tools it drops denied.
        GuardSpec(
            kind="tool_shadowing",
            id="tool_shadowing",
            priority=25,
            runs_on=[Phase.TOOLS_LIST, Phase.TOOL_INVOKE],
        ),
        # secrets: redact credentials in everything an upstream sends the client (results,
        # errors, notifications, its own requests). Not on the client's arguments (ingress): a
        # user handing a tool their own key is ordinary; `tool_invoke` in runs_on turns it on.
        GuardSpec(
            kind="secrets",
            id="secrets",
            priority=60,
            runs_on=[
                Phase.TOOL_RESULT,
                Phase.PROMPT_RESULT,
                Phase.RESOURCE_RESULT,
                Phase.UPSTREAM_ERROR,
                Phase.UPSTREAM_MESSAGE,
            ],
        ),
        # response_injection: warn when returned data (or an error the model reads like one)
        # carries instructions aimed at the model.
        GuardSpec(
            kind="response_injection",
            id="response_injection",
            priority=65,
            runs_on=[
                Phase.TOOL_RESULT,
                Phase.PROMPT_RESULT,
                Phase.RESOURCE_RESULT,
                Phase.UPSTREAM_ERROR,
            ],
        ),
    ]
