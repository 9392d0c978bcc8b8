"""What a guard judges at one phase.

| phase                      | name                | payload                                   |
|----------------------------|---------------------|-------------------------------------------|
| request                    | the method          | the request's params (dict)               |
| response                   | the method          | the result (dict)                         |
| *_list (tools, prompts, resources) | None      | the listed items (dicts), upstream-local names |
| tool_invoke / prompt_request | tool/prompt name  | the arguments (dict)                      |
| resource_request           | the URI             | the request's params (dict)               |
| tool/prompt/resource_result | name or URI        | the result (dict)                         |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcpward.pipeline.phases import Phase


@dataclass(slots=True)
class Subject:
    phase: Phase
    name: str | None
    payload: Any
