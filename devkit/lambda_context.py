"""A local stand-in for the Lambda context object (tests, demo, benchmarks)."""

from __future__ import annotations

import uuid

from fleet_remediation.contract.sections import DrainerSection, ReaperSection, TtsReachSection

# A run gets what a deployed function with the default settings gets: its Lambda timeout, which the
# settings check against the run's call budgets (contract/budgets.py).
DEFAULT_REMAINING_MS = 1000 * max(
    ReaperSection().timeout_seconds, TtsReachSection().timeout_seconds, DrainerSection().timeout_seconds
)


class LocalLambdaContext:
    """The attributes of the Lambda context our handlers and Powertools use. Like Lambda, every
    context carries its own request id: the drainer's lease and audit trail tell invocations apart by it."""

    function_name = "local-function"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:local-function"

    def __init__(self, remaining_ms: int = DEFAULT_REMAINING_MS) -> None:
        self._remaining_ms = remaining_ms
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms
