"""Explicit faults for boto3 clients (moto-backed in tests), injected with botocore's own event hooks
so the code under test runs its real request, retry and error handling.

- ``LostReply``: the request reaches the service and takes effect, then its reply never comes back
  (a ``ReadTimeoutError`` after the call, past botocore's retries): what a caller sees when a
  network path drops the response.
- ``KillBefore`` / ``KillAfter``: the invocation dies right before a request is sent, or right after
  it took effect — an exception that is not an ``Exception`` (like Lambda stopping the process), so
  no handler in the function can catch it and nothing after it runs.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ReadTimeoutError


class InvocationKilled(BaseException):
    """The Lambda process stopped here (timeout, out of memory, a redeploy)."""


class _Hook:
    """Fires on matching calls after letting ``skip`` of them through, ``times`` times."""

    def __init__(self, client: Any, event: str, times: int, skip: int) -> None:
        self.event = event
        self.remaining = times
        self.skip = skip
        self.fired = 0
        client.meta.events.register_first(event, self._fire)

    def _fire(self, **_: Any) -> None:
        if self.skip > 0:
            self.skip -= 1
            return
        if self.remaining <= 0:
            return
        self.remaining -= 1
        self.fired += 1
        self.fault()

    def fault(self) -> None:
        raise NotImplementedError


class LostReply(_Hook):
    """``operation`` (e.g. ``ecs.UpdateService``) succeeds at the service; the caller gets a timeout."""

    def __init__(self, client: Any, operation: str, times: int = 1, skip: int = 0) -> None:
        super().__init__(client, f"after-call.{operation}", times, skip)

    def fault(self) -> None:
        raise ReadTimeoutError(endpoint_url="https://fake-endpoint/lost-reply")


class KillBefore(_Hook):
    """The invocation dies before ``operation`` (e.g. ``ecs.UpdateService``) is sent."""

    def __init__(self, client: Any, operation: str, times: int = 1, skip: int = 0) -> None:
        super().__init__(client, f"before-call.{operation}", times, skip)

    def fault(self) -> None:
        raise InvocationKilled(f"killed at {self.event}")


class KillAfter(_Hook):
    """The invocation dies after ``operation`` took effect, before its caller sees the reply."""

    def __init__(self, client: Any, operation: str, times: int = 1, skip: int = 0) -> None:
        super().__init__(client, f"after-call.{operation}", times, skip)

    def fault(self) -> None:
        raise InvocationKilled(f"killed at {self.event}")
