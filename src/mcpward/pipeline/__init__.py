"""The guard pipeline: phases, the Guard base class, decisions, and the executor.

Guards are small classes with one hook method per phase (mitmproxy-addon style).
"""

from mcpward.pipeline.context import GuardContext, Identity
from mcpward.pipeline.decisions import (
    AddWarning,
    Allow,
    Decision,
    Deny,
    Hold,
    Modify,
    RedactFields,
    ReplacePayload,
    ReplaceTools,
)
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import FailureMode, GuardSpec, Mode
from mcpward.pipeline.subject import Subject

__all__ = [
    "AddWarning",
    "Allow",
    "Decision",
    "Deny",
    "FailureMode",
    "Guard",
    "GuardContext",
    "GuardSpec",
    "Hold",
    "Identity",
    "Mode",
    "Modify",
    "Phase",
    "RedactFields",
    "ReplacePayload",
    "ReplaceTools",
    "Subject",
]
