"""What every function's cold start wires the same way: its kill switch (the environment's, its own
and, for a service's function, the service's, through the deadline-bound SSM client) and its
notification topics (e-mail, optional chat)."""

from __future__ import annotations

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.notifier import Notifier, SnsNotifier
from fleet_remediation.contract.budgets import KILL_SWITCH_READ
from fleet_remediation.contract.settings import FunctionSettings, ServiceFunctionSettings
from fleet_remediation.core.kill_switch import SsmModeSwitch


def kill_switch_for(settings: FunctionSettings) -> SsmModeSwitch:
    return SsmModeSwitch(
        settings.mode_parameter_name,
        settings.function_mode_parameter_name,
        client=aws_client(KILL_SWITCH_READ),
        service_parameter_name=(
            settings.service_mode_parameter_name if isinstance(settings, ServiceFunctionSettings) else None
        ),
    )


def notifiers_for(settings: FunctionSettings) -> tuple[Notifier, Notifier | None]:
    chat = SnsNotifier(settings.chat_topic_arn) if settings.chat_topic_arn else None
    return SnsNotifier(settings.notification_topic_arn), chat
