"""Run an action at most once per key, across repeated and concurrent deliveries, with Powertools
Idempotency on DynamoDB. A repeat returns the first run's stored result; a delivery that arrives
while the first is still running gets ``ConcurrentActionError`` and does nothing.

Powertools Idempotency (it loads boto3) is imported when a guard is built, not with this module:
a handler's cold import stays under its CPU budget (bench.cold_imports)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import IDEMPOTENCY_WRITE
from fleet_remediation.core.errors import AwsApiError, ConcurrentActionError

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
    from aws_lambda_powertools.utilities.typing import LambdaContext

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
        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig

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
        from aws_lambda_powertools.utilities.idempotency import idempotent_function
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
            IdempotencyPersistenceConnectionError,
            IdempotencyPersistenceLayerError,
        )

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
            raise AwsApiError(
                f"idempotency table unavailable for {description}: {exc}",
                aws_code="IdempotencyStore",
                resource=self.table_name,
            ) from exc
        return result, not ran


class RunEveryTime:
    """A ``OnceGuard`` without memory: every call runs. For runs Lambda never retries and nobody
    deduplicates (the local plan CLI, the demo, tests of a single invocation)."""

    def run_once(
        self, key: dict[str, str], action: Callable[[], dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        return action(), False
