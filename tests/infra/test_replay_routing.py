"""The replay routes alarm transitions, schedule ticks and suspect-worker events exactly as the
synthesized stack's EventBridge rules do: its rule table is checked against the template."""

from __future__ import annotations

import json
import re
from typing import Any

from fleet_remediation.contract.naming import (
    EVENT_SOURCE,
    PER_SERVICE_FUNCTIONS,
    SUSPECT_WORKER_DETAIL_TYPE,
    FunctionName,
    lambda_function_name,
)
from livekit_fleet_remediation.config import load_environment
from livekit_fleet_remediation.offline.replay_model import Rule, stack_rules
from tests.example_environments import example_context


def _logical_id(reference: Any) -> str:
    return str(reference["Fn::GetAtt"][0])


def _rules_in(template: dict[str, Any], env_name: str) -> set[Rule]:
    resources = template["Resources"]
    functions = {
        logical: resource["Properties"]["FunctionName"]
        for logical, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    # The example environments cover one agent service, "agents".
    by_name = {
        lambda_function_name(env_name, f, "agents" if f in PER_SERVICE_FUNCTIONS else None): f
        for f in FunctionName
    }
    found: set[Rule] = set()
    for resource in resources.values():
        if resource["Type"] != "AWS::Events::Rule":
            continue
        properties = resource["Properties"]
        for target in properties["Targets"]:
            function = by_name[functions[_logical_id(target["Arn"])]]
            if "ScheduleExpression" in properties:
                minutes = re.fullmatch(r"rate\((\d+) minutes?\)", properties["ScheduleExpression"])
                assert minutes, properties["ScheduleExpression"]
                found.add(Rule(function, schedule_minutes=int(minutes.group(1))))
                continue
            pattern = properties["EventPattern"]
            if pattern["source"] == [EVENT_SOURCE]:
                assert pattern["detail-type"] == [SUSPECT_WORKER_DETAIL_TYPE]
                assert pattern["detail"] == {"environment": [env_name], "agent_service": ["agents"]}
                found.add(Rule(function, suspect_worker=True))
                continue
            (alarm,) = pattern["resources"]
            name = resources[_logical_id(alarm)]["Properties"]["AlarmName"]
            found.add(Rule(function, alarm=name, states=tuple(pattern["detail"]["state"]["value"])))
    return found


def test_the_replay_routes_as_the_synthesized_stack(staging) -> None:  # type: ignore[no-untyped-def]
    template = json.loads(staging.template_path.read_text())
    config = load_environment(example_context(), "staging")
    assert _rules_in(template, "staging") == set(stack_rules("staging", config))
