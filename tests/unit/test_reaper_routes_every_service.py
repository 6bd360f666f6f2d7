"""A list-shaped setting with more than one entry: the reaper takes the VAD alarm of every agent
service it covers, the second and the third as well as the first (rooms are LiveKit-wide), through
its own route (``zombie_reaper.work.ReaperStages.route``) and the reaper's settings as an
environment lists them; another environment's alarm and an alarm of a service not listed stay
refused."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from fleet_remediation.contract.events import REAPER_EVENT_AGES
from fleet_remediation.contract.naming import vad_alarm_name
from fleet_remediation.contract.settings import ReaperSettings
from fleet_remediation.core.door import Door
from fleet_remediation.core.routing import UnknownAlarmError
from livekit_fleet_remediation.offline.eventbridge_events import alarm_state_change
from tests.door_corpus import ACCOUNT, ENV, FUNCTION_ARN, REGION
from zombie_reaper.work import ReaperStages

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SERVICES = ("agents", "outbound", "support")


def _deps() -> SimpleNamespace:
    settings = ReaperSettings.model_validate(
        {
            "environment_name": ENV,
            "mode_parameter_name": "/m",
            "notification_topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:t",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": "http://127.0.0.1:7880",
            "livekit_secret_id": "injected",
            "reaper": {"policy": {"managed_room_pattern": "^lesson-.+$", "max_age_minutes": 60}},
            "agent_services": [
                {"name": name, "ecs_cluster": "c", "ecs_service": name, "agent_log_group": f"/{name}"}
                for name in SERVICES
            ],
        }
    )
    return SimpleNamespace(settings=settings)


def _route(alarm: str) -> object:
    event = alarm_state_change(alarm, account=ACCOUNT, region=REGION, now=NOW)
    return ReaperStages().route(event, _deps(), Door.for_invocation(FUNCTION_ARN, NOW, REAPER_EVENT_AGES))  # type: ignore[arg-type]


@pytest.mark.parametrize("service", SERVICES)
def test_every_listed_services_vad_alarm_reaches_the_reaper(service: str) -> None:
    routed = _route(vad_alarm_name(ENV, service))
    assert routed.alarm is not None  # type: ignore[attr-defined]
    assert routed.alarm.alarm_name == vad_alarm_name(ENV, service)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "alarm",
    [vad_alarm_name(ENV, "billing"), vad_alarm_name("prod", "outbound")],
    ids=["unlisted", "other-env"],
)
def test_an_alarm_of_a_service_not_listed_is_refused(alarm: str) -> None:
    with pytest.raises(UnknownAlarmError):
        _route(alarm)
