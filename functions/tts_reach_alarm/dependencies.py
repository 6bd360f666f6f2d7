"""What the TTS-reach responder talks to, injected: built from its settings on a cold start, or
replaced by in-memory and local stand-ins in tests, the demo and the replay."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.alarm_state import AlarmStates, CloudWatchAlarmStates
from fleet_remediation.adapters.common_wiring import kill_switch_for, notifiers_for
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard, OnceGuard
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights, LogsInsights
from fleet_remediation.adapters.notifier import Notifier, NotifyingDependencies
from fleet_remediation.adapters.scan_budget import budgeted
from fleet_remediation.contract.naming import EVENT_BUS_NAME
from fleet_remediation.contract.settings import TtsReachSettings, settings_from_environment
from fleet_remediation.core.announce import ActionEventSink
from fleet_remediation.core.kill_switch import ModeSwitch
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher, EventPublisher
from tts_reach_alarm.adapters.task_facts import EcsTaskFacts, TaskFactsReader


@dataclass
class TtsReachDependencies(NotifyingDependencies):
    settings: TtsReachSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    events: EventPublisher
    insights: LogsInsights
    once: OnceGuard
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    chat_notifier: Notifier | None = None
    # The page's state, for the scheduled re-check (None: no re-check can find an open incident).
    alarm_states: AlarmStates | None = None

    # Where each action and refusal is announced (None: nowhere, e.g. the replay).
    action_events: ActionEventSink | None = None
    # The ECS facts of the tasks (zone, revision, start) for the group verdict. None: no ECS to ask
    # (a test world or backtest without one); the deployed function always reads its cluster's.
    task_facts: TaskFactsReader | None = None

    @classmethod
    def from_environment(cls) -> TtsReachDependencies:
        settings = settings_from_environment(TtsReachSettings)
        notifier, chat_notifier = notifiers_for(settings)
        return cls(
            settings=settings,
            action_events=EventBridgeActionEvents(),
            mode_switch=kill_switch_for(settings),
            notifier=notifier,
            chat_notifier=chat_notifier,
            events=EventBridgePublisher(EVENT_BUS_NAME),
            insights=budgeted(
                CloudWatchLogsInsights(),
                settings.scan_budget,
                settings.scan_budget_table_name,
            ),
            once=DynamoDBOnceGuard(settings.idempotency_table_name),
            alarm_states=CloudWatchAlarmStates(),
            task_facts=EcsTaskFacts(settings.ecs_cluster) if settings.ecs_cluster else None,
        )
