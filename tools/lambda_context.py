"""A local stand-in for the Lambda context object (tests, demo, benchmarks)."""

from __future__ import annotations


class LocalLambdaContext:
    """The attributes of the Lambda context our handlers and Powertools use."""

    function_name = "local-function"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:local-function"
    aws_request_id = "00000000-0000-0000-0000-000000000001"

    def __init__(self, remaining_ms: int = 60_000) -> None:
        self._remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms
