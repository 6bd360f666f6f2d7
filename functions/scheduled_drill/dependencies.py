"""What the scheduled drill talks to, injected: built from its settings on a cold start, or replaced
by stand-ins (moto, a simulated clock) in tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.common_wiring import notifiers_for
from fleet_remediation.adapters.idempotency import OnceGuard, RunEveryTime
from fleet_remediation.adapters.notifier import Notifier, NotifyingDependencies
from fleet_remediation.contract.budgets import (
    DRILL_RECORD_READ,
    DRILL_TAG_CALL,
    DRILL_TASKS_READ,
    KILL_SWITCH_READ,
    LEDGER_CALL,
)
from fleet_remediation.contract.settings import ScheduledDrillSettings, settings_from_environment
from fleet_remediation.core.announce import ActionEventSink
from fleet_remediation.core.kill_switch import ModeSwitch, SsmModeSwitch


@dataclass
class DrillClients:
    """One client per kind of call, each with its own budget."""

    ssm: Any
    tasks: Any
    marker: Any
    logs: Any
    ledger: Any

    @classmethod
    def budgeted(cls) -> DrillClients:
        return cls(
            aws_client(KILL_SWITCH_READ),
            aws_client(DRILL_TASKS_READ),
            aws_client(DRILL_TAG_CALL),
            aws_client(DRILL_RECORD_READ),
            aws_client(LEDGER_CALL),
        )


@dataclass
class DrillDependencies(NotifyingDependencies):
    settings: ScheduledDrillSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    clients: DrillClients
    action_events: ActionEventSink | None
    chat_notifier: Notifier | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    sleep: Callable[[float], None] = time.sleep
    once: OnceGuard = field(default_factory=RunEveryTime)

    @classmethod
    def from_environment(cls) -> DrillDependencies:
        settings = settings_from_environment(ScheduledDrillSettings)
        notifier, chat_notifier = notifiers_for(settings)
        # Its own switch only: the drilled service's switches (the environment's the ceiling) are
        # read as the drill's first step, where off is a refusal the channel hears of and dry-run
        # still drills (the verdict is then on what the drainer would have done).
        own = settings.function_mode_parameter_name or settings.mode_parameter_name
        return cls(
            settings=settings,
            mode_switch=SsmModeSwitch(own, client=aws_client(KILL_SWITCH_READ)),
            notifier=notifier,
            chat_notifier=chat_notifier,
            clients=DrillClients.budgeted(),
            action_events=EventBridgeActionEvents(),
        )
