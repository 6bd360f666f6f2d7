"""What the reaper talks to, injected: built from its settings on a cold start, or replaced by
local stand-ins in tests, the demo, the plan CLI and the replay."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.common_wiring import kill_switch_for, notifiers_for
from fleet_remediation.adapters.deployments import DeploymentWatch, EcsDeploymentWatch
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard, OnceGuard, RunEveryTime
from fleet_remediation.adapters.livekit_rooms import RoomService, room_service_factory
from fleet_remediation.adapters.notifier import Notifier, NotifyingDependencies
from fleet_remediation.contract.settings import ReaperSettings, settings_from_environment
from fleet_remediation.core.announce import ActionEventSink
from fleet_remediation.core.kill_switch import ModeSwitch


@dataclass
class ReaperDependencies(NotifyingDependencies):
    settings: ReaperSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    room_service_factory: Callable[[], RoomService]
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    chat_notifier: Notifier | None = None
    once: OnceGuard = field(default_factory=RunEveryTime)

    # Where each action and refusal is announced (None: nowhere, e.g. the replay).
    action_events: ActionEventSink | None = None
    # The agent services' deployments, which hold new deletions (None: no deployment hold).
    deployments: DeploymentWatch | None = None

    @classmethod
    def from_environment(cls) -> ReaperDependencies:
        settings = settings_from_environment(ReaperSettings)
        notifier, chat_notifier = notifiers_for(settings)
        return cls(
            settings=settings,
            action_events=EventBridgeActionEvents(),
            deployments=EcsDeploymentWatch(settings.agent_services) if settings.agent_services else None,
            mode_switch=kill_switch_for(settings),
            notifier=notifier,
            chat_notifier=chat_notifier,
            once=DynamoDBOnceGuard(settings.idempotency_table_name)
            if settings.idempotency_table_name
            else RunEveryTime(),
            room_service_factory=room_service_factory(
                str(settings.livekit_url),
                settings.livekit_secret_id,
                settings.reaper.livekit_request_timeout_seconds,
            ),
        )
