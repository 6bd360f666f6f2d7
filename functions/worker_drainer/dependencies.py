"""What the drainer talks to, injected: built from the function's settings on a cold start, or
replaced by in-memory and local stand-ins in tests, the demo and the replay."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.alarm_state import AlarmStates, CloudWatchAlarmStates
from fleet_remediation.adapters.common_wiring import kill_switch_for, notifiers_for
from fleet_remediation.adapters.idempotency import OnceGuard, RunEveryTime
from fleet_remediation.adapters.livekit_rooms import RoomService, room_service_factory
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights
from fleet_remediation.adapters.notifier import Notifier, NotifyingDependencies
from fleet_remediation.adapters.scan_budget import budgeted
from fleet_remediation.contract.settings import DrainerSettings, settings_from_environment
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.announce import ActionEventSink
from fleet_remediation.core.kill_switch import ModeSwitch
from worker_drainer.adapters.chat_tokens import ChatTokenStore, DynamoChatTokens
from worker_drainer.adapters.ecs_tasks import BotoEcsTasks, EcsTaskService
from worker_drainer.adapters.ledger import DynamoLedger, Ledger
from worker_drainer.adapters.outbox import DynamoOutbox, NotificationOutbox, ledger_once_guard
from worker_drainer.adapters.worker_logs import InsightsWorkerLogs, WorkerLogs
from worker_drainer.adapters.worker_probe import HttpWorkerProbe, WorkerProbe


@dataclass
class DrainerDependencies(NotifyingDependencies):
    settings: DrainerSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    ecs: EcsTaskService
    ledger: Ledger
    worker_logs: WorkerLogs
    worker_probe: WorkerProbe
    room_service_factory: Callable[[], RoomService]
    # The VAD alarm's state, for the scheduled tick (``vad_alarm_tick``).
    alarm_states: AlarmStates
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    chat_notifier: Notifier | None = None
    # Per-channel once-keys of each delivery, and the outbox holding a message SNS did not take for
    # Lambda's retry. Runs Lambda never retries (the plan CLI, the replay) need neither.
    once: OnceGuard = field(default_factory=RunEveryTime)
    outbox: NotificationOutbox | None = None

    # Where each action and refusal is announced (None: nowhere, e.g. the replay).
    action_events: ActionEventSink | None = None
    # The chat buttons' tokens (None: no chat buttons) and the group events a chat drain waits out.
    chat_tokens: ChatTokenStore | None = None

    @classmethod
    def from_environment(cls) -> DrainerDependencies:
        settings = settings_from_environment(DrainerSettings)
        notifier, chat_notifier = notifiers_for(settings)

        policy = settings.drainer.policy
        return cls(
            settings=settings,
            action_events=EventBridgeActionEvents(),
            mode_switch=kill_switch_for(settings),
            notifier=notifier,
            chat_notifier=chat_notifier,
            once=ledger_once_guard(settings.ledger_table_name),
            outbox=DynamoOutbox(settings.ledger_table_name),
            ecs=BotoEcsTasks(
                settings.ecs_cluster,
                settings.ecs_service,
                request_timeout_seconds=settings.drainer.ecs_request_timeout_seconds,
            ),
            ledger=DynamoLedger(settings.ledger_table_name, settings.ecs_service),
            worker_logs=InsightsWorkerLogs(
                budgeted(
                    CloudWatchLogsInsights(),
                    settings.scan_budget,
                    settings.scan_budget_table_name,
                ),
                settings.agent_log_group,
                SignalCatalog.from_settings(settings.signals),
            ),
            worker_probe=HttpWorkerProbe(policy.worker_http_port, policy.worker_http_timeout_seconds),
            room_service_factory=room_service_factory(
                str(settings.livekit_url),
                settings.livekit_secret_id,
                settings.drainer.livekit_request_timeout_seconds,
            ),
            alarm_states=CloudWatchAlarmStates(),
            chat_tokens=DynamoChatTokens(settings.ledger_table_name) if settings.chat_topic_arn else None,
        )
