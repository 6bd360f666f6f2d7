"""How a step ended, and which failures leave its outcome unknown."""

from __future__ import annotations

from dataclasses import dataclass

from fleet_remediation.core.errors import (
    AwsApiError,
    LiveKitBadReplyError,
    LiveKitTimeoutError,
    RemediationError,
)
from fleet_remediation.core.report_model import Outcome


@dataclass(frozen=True)
class StepResult:
    outcome: Outcome
    reason: str
    error: RemediationError | None = None


def reply_lost(error: RemediationError) -> bool:
    """The request may have been applied (``AwsApiError.unknown``): re-read the resource, never guess."""
    if isinstance(error, LiveKitTimeoutError | LiveKitBadReplyError):
        return True
    return isinstance(error, AwsApiError) and error.unknown


def failed(error: RemediationError, context: str = "") -> StepResult:
    """A raised step: FAILED when the service refused it, UNKNOWN when it may have acted."""
    outcome = Outcome.UNKNOWN if reply_lost(error) else Outcome.FAILED
    suffix = "; the next tick re-reads it" if outcome is Outcome.UNKNOWN else ""
    return StepResult(outcome, f"{context}{error.message}{suffix}", error)


class CapacityAmbiguousError(RemediationError):
    """The desired count moved under an interrupted change: which count is right cannot be told."""

    code = "CapacityAmbiguous"
