"""Typed errors: every failure a report can carry has a stable ``code``.

Handlers never let a bare exception decide what the report says; anything that is not one of
these is reported as ``InternalError`` and re-raised so the asynchronous delivery reaches the DLQ.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

# The root and the configuration error are the contract's (it raises them); named here too, so every
# typed error is importable from this module.
from fleet_remediation.contract.errors import ConfigurationError as ConfigurationError
from fleet_remediation.contract.errors import RemediationError as RemediationError


class InvalidEventError(RemediationError):
    """The invocation event is malformed or carries an option that is not allowed."""

    code = "InvalidEvent"


class UnknownAlarmError(InvalidEventError):
    """An alarm event for an alarm this function does not handle."""

    code = "UnknownAlarm"


class SecretError(RemediationError):
    """The LiveKit credentials could not be read from Secrets Manager or are malformed."""

    code = "SecretError"


class LiveKitUnavailableError(RemediationError):
    """The LiveKit server could not be reached within the deadline."""

    code = "LiveKitUnavailable"


class LiveKitTimeoutError(LiveKitUnavailableError):
    """A LiveKit request got no complete answer within its deadline. The request may have reached
    the server, so whether it acted is unknown until the resource is read again."""

    code = "LiveKitTimeout"


class LiveKitApiError(RemediationError):
    """The LiveKit server answered with an error we do not treat as success."""

    code = "LiveKitApiError"

    def __init__(
        self, message: str, *, twirp_code: str, resource: str | None = None, http_status: int | None = None
    ) -> None:
        super().__init__(message, resource=resource)
        self.twirp_code = twirp_code
        self.http_status = http_status


class LiveKitBadReplyError(RemediationError):
    """The LiveKit server (or something in front of it) answered 200 with a body that is not the
    expected protobuf message. The request may have been carried out."""

    code = "LiveKitBadReply"


class AwsApiError(RemediationError):
    """An AWS API call failed with an error code we do not treat as success.

    ``unknown``: the request may have reached the service and acted (a 5xx, a reset, a read timeout):
    the resource must be read again before the next decision. Otherwise the service refused it (a
    4xx, throttling included, or no connection was made) and nothing happened."""

    code = "AwsApiError"

    def __init__(
        self, message: str, *, aws_code: str, resource: str | None = None, unknown: bool = False
    ) -> None:
        super().__init__(message, resource=resource)
        self.aws_code = aws_code
        self.unknown = unknown


# aws_api_errors' code for a call that got no reply (timeout, reset): it may have taken effect.
NO_REPLY = "Transport"
# The request never left: no connection was made, so the service cannot have acted on it.
NOT_SENT = (EndpointConnectionError, ConnectTimeoutError)
# HTTP statuses from 500 up: the service (or something in front of it) failed after taking the request.
SERVER_ERROR_STATUS = 500


def reached_service(exc: Exception) -> bool:
    """Whether the request behind a botocore failure may have been carried out."""
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", SERVER_ERROR_STATUS)
        return int(status) >= SERVER_ERROR_STATUS
    return not isinstance(exc, NOT_SENT)


@contextmanager
def aws_api_errors(operation: str, resource: str | None) -> Iterator[None]:
    """Turns a botocore failure of ``operation`` (e.g. "ECS StopTask") into ``AwsApiError``: the
    service's error code when it answered, ``Transport`` when no reply came; ``unknown`` when the
    request may have been carried out (``reached_service``)."""
    try:
        yield
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "Unknown")
        detail = error.get("Message", "")
        raise AwsApiError(
            f"{operation} failed: {code}" + (f": {detail}" if detail else ""),
            aws_code=code,
            resource=resource,
            unknown=reached_service(exc),
        ) from exc
    except BotoCoreError as exc:
        raise AwsApiError(
            f"{operation} failed: {exc}", aws_code=NO_REPLY, resource=resource, unknown=reached_service(exc)
        ) from exc


class OnceRecordUnknownError(RemediationError):
    """The once-only record of an action could not be written, and may have been (a 5xx after the
    write, a reset): the action neither runs unguarded nor is dropped. The invocation fails after its
    report; Lambda's retry, once this invocation's in-progress record has expired, runs it once."""

    code = "OnceRecordUnknown"
    fails_invocation = True


class KillSwitchError(RemediationError):
    """The per-environment mode parameter could not be read or holds an unknown value."""

    code = "KillSwitchError"


class DeadlineExceededError(RemediationError):
    """Work was left undone because the invocation's deadline was reached."""

    code = "DeadlineExceeded"


class ConcurrentActionError(RemediationError):
    """Another invocation holds the ledger entry for this resource."""

    code = "ConcurrentAction"


class NotificationUnknownError(RemediationError):
    """SNS may have taken a notification (a 5xx, a reset, a timeout after it was sent). It is not
    sent again, in this invocation or on Lambda's retry; its ``notification_id`` attribute lets a
    receiver drop a copy should one arrive."""

    code = "NotificationUnknown"


class NotificationLostError(RemediationError):
    """SNS did not take a notification within its budget. The invocation fails after its report, so
    an asynchronous delivery is retried (and, failing that, kept in the DLQ); the retry repeats no
    action, only the delivery (see ``adapters.notifier.NotificationDelivery``)."""

    code = "NotificationLost"
