"""Read a synthesized dashboard the way CloudWatch will: its ``DashboardBody`` (an ``Fn::Join`` of
strings and references) resolved into the JSON the console renders, and the metrics its graphs ask
for, each as an identity (namespace, name, dimension set)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

PSEUDO = {"AWS::Region": "ap-northeast-2", "AWS::AccountId": "111111111111", "AWS::Partition": "aws"}


def _resolve(value: Any, resources: dict[str, Any]) -> str:
    if isinstance(value, str):
        return value
    if "Ref" in value:
        name = value["Ref"]
        if name in PSEUDO:
            return PSEUDO[name]
        return str(resources[name]["Properties"].get("AlarmName", name))
    if "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        properties = resources[logical_id]["Properties"]
        alarm_types = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
        if resources[logical_id]["Type"] in alarm_types and attribute == "Arn":
            region, account = PSEUDO["AWS::Region"], PSEUDO["AWS::AccountId"]
            return f"arn:aws:cloudwatch:{region}:{account}:alarm:{properties['AlarmName']}"
        return f"{logical_id}.{attribute}"
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_resolve(part, resources) for part in parts)
    raise ValueError(f"cannot resolve {value}")


def dashboard_json(template: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The template's dashboard (the one named ``name`` when the template holds several)."""
    resources = template["Resources"]
    (dashboard,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Dashboard" and name in (None, r["Properties"]["DashboardName"])
    ]
    return dict(json.loads(_resolve(dashboard["Properties"]["DashboardBody"], resources)))


@dataclass(frozen=True)
class MetricIdentity:
    namespace: str
    name: str
    dimensions: frozenset[tuple[str, str]]

    def __str__(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in sorted(self.dimensions))
        return f"{self.namespace} {self.name} {{{dims}}}"


def graphed_metrics(body: dict[str, Any]) -> list[tuple[str, MetricIdentity]]:
    """(widget title, identity) for every metric a graph widget asks for. A metric row is
    ``[namespace, name, dim1, value1, ..., {options}]``; ``"."`` repeats the row above's field."""
    found = []
    for widget in body["widgets"]:
        properties = widget.get("properties", {})
        previous: list[Any] = []
        for row in properties.get("metrics", []):
            fields = [field for field in row if not isinstance(field, dict)]
            if not fields:
                continue  # a math expression row
            fields = [previous[i] if field == "." else field for i, field in enumerate(fields)]
            previous = fields
            namespace, name, *dims = fields
            identity = MetricIdentity(namespace, name, frozenset(zip(dims[::2], dims[1::2], strict=True)))
            found.append((properties.get("title", ""), identity))
    return found
