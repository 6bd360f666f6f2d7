"""Errors that say what to fix: what went wrong with AWS credentials, a secret or LiveKit's API
key, classified from the exception an SDK raised, in words with the fix.

Powertools wraps every provider error in ``GetParameterError(str(exc))`` raised inside its
``except`` block, so the botocore error it hides is the wrapper's ``__context__``.
"""

from __future__ import annotations

from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

NO_CREDENTIALS = (
    "no AWS credentials found: sign in (aws sso login --profile NAME, then export AWS_PROFILE=NAME) "
    "or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then run again"
)
BAD_CREDENTIALS = (
    "AWS rejected the credentials as invalid or expired ({code}): refresh them (aws sso login, or "
    "new access keys / session token) and run again"
)
NOT_ALLOWED = (
    "the AWS credentials are valid but not allowed to call {action} on {resource} ({code}): use a "
    "role that allows it, or ask for that permission"
)
# Where the environment's configuration is: a function cannot know; ``lkfr`` names the file, stack or
# app it read in its place.
CONFIGURATION = "the environment's configuration"
SECRET_NOT_FOUND = (
    "secret {resource} does not exist in {region}: create it with "
    '{{"api_key": "...", "api_secret": "..."}}, or correct livekit_secret_name in '
    + CONFIGURATION.replace("{", "{{")
)
LIVEKIT_UNAUTHORIZED = (
    "the LiveKit server refused the API key: the key or secret does not match the server's keys; "
    "check both against the server's configuration"
)
_INVALID = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
        "RequestExpired",
    }
)
_DENIED = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})


def unwrap(exc: BaseException) -> BaseException:
    """The botocore error behind a Powertools ``GetParameterError`` (or ``exc`` itself)."""
    seen = exc
    while not isinstance(seen, (ClientError, NoCredentialsError, PartialCredentialsError)):
        inner = seen.__cause__ or seen.__context__
        if inner is None:
            return exc
        seen = inner
    return seen


def credentials_hint(exc: BaseException, *, action: str, resource: str) -> str | None:
    """What to fix when AWS refused the call for its credentials or their permissions; None when
    the error is something else."""
    cause = unwrap(exc)
    if isinstance(cause, (NoCredentialsError, PartialCredentialsError)):
        return NO_CREDENTIALS
    if not isinstance(cause, ClientError):
        return None
    code = str(cause.response.get("Error", {}).get("Code", ""))
    if code in _INVALID:
        return BAD_CREDENTIALS.format(code=code)
    if code in _DENIED:
        return NOT_ALLOWED.format(action=action, resource=resource, code=code)
    return None


def secret_hint(exc: BaseException, *, secret_id: str, region: str | None) -> str | None:
    """``credentials_hint`` for reading the LiveKit secret, or that the secret does not exist."""
    found = credentials_hint(exc, action="GetSecretValue", resource=secret_id)
    cause = unwrap(exc)
    missing = isinstance(cause, ClientError) and cause.response.get("Error", {}).get("Code") == (
        "ResourceNotFoundException"
    )
    if found is None and missing:
        return SECRET_NOT_FOUND.format(resource=secret_id, region=region or "this region")
    return found


def livekit_status_hint(status: int) -> str | None:
    return LIVEKIT_UNAUTHORIZED if status == 401 else None
