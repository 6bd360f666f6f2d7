"""A local stand-in for the Lambda context object (tests, demo, benchmarks)."""

from __future__ import annotations

import uuid


class LocalLambdaContext:
    """The attributes of the Lambda context our handlers and Powertools use. Like Lambda, every
    context carries its own request id: the drainer's lease and audit trail tell invocations apart by it."""

    function_name = "local-function"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:local-function"

    def __init__(self, remaining_ms: int = 60_000) -> None:
        self._remaining_ms = remaining_ms
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms
