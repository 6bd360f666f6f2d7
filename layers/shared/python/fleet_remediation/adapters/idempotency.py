"""Run an action at most once per key, across repeated and concurrent deliveries, with Powertools
Idempotency on DynamoDB. A repeat returns the first run's stored result; a delivery that arrives
while the first is still running gets ``ConcurrentActionError`` and does nothing.

A record write that fails before the action may still have landed (a 5xx after the write, a reset):
the record is read again. Completed: the earlier run's result stands. Otherwise the action is not run
unguarded (another delivery may hold the key) nor dropped: ``OnceRecordUnknownError`` fails the
invocation after its report, and Lambda's retry, after this invocation's in-progress record has
expired, runs the action once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyItemNotFoundError,
    IdempotencyPersistenceConnectionError,
    IdempotencyPersistenceLayerError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import IDEMPOTENCY_WRITE
from fleet_remediation.core.errors import ConcurrentActionError, OnceRecordUnknownError

COMPLETED = "COMPLETED"
# Long enough to outlive every redelivery of one alarm transition (EventBridge retries for 24 h at most).
RECORD_TTL_SECONDS = 24 * 60 * 60


class OnceGuard(Protocol):
    def run_once(
        self, key: dict[str, str], action: Callable[[], dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        """Returns the action's result and whether it is a replay of an earlier run."""
        ...


class DynamoDBOnceGuard:
    def __init__(self, table_name: str, *, persistence: DynamoDBPersistenceLayer | None = None) -> None:
        self.table_name = table_name
        self._persistence = persistence or DynamoDBPersistenceLayer(
            table_name=table_name, boto3_client=aws_client(IDEMPOTENCY_WRITE)
        )
        self._config = IdempotencyConfig(
            expires_after_seconds=RECORD_TTL_SECONDS, raise_on_no_idempotency_key=True
        )

    def register_lambda_context(self, context: LambdaContext) -> None:
        """Lets an in-progress record expire with the invocation that wrote it (a killed run is retried)."""
        self._config.register_lambda_context(context)

    def run_once(
        self, key: dict[str, str], action: Callable[[], dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        ran: list[dict[str, Any]] = []

        def execute(once_key: dict[str, str]) -> dict[str, Any]:
            ran.append(action())
            return ran[0]

        guarded = idempotent_function(
            execute,
            data_keyword_argument="once_key",
            persistence_store=self._persistence,
            config=self._config,
            key_prefix="fleet-remediation-once",
        )
        description = ", ".join(f"{k}={v}" for k, v in key.items())
        try:
            result: dict[str, Any] = guarded(once_key=key)
        except IdempotencyAlreadyInProgressError:
            raise ConcurrentActionError(
                f"another invocation is handling {description}", resource=self.table_name
            ) from None
        except (IdempotencyPersistenceLayerError, IdempotencyPersistenceConnectionError) as exc:
            if ran:
                # The action ran and only its record was lost: its result stands, it is never redone.
                return ran[0], False
            earlier = self._completed(key)
            if earlier is not None:
                return earlier, True
            raise OnceRecordUnknownError(
                f"the once-only record for {description} could not be written and may have been "
                f"({exc}); not acted on now, the invocation fails so Lambda's retry acts once",
                resource=self.table_name,
            ) from exc
        return result, not ran

    def _completed(self, key: dict[str, str]) -> dict[str, Any] | None:
        """The stored result when the key's record says the action completed; None otherwise
        (absent, in progress, or unreadable)."""
        try:
            record = self._persistence.get_record(key)
        except (IdempotencyItemNotFoundError, IdempotencyPersistenceLayerError):
            return None
        except Exception:
            return None
        if record is None or record.status != COMPLETED:
            return None
        return record.response_json_as_dict() or {}


class RunEveryTime:
    """A ``OnceGuard`` without memory: every call runs. For runs Lambda never retries and nobody
    deduplicates (the local plan CLI, the demo, tests of a single invocation)."""

    def run_once(
        self, key: dict[str, str], action: Callable[[], dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        return action(), False
