"""Every AWS client the functions use comes from here, configured from its ``AwsCallBudget``
(contract/budgets.py): connect and read timeouts, a bounded number of attempts, standard or
adaptive retry mode. botocore's defaults (60 s socket timeouts, legacy retries) would let one
silent endpoint hold a function past its Lambda timeout with no report.

Side effects are retried by botocore only after a proved refusal (``guard_side_effects``): an
attempt that may have reached the service (a 5xx, a reset, a read timeout) ends the call, so its
error is the ambiguous one and no throttled retry hides it (docs/decisions/0008-one-outcome-rule.md).

Endpoints follow botocore's own resolution (``AWS_ENDPOINT_URL`` and the per-service variables
included), which is how the tests point a client at a silent or throttling endpoint.

boto3, botocore's client configuration and Powertools Parameters (which loads boto3) are imported
when the first client is made, not with this module: a handler's cold import stays under its CPU
budget (bench.cold_imports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from fleet_remediation.contract.budgets import KILL_SWITCH_READ, SECRET_READ, AwsCallBudget
from fleet_remediation.core.errors import reached_service

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
    from botocore.config import Config

# Every call that changes something, by botocore's service id: the calls whose attempts that may
# have acted are never retried. The fault suite holds three ambiguous faults for each of them.
SIDE_EFFECTS: dict[str, tuple[str, ...]] = {
    "ecs": ("TagResource", "UntagResource", "UpdateTaskProtection", "StopTask", "UpdateService"),
    "eventbridge": ("PutEvents",),
    "sns": ("Publish",),
    "dynamodb": ("PutItem", "UpdateItem", "DeleteItem"),
}
GUARD_ID = "fleet-remediation-no-retry-after-ambiguous-attempt"
Client = TypeVar("Client")


def client_config(budget: AwsCallBudget) -> Config:
    from botocore.config import Config

    return Config(
        connect_timeout=budget.connect_timeout_seconds,
        read_timeout=budget.read_timeout_seconds,
        retries={
            "mode": "adaptive" if budget.adaptive else "standard",
            "total_max_attempts": budget.attempts,
        },
    )


def aws_client(
    budget: AwsCallBudget, *, session: boto3.session.Session | None = None, region_name: str | None = None
) -> Any:
    """A boto3 client for ``budget.service`` whose every call ends within the budget's worst case
    (from ``session`` and in ``region_name`` when an operator tool names them)."""
    import boto3

    make = session.client if session is not None else boto3.client
    client = make(budget.service, config=client_config(budget), region_name=region_name)  # type: ignore[call-overload]
    return guard_side_effects(client)


def _no_retry_after_ambiguous_attempt(
    response: tuple[Any, dict[str, Any]] | None = None, caught_exception: Exception | None = None, **_: Any
) -> bool | None:
    """botocore's ``needs-retry`` hook, ahead of its retry handler: False (no retry) when this attempt
    may have acted; None leaves the decision to the retry mode (throttling, connect failures)."""
    if caught_exception is not None:
        return False if reached_service(caught_exception) else None
    if response is not None:
        status = int(response[1].get("ResponseMetadata", {}).get("HTTPStatusCode", 200))
        return False if status >= 500 else None
    return None


def guard_side_effects(client: Client) -> Client:
    """Registers the no-retry-after-ambiguity hook for the client's side-effecting calls (once per
    client, whoever built it: adapters apply it to injected clients too). Returns the client."""
    meta: Any = getattr(client, "meta")  # noqa: B009 - every boto3 client has it; typed stubs differ per service
    service_id = meta.service_model.service_id.hyphenize()
    for operation in SIDE_EFFECTS.get(service_id, ()):
        meta.events.register_first(
            f"needs-retry.{service_id}.{operation}",
            _no_retry_after_ambiguous_attempt,
            unique_id=f"{GUARD_ID}.{service_id}.{operation}",
        )
    return client


def ssm_provider() -> SSMProvider:
    """Powertools Parameters over an SSM client with the kill switch's budget."""
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    return SSMProvider(boto_config=client_config(KILL_SWITCH_READ))


def secrets_provider() -> SecretsProvider:
    """Powertools Parameters over a Secrets Manager client with the credentials' budget."""
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

    return SecretsProvider(boto_config=client_config(SECRET_READ))
