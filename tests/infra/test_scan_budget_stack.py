"""The scan budget in the stack: one tally table both Logs Insights users read and add to, its
name and ceiling in both functions' settings, and the IncomingBytes estimate they may read."""

from __future__ import annotations

import json
from typing import Any

from tests.infra.conftest import Synthesized


def _policies_of(staging: Synthesized, function_name: str) -> list[dict[str, Any]]:
    resources = staging.template.to_json()["Resources"]
    (function,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["FunctionName"] == function_name
    ]
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r["Properties"]["Roles"]
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_the_responder_and_the_drainer_share_one_tally_and_may_read_the_estimate(
    staging: Synthesized,
) -> None:
    resources = staging.template.to_json()["Resources"]
    (tally,) = [k for k, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table" and "ScanBudget" in k]
    assert resources[tally]["Properties"]["TimeToLiveSpecification"] == {
        "AttributeName": "expires_at",
        "Enabled": True,
    }
    # The example environments' one agent service, "agents"; every service's functions share the tally.
    for name in ("lkfr-staging-agents-tts-reach-alarm", "lkfr-staging-agents-worker-drainer"):
        statements = _policies_of(staging, name)
        on_tally = [s for s in statements if tally in json.dumps(s["Resource"])]
        assert [sorted(s["Action"]) for s in on_tally] == [["dynamodb:GetItem", "dynamodb:UpdateItem"]], name
        # The pinned flags merge statements on one resource, so the action may share its statement.
        assert any(
            s["Effect"] == "Allow"
            and s["Resource"] == "*"
            and "cloudwatch:GetMetricStatistics"
            in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
            for s in statements
        ), name
        (function,) = [r for r in resources.values() if r.get("Properties", {}).get("FunctionName") == name]
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["SCAN_BUDGET_TABLE_NAME"] == {"Ref": tally}
        assert json.loads(variables["SCAN_BUDGET"]) == {"gb_per_hour": 10.0, "alarm_look_minutes": 10}
    reaper = _policies_of(staging, "lkfr-staging-zombie-reaper")
    assert not [s for s in reaper if tally in json.dumps(s["Resource"])], "the reaper makes no looks"
