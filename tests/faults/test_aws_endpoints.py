"""Every AWS client of the functions against endpoints that misbehave at the HTTP layer, below
botocore's retries (devkit.aws_endpoints): silent (accepts, reads, never answers), slow, throttling.
Each client is the one the function builds (adapters/aws_clients.py and the call budgets of
contract/budgets.py); behind the endpoint, when it forwards, is moto's server on loopback.

A silent endpoint: the client gives up within its budget's worst case with a typed error, after
exactly the budget's number of attempts. (SNS is not here: the notifier makes one botocore attempt at
a time and retries inside its own publish budget, adapters/notifier.py; the reaper's fault suite
points it at a silent endpoint after its deletes.) A throttling endpoint that throttles fewer times than the
budget's attempts: botocore's own retry recovers and the call succeeds; as many times as the attempts:
a typed error. A slow endpoint (within the read timeout): the call succeeds.

The silent cases run at once in threads (each has its own endpoint), so the module takes about as
long as its slowest client.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from devkit.aws_endpoints import AwsEndpoint, Behaviour
from fleet_remediation.adapters.aws_clients import aws_client, secrets_provider
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.livekit_rooms import read_credentials
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights
from fleet_remediation.contract import budgets
from fleet_remediation.contract.events import SuspectWorkerDetail, TimeWindow
from fleet_remediation.core.errors import AwsApiError, RemediationError
from fleet_remediation.core.kill_switch import SsmModeSwitch
from tests.faults.table import FaultRecorder
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher
from worker_drainer.adapters.ecs_tasks import BotoEcsTasks
from worker_drainer.adapters.ledger import DynamoLedger

pytestmark = [
    pytest.mark.timeout(60),
    # Outside Lambda there is no context whose remaining time Powertools could read.
    pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left:UserWarning"),
]

PARAMETER = "/livekit-fleet-remediation/faults/mode"
SECRET = "faults/livekit/api-credentials"
ONCE_TABLE = "faults-once"
LEDGER_TABLE = "faults-ledger"
CLUSTER, SERVICE = "faults-cluster", "faults-agent"
LOG_GROUP = "/faults/agent"
# The drainer's ECS timeout in these tests (the setting's default is 5 s; 2 s keeps the suite fast).
ECS_TIMEOUT_SECONDS = 2.0
# Thread scheduling and interpreter overhead on a shared 2-core machine.
SLACK_SECONDS = 1.0

Call = Callable[[], Any]


@dataclass(frozen=True)
class ClientCase:
    """One client as a function builds it: ``build`` runs with AWS_ENDPOINT_URL set (botocore reads
    it when a client is created) and returns the call to make."""

    name: str
    function: str
    budget: budgets.AwsCallBudget
    build: Callable[[], Call]
    error_code: str
    # Its call changes something: an attempt that may have acted (a silent endpoint's) is not retried.
    side_effect: bool = False
    # Its error says the outcome is unknown (the once-guard's says its record could not be kept).
    unknown_error: bool = False
    # A write of unknown outcome is read back once, on the same client (the once-guard's record): one
    # more call within the caller's budget (``ONCE_RECORD_SECONDS``: two calls).
    reread: bool = False

    @property
    def silent_attempts(self) -> int:
        written = 1 if self.side_effect else self.budget.attempts
        return written + (self.budget.attempts if self.reread else 0)

    @property
    def throttled_attempts(self) -> int:
        """Throttled on every attempt of the write; the read-back then answers on its first."""
        return self.budget.attempts + (1 if self.reread else 0)

    @property
    def worst_case_seconds(self) -> float:
        return self.budget.worst_case_seconds * (2 if self.reread else 1)


def _suspect() -> SuspectWorkerDetail:
    now = datetime.now(UTC)
    return SuspectWorkerDetail(
        environment="faults",
        agent_service="agents",
        log_stream="agent/agent/abc",
        task_id="abc",
        alarm_name="livekit-faults-agents-tts-reach",
        p_value=0.001,
        window=TimeWindow(start=now - timedelta(minutes=30), end=now),
    )


def _kill_switch() -> Call:
    return SsmModeSwitch(PARAMETER, client=aws_client(budgets.KILL_SWITCH_READ)).read


def _credentials() -> Call:
    provider = secrets_provider()
    return lambda: read_credentials(SECRET, provider)


def _suspect_event() -> Call:
    publisher = EventBridgePublisher("default")
    return lambda: publisher.put_suspect_worker(_suspect())


def _once_record() -> Call:
    guard = DynamoDBOnceGuard(ONCE_TABLE)
    return lambda: guard.run_once({"alarm": str(uuid.uuid4())}, lambda: {"done": True})


def _insights_query() -> Call:
    insights = CloudWatchLogsInsights(poll_interval_seconds=0.1)

    def query() -> Any:
        end = datetime.now(UTC)
        start = end - timedelta(minutes=5)
        return insights.run_query(LOG_GROUP, "fields @message", start, end, time.monotonic() + 60)

    return query


def _ecs_tasks() -> Call:
    return BotoEcsTasks(CLUSTER, SERVICE, request_timeout_seconds=ECS_TIMEOUT_SECONDS).running_tasks


def _ledger_lease() -> Call:
    ledger = DynamoLedger(LEDGER_TABLE, SERVICE)
    return lambda: ledger.acquire(f"task-{uuid.uuid4()}", "faults", datetime.now(UTC), 60)


CASES = [
    ClientCase("ssm-kill-switch", "all three", budgets.KILL_SWITCH_READ, _kill_switch, "KillSwitchError"),
    ClientCase(
        "secretsmanager-credentials",
        "zombie_reaper, worker_drainer",
        budgets.SECRET_READ,
        _credentials,
        "SecretError",
    ),
    ClientCase(
        "eventbridge-put-events",
        "tts_reach_alarm",
        budgets.SUSPECT_EVENT_PUT,
        _suspect_event,
        "AwsApiError",
        side_effect=True,
        unknown_error=True,
    ),
    ClientCase(
        "dynamodb-idempotency",
        "tts_reach_alarm",
        budgets.IDEMPOTENCY_WRITE,
        _once_record,
        # A once-record that could not be written may have been (the persistence layer does not say
        # which) and could not be read back: the action is neither run nor dropped, the invocation
        # fails and Lambda's retry acts once.
        "OnceRecordUnknown",
        side_effect=True,
        reread=True,
    ),
    ClientCase(
        "logs-insights",
        "tts_reach_alarm, worker_drainer",
        budgets.LOGS_INSIGHTS_START,
        _insights_query,
        "AwsApiError",
        # StartQuery creates a query: one attempt, and a lost reply is unknown (one may be running).
        side_effect=True,
        unknown_error=True,
    ),
    ClientCase(
        "ecs-tasks", "worker_drainer", budgets.ecs_call(ECS_TIMEOUT_SECONDS), _ecs_tasks, "AwsApiError"
    ),
    ClientCase(
        "dynamodb-ledger",
        "worker_drainer",
        budgets.LEDGER_CALL,
        _ledger_lease,
        "AwsApiError",
        side_effect=True,
        unknown_error=True,
    ),
]
IDS = [case.name for case in CASES]


@dataclass
class Outcome:
    seconds: float
    result: Any = None
    error: BaseException | None = None
    requests: int = 0


def _run(call: Call) -> tuple[float, Any, BaseException | None]:
    started = time.monotonic()
    try:
        result = call()
    except BaseException as exc:  # the assertions below name what it was
        return time.monotonic() - started, None, exc
    return time.monotonic() - started, result, None


Plan = Callable[[ClientCase], dict[str, Any]]


def _run_each(upstream: str, behaviour: Behaviour, plan: Plan) -> dict[str, Outcome]:
    """One endpoint per client, each client built (in this thread, with AWS_ENDPOINT_URL pointing at
    its endpoint), then every call made at once."""
    endpoints: dict[str, AwsEndpoint] = {}
    calls: dict[str, Call] = {}
    try:
        with pytest.MonkeyPatch.context() as monkeypatch:
            for case in CASES:
                endpoint = endpoints[case.name] = AwsEndpoint(upstream).start()
                endpoint.behave(behaviour, **plan(case))
                monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint.url)
                calls[case.name] = case.build()
        with ThreadPoolExecutor(max_workers=len(CASES)) as pool:
            futures = {name: pool.submit(_run, call) for name, call in calls.items()}
            results = {name: future.result() for name, future in futures.items()}
        return {
            name: Outcome(seconds, result, error, endpoints[name].requests)
            for name, (seconds, result, error) in results.items()
        }
    finally:
        for endpoint in endpoints.values():
            endpoint.stop()


@pytest.fixture(scope="module")
def aws_resources(moto_server: str) -> str:
    """What the calls need, created in moto through its server."""

    def client(service: str) -> Any:
        return boto3.client(service, endpoint_url=moto_server)  # type: ignore[call-overload]

    client("ssm").put_parameter(Name=PARAMETER, Value="dry-run", Type="String", Overwrite=True)
    client("secretsmanager").create_secret(
        Name=SECRET, SecretString=json.dumps({"api_key": "devkey", "api_secret": "secret"})
    )
    dynamodb = client("dynamodb")
    dynamodb.create_table(
        TableName=ONCE_TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.create_table(
        TableName=LEDGER_TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client("ecs").create_cluster(clusterName=CLUSTER)
    client("logs").create_log_group(logGroupName=LOG_GROUP)
    return moto_server


@pytest.fixture(scope="module")
def silent(aws_resources: str) -> dict[str, Outcome]:
    return _run_each(aws_resources, Behaviour.SILENT, lambda case: {})


@pytest.fixture(scope="module")
def throttled_below_retries(aws_resources: str) -> dict[str, Outcome]:
    # Each client's budget allows ``attempts``; the endpoint throttles one fewer time than that.
    return _run_each(aws_resources, Behaviour.THROTTLE, lambda case: {"times": case.budget.attempts - 1})


@pytest.fixture(scope="module")
def throttled_beyond_retries(aws_resources: str) -> dict[str, Outcome]:
    return _run_each(aws_resources, Behaviour.THROTTLE, lambda case: {"times": case.budget.attempts})


def _slow_delay(case: ClientCase) -> float:
    return case.budget.read_timeout_seconds / 2


@pytest.fixture(scope="module")
def slow(aws_resources: str) -> dict[str, Outcome]:
    return _run_each(aws_resources, Behaviour.SLOW, lambda case: {"delay_s": _slow_delay(case)})


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_silent_endpoint_is_given_up_within_the_budget(
    case: ClientCase, silent: dict[str, Outcome], fault: FaultRecorder
) -> None:
    fault.describe(f"aws silent endpoint: {case.name}", case.function)
    outcome = silent[case.name]
    fault.took(outcome.seconds)
    budget = case.budget
    assert isinstance(outcome.error, RemediationError), f"{case.name}: {outcome.error!r}"
    assert outcome.error.code == case.error_code
    # A side effect's unanswered attempt may have acted: it ends the call (unknown), never retried.
    assert outcome.requests == case.silent_attempts, "each attempt reaches the endpoint once, no more"
    assert outcome.seconds <= case.worst_case_seconds + SLACK_SECONDS
    # Every attempt waited out its read timeout: the configured timeout is the one in force.
    assert outcome.seconds >= case.silent_attempts * budget.read_timeout_seconds - 0.1
    if case.unknown_error:
        assert isinstance(outcome.error, AwsApiError)
        assert outcome.error.unknown
    fault.outcome(
        f"{outcome.error.code} after {outcome.requests} attempt(s) "
        f"(budget {budget.worst_case_seconds:g}s: {budget.attempts} x ({budget.connect_timeout_seconds:g}s "
        f"connect + {budget.read_timeout_seconds:g}s read) + back-off)"
    )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_throttling_below_the_retries_is_recovered_by_botocore(
    case: ClientCase, throttled_below_retries: dict[str, Outcome], fault: FaultRecorder
) -> None:
    fault.describe(f"aws throttled {case.budget.attempts - 1}x: {case.name}", case.function)
    outcome = throttled_below_retries[case.name]
    fault.took(outcome.seconds)
    assert outcome.error is None, f"{case.name}: {outcome.error!r}"
    assert outcome.requests >= case.budget.attempts
    assert outcome.seconds <= case.budget.worst_case_seconds + SLACK_SECONDS
    fault.outcome(f"succeeded on attempt {case.budget.attempts} (botocore's retry)")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_throttling_beyond_the_retries_is_a_typed_error(
    case: ClientCase, throttled_beyond_retries: dict[str, Outcome], fault: FaultRecorder
) -> None:
    fault.describe(f"aws throttled {case.budget.attempts}x: {case.name}", case.function)
    outcome = throttled_beyond_retries[case.name]
    fault.took(outcome.seconds)
    assert isinstance(outcome.error, RemediationError), f"{case.name}: {outcome.error!r}"
    assert outcome.error.code == case.error_code
    assert outcome.requests == case.throttled_attempts
    assert outcome.seconds <= case.worst_case_seconds + SLACK_SECONDS
    fault.outcome(f"{outcome.error.code} after {outcome.requests} throttled attempts")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_slow_endpoint_within_the_read_timeout_still_answers(
    case: ClientCase, slow: dict[str, Outcome], fault: FaultRecorder
) -> None:
    delay = _slow_delay(case)
    fault.describe(f"aws slow ({delay:g}s per request): {case.name}", case.function)
    outcome = slow[case.name]
    fault.took(outcome.seconds)
    assert outcome.error is None, f"{case.name}: {outcome.error!r}"
    assert outcome.seconds >= delay
    assert outcome.seconds <= case.budget.worst_case_seconds + SLACK_SECONDS
    fault.outcome(f"answered after {outcome.requests} request(s), late")
