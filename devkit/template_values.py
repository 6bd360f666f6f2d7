"""The values a synthesized CloudFormation template hands to AWS, with its intrinsics worked out as far as
the template itself determines them.

A ``Ref`` or ``Fn::GetAtt`` ``Arn`` of a resource whose physical name the template fixes (an alarm's
``AlarmName``, a function's ``FunctionName``) resolves to that name or ARN. Any other intrinsic is a
deploy-time value: a ``Partial`` that knows only its literal characters. A string joined (``Fn::Join``,
``Fn::Sub``) from literals and deploy-time values is a ``Partial`` too: its ``known`` length is a lower
bound of the real one, and its ``sample`` is the literal text with every deploy-time piece left empty
(a dashboard body stays JSON that way, since its tokens sit inside JSON strings).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Type -> (the property naming it, what Ref returns, the Arn attribute's format).
PHYSICAL_NAMES: dict[str, tuple[str, str, str | None]] = {
    "AWS::Lambda::Function": (
        "FunctionName",
        "name",
        "arn:{partition}:lambda:{region}:{account}:function:{name}",
    ),
    "AWS::CloudWatch::Alarm": (
        "AlarmName",
        "name",
        "arn:{partition}:cloudwatch:{region}:{account}:alarm:{name}",
    ),
    "AWS::CloudWatch::CompositeAlarm": (
        "AlarmName",
        "name",
        "arn:{partition}:cloudwatch:{region}:{account}:alarm:{name}",
    ),
    "AWS::SSM::Parameter": ("Name", "name", None),
    "AWS::Logs::LogGroup": (
        "LogGroupName",
        "name",
        "arn:{partition}:logs:{region}:{account}:log-group:{name}:*",
    ),
    "AWS::Events::Rule": ("Name", "name", "arn:{partition}:events:{region}:{account}:rule/{name}"),
    "AWS::SNS::Topic": ("TopicName", "arn", "arn:{partition}:sns:{region}:{account}:{name}"),
    "AWS::IAM::Role": ("RoleName", "name", "arn:{partition}:iam::{account}:role/{name}"),
}
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


@dataclass(frozen=True)
class Partial:
    """A string CloudFormation completes at deploy time: at least ``known`` characters."""

    sample: str

    @property
    def known(self) -> int:
        return len(self.sample)


@dataclass(frozen=True)
class Resolver:
    """Works out a template's intrinsics, in the stack's region and account."""

    resources: Mapping[str, Any]
    region: str
    account: str
    partition: str = "aws"

    def value(self, raw: Any) -> Any:
        """``raw`` with every intrinsic replaced by its string, or a ``Partial``."""
        if isinstance(raw, dict):
            if len(raw) == 1:
                ((key, argument),) = raw.items()
                if key == "Ref" or key.startswith("Fn::"):
                    return self._intrinsic(key, argument)
            return {name: self.value(item) for name, item in raw.items()}
        if isinstance(raw, list):
            return [self.value(item) for item in raw]
        return raw

    def _intrinsic(self, key: str, argument: Any) -> Any:
        if key == "Ref":
            return self._ref(str(argument))
        if key == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else str(argument).split(".", 1)
            return self._get_att(logical_id, attribute)
        if key == "Fn::Join":
            separator, parts = argument
            pieces = self.value(parts)
            return joined(pieces, separator) if isinstance(pieces, list) else Partial("")
        if key == "Fn::Sub":
            return self._sub(argument)
        return Partial("")  # Fn::Select, Fn::If, Fn::ImportValue...: decided at deploy time

    def _ref(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": self.partition,
        }
        if name in pseudo:
            return pseudo[name]
        return self._named(name, "ref")

    def _get_att(self, logical_id: str, attribute: str) -> Any:
        return self._named(logical_id, "arn") if attribute == "Arn" else Partial("")

    def _named(self, logical_id: str, wanted: str) -> Any:
        resource = self.resources.get(logical_id, {})
        shape = PHYSICAL_NAMES.get(resource.get("Type", ""))
        if shape is None:
            return Partial("")
        name_property, ref_gives, arn_format = shape
        name = resource.get("Properties", {}).get(name_property)
        if not isinstance(name, str):
            return Partial("")
        if wanted == "ref" and ref_gives == "name":
            return name
        if arn_format is None:
            return Partial("")
        return arn_format.format(
            partition=self.partition, region=self.region, account=self.account, name=name
        )

    def _sub(self, argument: Any) -> Any:
        template, variables = (argument, {}) if isinstance(argument, str) else argument
        pieces: list[Any] = []
        position = 0
        for match in _SUB_VARIABLE.finditer(template):
            pieces.append(template[position : match.start()])
            name = match.group(1)
            if name in variables:
                pieces.append(self.value(variables[name]))
            elif "." in name:
                pieces.append(self._get_att(*name.split(".", 1)))
            else:
                pieces.append(self._ref(name))
            position = match.end()
        pieces.append(template[position:])
        return joined(pieces, "")


def joined(pieces: list[Any], separator: str) -> str | Partial:
    """``pieces`` joined: a string when all are known, else a ``Partial`` of the literal parts."""
    if all(isinstance(piece, str | int | float) for piece in pieces):
        return separator.join(str(piece) for piece in pieces)
    return Partial(separator.join(sample(piece) for piece in pieces))


def sample(value: Any) -> str:
    """A known string as it is; a deploy-time one as its literal part."""
    if isinstance(value, Partial):
        return value.sample
    return value if isinstance(value, str) else str(value)


def json_text(value: Any) -> str | Partial:
    """An object CloudFormation serializes to a JSON string for the API (a policy, an event pattern),
    compact: the shortest it can be."""
    unknown = False

    def plain(item: Any) -> Any:
        nonlocal unknown
        if isinstance(item, Partial):
            unknown = True
            return item.sample
        if isinstance(item, dict):
            return {key: plain(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [plain(inner) for inner in item]
        return item

    text = json.dumps(plain(value), separators=(",", ":"), ensure_ascii=False)
    return Partial(text) if unknown else text
