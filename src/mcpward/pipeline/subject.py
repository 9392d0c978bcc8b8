"""What a guard judges at one phase.

| phase                      | name                | payload                                   |
|----------------------------|---------------------|-------------------------------------------|
| request                    | the method          | the request's params (dict)               |
| response                   | the method          | the result (dict)                         |
| *_list (tools, prompts, resources) | None      | the listed items (dicts), upstream-local names |
| tool_invoke / prompt_request | tool/prompt name  | the arguments (dict)                      |
| resource_request           | the URI             | the request's params (dict)               |
| tool/prompt/resource_result | name or URI        | the result (dict)                         |
| upstream_error             | the method answered | the error object (any JSON, as relayed)   |
| upstream_message           | its method          | a notification's or server request's params |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpward.pipeline.phases import Phase
from mcpward.pipeline.texts import PayloadTexts, payload_texts


@dataclass(slots=True)
class Subject:
    phase: Phase
    name: str | None
    payload: Any
    _texts: PayloadTexts | None = field(default=None, repr=False, compare=False)

    def texts(self) -> PayloadTexts:
        """The payload's strings, walked on the first call and shared by the guards of this
        phase (the executor gives the guards after a payload change a new subject)."""
        texts = self._texts
        if texts is None:
            texts = self._texts = payload_texts(self.payload)
        return texts
