"""The configuration of a construct user's instance, whose configuration is code: read back from what
its functions run with. ``--stack NAME``: the deployed stack's functions
(``cloudformation:ListStackResources``, then ``lambda:GetFunctionConfiguration`` for each);
``--app COMMAND``: the CDK app synthesized into a temporary folder and its template's functions.

Each function's environment is its settings model (``fleet_remediation.contract.settings``): the
reaper's holds the LiveKit and agent-service names, each responder its detection and TTS-reach
sections, each drainer its drainer section. Together they make the ``EnvironmentConfig`` the stack
was synthesized from, as far as the functions use it (``mode`` is the kill switch's value, read by
the functions at run time, and is left at its default here).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet_remediation.contract.budgets import LAMBDA_CONFIGURATION_READ, AwsCallBudget

# One stack's resource list, a page at a time (a stack holds a few hundred resources at most).
CLOUDFORMATION_READ = AwsCallBudget(
    "cloudformation", connect_timeout_seconds=1.0, read_timeout_seconds=5.0, attempts=3
)
SYNTH_TIMEOUT_SECONDS = 600
SERVICE_SECTIONS = {"DRAINER": "drainer", "DETECTION": "detection", "TTS_REACH": "tts_reach"}


class DeployedConfigError(Exception):
    """The stack or app holds no instance, or several and none was named: the message says what to pass."""


@dataclass(frozen=True)
class FunctionEnvironment:
    """One function as deployed: its ARN (for the account and region), processor and variables."""

    arn: str
    architecture: str
    variables: Mapping[str, str]


def from_stack(stack: str, cloudformation: Any, lambda_client: Any) -> list[FunctionEnvironment]:
    """Every function of the deployed ``stack`` with the variables it runs with."""
    names = [
        resource["PhysicalResourceId"]
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack)
        for resource in page["StackResourceSummaries"]
        if resource["ResourceType"] == "AWS::Lambda::Function" and resource.get("PhysicalResourceId")
    ]
    functions = []
    for name in names:
        configuration = lambda_client.get_function_configuration(FunctionName=name)
        functions.append(
            FunctionEnvironment(
                arn=configuration["FunctionArn"],
                architecture=(configuration.get("Architectures") or ["x86_64"])[0],
                variables=(configuration.get("Environment") or {}).get("Variables") or {},
            )
        )
    return functions


def _plain(value: Any) -> str:
    """A template value as a string: a reference to a resource CloudFormation names stands for itself
    by its logical id (the deployed name exists only after a deploy: ``--stack`` reads that)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return ".".join(map(str, value["Fn::GetAtt"]))
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_plain(part) for part in parts)
    return json.dumps(value)


def from_templates(templates: Iterable[Mapping[str, Any]]) -> list[FunctionEnvironment]:
    """Every function of synthesized templates, each variable as a string."""
    functions = []
    for template in templates:
        for logical_id, resource in template.get("Resources", {}).items():
            if resource.get("Type") != "AWS::Lambda::Function":
                continue
            properties = resource.get("Properties", {})
            variables = (properties.get("Environment") or {}).get("Variables") or {}
            functions.append(
                FunctionEnvironment(
                    arn=f"arn:aws:lambda:::function:{logical_id}",
                    architecture=(properties.get("Architectures") or ["x86_64"])[0],
                    variables={name: _plain(value) for name, value in variables.items()},
                )
            )
    return functions


def from_app(command: str, cwd: Path) -> list[FunctionEnvironment]:
    """``command`` (e.g. ``python app.py``) run in ``cwd`` with ``CDK_OUTDIR`` set, as the CDK CLI runs
    an app; its templates' functions."""
    with tempfile.TemporaryDirectory(prefix="lkfr-synth-") as outdir:
        done = subprocess.run(
            shlex.split(command),
            cwd=cwd,
            env={**os.environ, "CDK_OUTDIR": outdir},
            capture_output=True,
            text=True,
            timeout=SYNTH_TIMEOUT_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            raise DeployedConfigError(f"your CDK app ({command!r} in {cwd}) failed: {tail}")
        templates = [json.loads(path.read_text()) for path in sorted(Path(outdir).glob("*.template.json"))]
    if not templates:
        raise DeployedConfigError(f"your CDK app ({command!r} in {cwd}) wrote no template")
    return from_templates(templates)


def _json(variables: Mapping[str, str], name: str) -> Any:
    return json.loads(variables[name]) if name in variables else None


def _instances(functions: Iterable[FunctionEnvironment]) -> dict[str, list[FunctionEnvironment]]:
    """Our functions (those with ENVIRONMENT_NAME) by instance: the construct's ``name_prefix``."""
    found: dict[str, list[FunctionEnvironment]] = {}
    for function in functions:
        if "ENVIRONMENT_NAME" in function.variables and "MODE_PARAMETER_NAME" in function.variables:
            found.setdefault(function.variables["ENVIRONMENT_NAME"], []).append(function)
    return found


def instance_names(functions: Iterable[FunctionEnvironment]) -> list[str]:
    return sorted(_instances(functions))


def _services(reaper: Mapping[str, str], functions: list[FunctionEnvironment]) -> list[dict[str, Any]]:
    """Each agent service (the reaper's list), with the sections its own responder and drainer run."""
    services = {service["name"]: dict(service) for service in _json(reaper, "AGENT_SERVICES") or []}
    for function in functions:
        service = services.get(function.variables.get("AGENT_SERVICE", ""))
        for variable, section in SERVICE_SECTIONS.items():
            if service is not None and variable in function.variables:
                service[section] = _json(function.variables, variable)
    return list(services.values())


def _instance(
    functions: list[FunctionEnvironment], env: str | None, where: str
) -> tuple[str, list[FunctionEnvironment]]:
    instances = _instances(functions)
    held = " or ".join(sorted(instances))
    if not instances:
        raise DeployedConfigError(f"{where} holds no LiveKit Fleet Remediation function")
    if env is None and len(instances) > 1:
        raise DeployedConfigError(f"{where} holds {len(instances)} instances: pass --env {held}")
    name = env or next(iter(instances))
    if name not in instances:
        raise DeployedConfigError(f"{where} holds no instance {name!r}: pass --env {held}")
    return name, instances[name]


def environment_config(
    functions: list[FunctionEnvironment], env: str | None, where: str
) -> tuple[str, dict[str, Any]]:
    """The instance ``env`` (the only one when None) as the raw ``EnvironmentConfig`` it was built
    from; ``where`` names the stack or app in messages."""
    name, ours = _instance(functions, env, where)
    reaper = next((f for f in ours if "REAPER" in f.variables and "DRAINER" not in f.variables), None)
    if reaper is None:
        raise DeployedConfigError(f"{where}: instance {name!r} has no zombie reaper function")
    variables = reaper.variables
    services = _services(variables, ours)
    arn = reaper.arn.split(":")
    raw: dict[str, Any] = {
        "region": arn[3] or os.environ.get("AWS_DEFAULT_REGION", ""),
        "agent_services": services,
        "livekit_url": variables["LIVEKIT_URL"],
        "livekit_secret_name": variables["LIVEKIT_SECRET_ID"],
        "runbook_base_url": variables["RUNBOOK_BASE_URL"],
        # A stack deployed from 0.2.0 carries no RUNBOOK_LINKS: its links were the repository's paths.
        "runbook_links": variables.get("RUNBOOK_LINKS", "repository"),
        "lambda_architecture": reaper.architecture,
        "reaper": _json(variables, "REAPER"),
    }
    if arn[4]:
        raw["account"] = arn[4]
    if variables.get("DRILLS_ENABLED", "").lower() == "true":
        raw["drills"] = {"enabled": True}
    if "DISRUPTION_WINDOW" in variables:
        raw["disruption_window"] = _json(variables, "DISRUPTION_WINDOW")
    first = services[0] if services else {}
    raw |= {section: first[section] for section in SERVICE_SECTIONS.values() if section in first}
    budgets = [_json(f.variables, "SCAN_BUDGET") for f in ours if "SCAN_BUDGET" in f.variables]
    if budgets:
        raw["scan_budget"] = budgets[0]
    return name, raw


def lambda_reader(region: str | None) -> tuple[Any, Any]:
    """The CloudFormation and Lambda clients ``from_stack`` reads through, each call within its budget."""
    from fleet_remediation.adapters.aws_clients import aws_client

    return (
        aws_client(CLOUDFORMATION_READ, region_name=region),
        aws_client(LAMBDA_CONFIGURATION_READ, region_name=region),
    )
