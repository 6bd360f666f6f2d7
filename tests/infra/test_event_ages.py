"""Each function's door admits an event for exactly as long as its EventBridge target keeps trying to
deliver it: the maximum event age of every rule's target in the synthesized stack is the age the
target function's door uses for that route (``contract/events.py``), and no route outlives
Lambda's own queue."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from fleet_remediation.contract.events import (
    ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS,
    DRAINER_EVENT_AGES,
    REAPER_EVENT_AGES,
    EventAges,
    responder_event_ages,
)
from fleet_remediation.contract.naming import (
    ALARM_DETAIL_TYPE,
    SUSPECT_WORKER_DETAIL_TYPE,
    FunctionName,
    lambda_function_name,
)
from fleet_remediation.contract.sections import TtsReachSection
from tests.infra.conftest import Synthesized

ENV = "staging"
SERVICE = "agents"


def _door_ages(functions: dict[str, Any]) -> dict[str, EventAges]:
    """The ages each function's door uses, with the responder's re-check period as deployed."""
    responder = functions[lambda_function_name(ENV, FunctionName.TTS_REACH_ALARM, SERVICE)]
    variables = responder["Properties"]["Environment"]["Variables"]
    recheck = TtsReachSection.model_validate(json.loads(variables.get("TTS_REACH", "{}"))).recheck_minutes
    return {
        lambda_function_name(ENV, FunctionName.ZOMBIE_REAPER): REAPER_EVENT_AGES,
        lambda_function_name(ENV, FunctionName.WORKER_DRAINER, SERVICE): DRAINER_EVENT_AGES,
        lambda_function_name(ENV, FunctionName.TTS_REACH_ALARM, SERVICE): responder_event_ages(recheck),
    }


def _route_age(rule: dict[str, Any], ages: EventAges) -> int:
    if "ScheduleExpression" in rule:
        return ages.schedule_seconds
    detail_type = rule["EventPattern"]["detail-type"]
    if detail_type == [ALARM_DETAIL_TYPE]:
        return ages.alarm_seconds
    assert detail_type == [SUSPECT_WORKER_DETAIL_TYPE], detail_type
    return ages.suspect_worker_seconds


def test_every_target_gives_up_when_its_functions_door_would_refuse(staging: Synthesized) -> None:
    lambdas = staging.template.find_resources("AWS::Lambda::Function")
    functions = {resource["Properties"].get("FunctionName"): resource for resource in lambdas.values()}
    by_logical_id = {
        logical_id: resource["Properties"].get("FunctionName") for logical_id, resource in lambdas.items()
    }
    ages = _door_ages(functions)
    checked = []
    for rule in staging.template.find_resources("AWS::Events::Rule").values():
        for target in rule["Properties"].get("Targets", []):
            name = by_logical_id.get(target["Arn"].get("Fn::GetAtt", [""])[0])
            if name not in ages:
                continue  # a rule of another kind of target (a topic, a queue)
            expected = _route_age(rule["Properties"], ages[name])
            assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] == expected, (name, rule["Properties"])
            checked.append(name)
    # The reaper's schedule and VAD alarm, the drainer's schedule, VAD alarm and suspect worker, the
    # responder's page and re-check.
    reaper, drainer, responder = ages
    assert Counter(checked) == {reaper: 2, drainer: 3, responder: 2}


def test_no_route_outlives_lambdas_own_queue(staging: Synthesized) -> None:
    configs = staging.template.find_resources("AWS::Lambda::EventInvokeConfig")
    assert {c["Properties"]["MaximumEventAgeInSeconds"] for c in configs.values()} == {
        ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS
    }
    for ages in (
        REAPER_EVENT_AGES,
        DRAINER_EVENT_AGES,
        responder_event_ages(TtsReachSection().recheck_minutes),
    ):
        assert max(ages.schedule_seconds, ages.alarm_seconds, ages.suspect_worker_seconds) <= (
            ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS
        )
