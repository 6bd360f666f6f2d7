"""How a step ended, and which failures leave its outcome unknown."""

from __future__ import annotations

from dataclasses import dataclass

from fleet_remediation.core.errors import AwsApiError, RemediationError
from fleet_remediation.core.report_model import Outcome

# aws_api_errors' code for a call that got no answer (timeout, reset): it may have taken effect.
NO_REPLY = "Transport"


@dataclass(frozen=True)
class StepResult:
    outcome: Outcome
    reason: str
    error: RemediationError | None = None


def reply_lost(error: RemediationError) -> bool:
    """The request may have been applied: re-read the resource, never guess."""
    return isinstance(error, AwsApiError) and error.aws_code == NO_REPLY


def failed(error: RemediationError, context: str = "") -> StepResult:
    """A raised step: FAILED when the service said no, UNKNOWN when its reply never came."""
    outcome = Outcome.UNKNOWN if reply_lost(error) else Outcome.FAILED
    suffix = "; the next tick re-reads it" if outcome is Outcome.UNKNOWN else ""
    return StepResult(outcome, f"{context}{error.message}{suffix}", error)


class CapacityAmbiguousError(RemediationError):
    """The desired count moved under an interrupted change: which count is right cannot be told."""

    code = "CapacityAmbiguous"
