"""The environment's chat entry point (``lkfr-<env>-chat``): the one function the chat channel's
role may invoke, and all a chat request can do (docs/on-call-from-a-phone.md):

* ``{"u": TOKEN}`` / ``{"d": TOKEN}``: undrain, or drain again, the task a drainer message named.
  The token must be one the drainer recorded for that action (``adapters.chat_tokens``), unexpired,
  unused and of a service of this environment; it is claimed (used once), then the service's
  drainer gets the manual event for that task asynchronously, marked as chat's: the drainer runs
  it like any manual event (its report, action events and message in the incident's thread), and
  refuses a chat drain during a group event.
* ``{"o": CODE}``: write ``off`` to one function's own kill switch. Never another value.

Anything else is refused at the door (``core.chat_actions.parse_chat_request``). Every request,
done or refused, is one report (logged, and the command's reply in the channel) and action events.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import CHAT_FORWARD, SWITCH_OFF_WRITE
from fleet_remediation.contract.models import excerpt
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core.announce import ActionEventSink, action_events, announce
from fleet_remediation.core.chat_actions import ChatRequest, parse_chat_request
from fleet_remediation.core.errors import (
    AwsApiError,
    ChatRequestRefusedError,
    ConcurrentActionError,
    InvalidEventError,
    RemediationError,
    aws_api_errors,
)
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Outcome, Refusal, Trigger, TriggerKind
from worker_drainer.adapters.chat_tokens import ChatToken, ChatTokenStore, DynamoChatTokens

CHAT_ENTRY = "chat_entry"
SETTINGS_VARIABLE = "CHAT_ENTRY_SETTINGS"


class ChatService(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ledger_table_name: str
    drainer_function_name: str


class ChatEntrySettings(BaseModel):
    """What the stack tells the entry point: each agent service's ledger and drainer, and the
    kill-switch parameter of each function it may turn off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    environment_name: str
    services: dict[str, ChatService]
    switches: dict[FunctionName, str]


class DrainerInvoker(Protocol):
    def send(self, function_name: str, payload: Mapping[str, Any]) -> None:
        """Start one asynchronous run of ``function_name``; may have started it when it raises."""
        ...


class SwitchWriter(Protocol):
    def turn_off(self, parameter_name: str) -> None: ...


class LambdaInvoker:
    def __init__(self, client: Any | None = None) -> None:
        self._client = client or aws_client(CHAT_FORWARD)

    def send(self, function_name: str, payload: Mapping[str, Any]) -> None:
        with aws_api_errors("Lambda Invoke", function_name):
            self._client.invoke(
                FunctionName=function_name, InvocationType="Event", Payload=json.dumps(payload).encode()
            )


class SsmSwitchWriter:
    def __init__(self, client: Any | None = None) -> None:
        self._client = client or aws_client(SWITCH_OFF_WRITE)

    def turn_off(self, parameter_name: str) -> None:
        with aws_api_errors("SSM PutParameter", parameter_name):
            self._client.put_parameter(Name=parameter_name, Value="off", Type="String", Overwrite=True)


@dataclass
class ChatEntryDependencies:
    settings: ChatEntrySettings
    tokens: Mapping[str, ChatTokenStore]
    invoker: DrainerInvoker
    switches: SwitchWriter
    action_events: ActionEventSink | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @classmethod
    def from_environment(cls) -> ChatEntryDependencies:
        settings = ChatEntrySettings.model_validate_json(os.environ[SETTINGS_VARIABLE])
        return cls(
            settings=settings,
            tokens={name: DynamoChatTokens(s.ledger_table_name) for name, s in settings.services.items()},
            invoker=LambdaInvoker(),
            switches=SsmSwitchWriter(),
            action_events=EventBridgeActionEvents(),
        )


def _refused(token: str, why: str, what_to_do: str) -> ChatRequestRefusedError:
    return ChatRequestRefusedError(f"button token {token} refused: {why}; {what_to_do}", resource=token)


def find_token(token: str, deps: ChatEntryDependencies) -> tuple[str, ChatToken]:
    """The service whose ledger holds ``token`` and its record; refused when no ledger does."""
    for service, store in deps.tokens.items():
        found = store.read(token)
        if found is not None:
            return service, found
    raise _refused(
        token, "unknown (never issued here, or over a day old)", "use the e-mail's command or lkfr undo"
    )


def check_token(request: ChatRequest, service: str, record: ChatToken, now: datetime) -> None:
    """The record allows exactly this request: its action, its service, unexpired and unused."""
    token = record.token
    if record.action != request.action:
        raise _refused(
            token, f"it was issued to {record.action}, not to {request.action}", "press its own button"
        )
    if record.agent_service != service:
        raise _refused(
            token,
            f"it names service {record.agent_service}, not {service} whose drainer issued it",
            "use the e-mail's command",
        )
    if record.used_at is not None:
        used = datetime.fromtimestamp(record.used_at, UTC).isoformat()
        raise _refused(token, f"already used at {used}", "see the drainer's message in the thread")
    if record.expires_at <= int(now.timestamp()):
        expired = datetime.fromtimestamp(record.expires_at, UTC).isoformat()
        raise _refused(token, f"expired at {expired}", "use the e-mail's command or lkfr undo")


def forward(request: ChatRequest, deps: ChatEntryDependencies, report: ReportBuilder) -> None:
    assert request.token is not None  # a token action, past the door
    service, record = find_token(request.token, deps)
    report.agent_service = service
    report.incident = record.incident_id
    now = deps.clock()
    check_token(request, service, record, now)
    try:
        deps.tokens[service].claim(record.token, now)
    except ConcurrentActionError as exc:
        raise _refused(record.token, "already used", "see the drainer's message in the thread") from exc
    drainer = deps.settings.services[service].drainer_function_name
    payload = {
        "action": record.action,
        "task": record.task_id,
        "dry_run": False,
        "chat": {"token": record.token, "incident": record.incident_id},
    }
    reason = f"chat button: {record.action} task {record.task_id} ({service}), sent to {drainer}"
    try:
        deps.invoker.send(drainer, payload)
    except RemediationError as exc:
        # The token stays used: a forward that may have started the run is never sent twice.
        outcome = Outcome.UNKNOWN if isinstance(exc, AwsApiError) and exc.unknown else Outcome.FAILED
        report.action(record.task_id, f"chat-{record.action}", outcome, reason, error=exc)
        raise
    report.action(record.task_id, f"chat-{record.action}", Outcome.DONE, reason)
    report.summary["reply"] = (
        f"{record.action} of task {record.task_id} ({service}) sent to its drainer: "
        "its message follows in the incident's thread"
    )


def turn_off(request: ChatRequest, deps: ChatEntryDependencies, report: ReportBuilder) -> None:
    assert request.function is not None  # an off request, past the door
    parameter = deps.settings.switches[request.function]
    reason = f"chat button: turn {request.function.value} off"
    try:
        deps.switches.turn_off(parameter)
    except RemediationError as exc:
        report.action(parameter, "switch-off", Outcome.FAILED, reason, error=exc)
        raise
    report.action(parameter, "switch-off", Outcome.DONE, reason)
    report.summary["reply"] = f"{request.function.value} is off ({parameter} = off)"


class ChatEntry:
    """The entry point as the shared handler runs it (``core.handler.Invokes``)."""

    def invoke(
        self,
        event: Any,
        report: ReportBuilder,
        deps: ChatEntryDependencies,
        remaining_seconds: float,
        context: LambdaContext | None = None,
    ) -> None:
        report.environment = deps.settings.environment_name
        report.trigger = Trigger(kind=TriggerKind.MANUAL, source="chat", detail={"request": excerpt(event)})
        # A chat request is never a dry run: it stops, and stopping needs no rehearsal.
        report.mode = Mode.ENFORCE
        try:
            request = parse_chat_request(event)
            if request.action == "off":
                turn_off(request, deps, report)
            else:
                forward(request, deps, report)
        except InvalidEventError as exc:
            report.refusals.append(Refusal(exc.resource or "chat", "chat-request", str(exc)))
            report.summary["reply"] = f"refused: {exc}"
            raise
        except RemediationError as exc:
            report.summary["reply"] = f"failed: {exc}"
            raise
        finally:
            announce(report, action_events(report, report.incident, deps.clock()), deps.action_events, None)
