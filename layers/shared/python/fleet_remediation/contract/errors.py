"""The root of the typed errors, and the one the contract itself raises.

Every failure a report can carry is a ``RemediationError`` with a stable ``code`` (the rest are in
``core/errors.py``). ``ConfigurationError`` lives here because the settings that synth and cold start
share reject bad values with it, and the contract imports no other layer.
"""

from __future__ import annotations


class RemediationError(Exception):
    """Base class. ``code`` is what the report and the metrics show."""

    code = "RemediationError"
    # True: the invocation fails after its report, so Lambda's asynchronous retry runs it again.
    fails_invocation = False

    def __init__(self, message: str, *, resource: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.resource = resource


class ConfigurationError(RemediationError):
    """The function's environment or the deployed configuration is invalid."""

    code = "ConfigurationError"
