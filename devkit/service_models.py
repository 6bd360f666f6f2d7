"""Every value a synthesized CloudFormation template hands to an AWS API, checked against botocore's model
of the API that creates the resource: string lengths, patterns and enums, list and map sizes, number
bounds. CloudFormation's own schema (what cfn-lint checks) is often looser than the service: a custom
action's ``CommandText`` passes the schema up to 5,000 characters and ``CreateCustomAction`` refuses it
over 100.

Each resource type maps to the call(s) that create it (``RESOURCE_APIS``), and each property to an input
member: by the same name, compared without case, unless a ``Route`` says otherwise. A resource type or a
property with no mapping is itself a finding, so a new one must be mapped before the template passes.

Deploy-time values (``devkit.template_values``): a ``Partial`` string is checked on its literal part
only, its length as a lower bound against the member's maximum; its minimum, pattern and enum are not
checked. Patterns are matched against the whole value (the services' behaviour), with the ``regex``
module, which reads the models' ``\\p{L}`` classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import botocore.session
import regex  # type: ignore[import-untyped]
from botocore.model import MapShape, OperationModel, Shape, StructureShape

from devkit.service_apis import RESOURCE_APIS, Route
from devkit.template_values import Partial, Resolver

MAPPING = "devkit/service_apis.py"


@dataclass(frozen=True)
class Finding:
    """One value the service would refuse: which resource and property, and the limit it breaks."""

    resource: str
    resource_type: str
    path: str
    problem: str
    limit: str

    def __str__(self) -> str:
        return f"{self.resource} ({self.resource_type}) {self.path}: {self.problem} [{self.limit}]"


@cache
def operation(call: str) -> OperationModel:
    """``"chatbot:CreateCustomAction"`` -> botocore's model of that operation."""
    service, name = call.split(":")
    return botocore.session.get_session().get_service_model(service).operation_model(name)


@dataclass
class _Check:
    resource: str
    resource_type: str
    call: str
    findings: list[Finding] = field(default_factory=list)

    def emit(self, path: str, problem: str, limit: str) -> None:
        self.findings.append(
            Finding(self.resource, self.resource_type, path, problem, f"{self.call}: {limit}")
        )

    def value(self, value: Any, shape: Shape, path: str) -> None:
        kind = shape.type_name
        if isinstance(value, Partial):
            if kind == "string":
                self._length(
                    value.known, shape, path, "at least {n} characters (its literal part)", upper_only=True
                )
            return
        checker = {
            "structure": self._structure,
            "list": self._list,
            "map": self._map,
            "string": self._string,
            "integer": self._number,
            "long": self._number,
            "double": self._number,
            "float": self._number,
            "boolean": self._boolean,
        }.get(kind)
        if checker is not None:
            checker(value, shape, path)

    def _length(self, length: int, shape: Shape, path: str, what: str, *, upper_only: bool = False) -> None:
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if high is not None and length > high:
            self.emit(path, what.format(n=length) + f", over the maximum {high}", f"{shape.name} max {high}")
        if low is not None and length < low and not upper_only:
            self.emit(path, what.format(n=length) + f", under the minimum {low}", f"{shape.name} min {low}")

    def _string(self, value: Any, shape: Shape, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.emit(path, f"a {type(value).__name__}, not a string", f"{shape.name} is a string")
            return
        text = str(value)
        self._length(len(text), shape, path, "{n} characters")
        enum: list[str] = getattr(shape, "enum", [])
        if enum and text not in enum:
            shown = ", ".join(enum[:8]) + (f", … ({len(enum)} in all)" if len(enum) > 8 else "")
            self.emit(path, f"{text!r} is not one of the allowed values", f"{shape.name} enum: {shown}")
        pattern = shape.metadata.get("pattern")
        if pattern and regex.fullmatch(pattern, text) is None:
            self.emit(path, f"{text[:80]!r} does not match the pattern", f"{shape.name} pattern {pattern}")

    def _number(self, value: Any, shape: Shape, path: str) -> None:
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            number = None
        if number is None:
            self.emit(path, f"{value!r} is not a number", f"{shape.name} is a {shape.type_name}")
            return
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if high is not None and number > high:
            self.emit(path, f"{value} is over the maximum {high}", f"{shape.name} max {high}")
        if low is not None and number < low:
            self.emit(path, f"{value} is under the minimum {low}", f"{shape.name} min {low}")

    def _boolean(self, value: Any, shape: Shape, path: str) -> None:
        if not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
            self.emit(path, f"{value!r} is not a boolean", f"{shape.name} is a boolean")

    def _list(self, value: Any, shape: Shape, path: str) -> None:
        if not isinstance(value, list):
            self.emit(path, f"a {type(value).__name__}, not a list", f"{shape.name} is a list")
            return
        self._length(len(value), shape, path, "{n} items")
        for index, item in enumerate(value):
            self.value(item, shape.member, f"{path}[{index}]")  # type: ignore[attr-defined]

    def _map(self, value: Any, shape: Shape, path: str) -> None:
        if not isinstance(value, dict):
            self.emit(path, f"a {type(value).__name__}, not a map", f"{shape.name} is a map")
            return
        self._length(len(value), shape, path, "{n} entries")
        assert isinstance(shape, MapShape)
        for key, item in value.items():
            self.value(key, shape.key, f"{path}.<key {key}>")
            self.value(item, shape.value, f"{path}.{key}")

    def _structure(self, value: Any, shape: Shape, path: str) -> None:
        if not isinstance(value, dict):
            self.emit(path, f"a {type(value).__name__}, not a structure", f"{shape.name} is a structure")
            return
        assert isinstance(shape, StructureShape)
        for key, item in value.items():
            member = member_named(shape, key)
            if member is None:
                self.emit(f"{path}.{key}", "no API member of that name", f"{shape.name}; map it in {MAPPING}")
            else:
                self.value(item, member, f"{path}.{key}")

    def member_at(self, member_path: str, cfn_path: str) -> Shape | None:
        """The input shape at ``member_path`` (dots; a map's key is checked against its key shape)."""
        input_shape = operation(self.call).input_shape
        assert input_shape is not None, self.call
        shape: Shape = input_shape
        for part in member_path.split(".") if member_path else []:
            if isinstance(shape, MapShape):
                self.value(part, shape.key, f"{cfn_path} (as key {part})")
                shape = shape.value
                continue
            found = member_named(shape, part) if isinstance(shape, StructureShape) else None
            if found is None:
                self.emit(cfn_path, f"no API member {part!r}", f"{shape.name}; map it in {MAPPING}")
                return None
            shape = found
        return shape


def member_named(shape: StructureShape, name: str) -> Shape | None:
    folded = {member.lower(): member_shape for member, member_shape in shape.members.items()}
    return folded.get(name.lower())


def check_template(template: Mapping[str, Any], region: str, account: str) -> list[Finding]:
    """Every finding in ``template``'s resources (empty: the APIs accept every literal in it)."""
    resources = template.get("Resources", {})
    resolver = Resolver(resources, region, account)
    findings: list[Finding] = []
    for logical_id, resource in resources.items():
        findings.extend(check_resource(logical_id, resource, resolver))
    return findings


def check_resource(logical_id: str, resource: dict[str, Any], resolver: Resolver) -> list[Finding]:
    resource_type = resource["Type"]
    apis = RESOURCE_APIS.get(resource_type)
    if apis is None:
        return [Finding(logical_id, resource_type, "Type", "no API mapping", f"add the type to {MAPPING}")]
    findings: list[Finding] = []
    properties = resolver.value(resource.get("Properties", {}))
    for name, value in properties.items():
        if name in apis.not_sent:
            continue
        route = apis.routes.get(name, Route(apis.create))
        check = _Check(logical_id, resource_type, route.call)
        for cfn_path, item in _sent(name, value, route):
            shape = check.member_at(route.member if route.member is not None else name, cfn_path)
            if shape is not None:
                check.value(item, shape, cfn_path)
        findings.extend(check.findings)
    return findings


def _sent(name: str, value: Any, route: Route) -> Iterator[tuple[str, Any]]:
    """What the call receives for property ``name``: the value, or one call per item (``each``)."""
    convert: Callable[[Any], Any] = route.convert or (lambda item: item)
    if not route.each:
        yield name, convert(value)
        return
    for index, item in enumerate(value if isinstance(value, list) else [value]):
        yield f"{name}[{index}]", convert(item)
