"""A local stand-in for the Lambda context object (tests, demo, benchmarks)."""

from __future__ import annotations

import os
import uuid

from fleet_remediation.contract.sections import DrainerSection, ReaperSection, TtsReachSection

# A run gets what a deployed function with the default settings gets: its Lambda timeout, which the
# settings check against the run's call budgets (contract/budgets.py).
DEFAULT_REMAINING_MS = 1000 * max(
    ReaperSection().timeout_seconds, TtsReachSection().timeout_seconds, DrainerSection().timeout_seconds
)
# moto's default account, which the local worlds create their resources in.
LOCAL_ACCOUNT = "123456789012"
FALLBACK_REGION = "eu-west-1"


def local_region() -> str:
    """The region boto3 is configured with (AWS_REGION, then AWS_DEFAULT_REGION), as in Lambda."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or FALLBACK_REGION


class LocalLambdaContext:
    """The attributes of the Lambda context our handlers and Powertools use. Like Lambda, every
    context carries its own request id: the drainer's lease and audit trail tell invocations apart by it.

    Its ARN names ``account`` and ``region`` (moto's account and the configured region unless told
    otherwise): the door admits only EventBridge events of the function's own account and region."""

    function_name = "local-function"
    memory_limit_in_mb = 256

    def __init__(
        self,
        remaining_ms: int = DEFAULT_REMAINING_MS,
        *,
        account: str = LOCAL_ACCOUNT,
        region: str | None = None,
    ) -> None:
        self._remaining_ms = remaining_ms
        self.aws_request_id = str(uuid.uuid4())
        self.invoked_function_arn = (
            f"arn:aws:lambda:{region or local_region()}:{account}:function:{self.function_name}"
        )

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms
