"""Local stand-ins, on a moto server on loopback, for the AWS resources a synthesized function's
environment names, and the resolution of the environment's CloudFormation references to them.

Only what cannot exist locally is substituted: a ``{"Ref": ...}`` to a stack resource becomes the
identifier of the same kind of resource created on moto from the template's own properties (a
table's key schema, a parameter's value); resources the stack expects to exist already (the LiveKit
secret, the agents' log group, the ECS cluster and service) are created under the names the
template gives. Any other CloudFormation intrinsic is an error: extend this module deliberately.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from devkit.lambda_artifact import CloudAssembly, FunctionArtifact


class UnresolvableValueError(Exception):
    """An environment value that has no local stand-in."""


@contextmanager
def loopback_aws() -> Iterator[tuple[str, str]]:
    """moto in server mode on 127.0.0.1, and a UDP port standing for the X-Ray daemon that Lambda
    gives the SDK (bound here, so nothing else gets what it sends): ``(endpoint_url, xray_address)``."""
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as xray:
            xray.bind(("127.0.0.1", 0))
            host, port = moto.get_host_and_port()
            yield f"http://{host}:{port}", f"127.0.0.1:{xray.getsockname()[1]}"
    finally:
        moto.stop()


@dataclass
class AwsStandIns:
    endpoint_url: str
    region: str
    # Logical id of a stack resource -> what its Ref resolves to on the stand-in.
    refs: dict[str, str] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        session = boto3.session.Session(
            aws_access_key_id="local", aws_secret_access_key="local", region_name=self.region
        )
        # The service name is a run-time value; the stubs type one overload per literal name.
        return session.client(service, endpoint_url=self.endpoint_url)  # type: ignore[call-overload]

    def create_referenced(self, assembly: CloudAssembly, functions: list[FunctionArtifact]) -> None:
        """Create each stack resource a function's environment refers to, from its template properties."""
        for function in functions:
            for name, value in function.environment.items():
                if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] not in self.refs:
                    logical_id = value["Ref"]
                    resource = assembly.resources.get(logical_id)
                    if resource is None:
                        raise UnresolvableValueError(
                            f"{name}: Ref {logical_id} is not a resource of the stack"
                        )
                    self.refs[logical_id] = self._create(logical_id, resource)

    def _create(self, logical_id: str, resource: dict[str, Any]) -> str:
        props = resource["Properties"]
        if resource["Type"] == "AWS::SNS::Topic":
            return str(self.client("sns").create_topic(Name=props.get("TopicName", logical_id))["TopicArn"])
        if resource["Type"] == "AWS::DynamoDB::Table":
            name = str(props.get("TableName", logical_id))
            self.client("dynamodb").create_table(
                TableName=name,
                KeySchema=props["KeySchema"],
                AttributeDefinitions=props["AttributeDefinitions"],
                BillingMode=props.get("BillingMode", "PROVISIONED"),
            )
            return name
        raise UnresolvableValueError(f"no local stand-in for {logical_id} ({resource['Type']})")

    def create_parameters(self, assembly: CloudAssembly) -> dict[str, str]:
        """Every SSM parameter of the stack, with the value the template deploys."""
        ssm = self.client("ssm")
        created = {}
        for resource in assembly.resources_of_type("AWS::SSM::Parameter").values():
            props = resource["Properties"]
            ssm.put_parameter(Name=props["Name"], Value=props["Value"], Type=props["Type"])
            created[str(props["Name"])] = str(props["Value"])
        return created

    def create_secret(self, name: str, value: Mapping[str, str]) -> None:
        self.client("secretsmanager").create_secret(Name=name, SecretString=json.dumps(dict(value)))

    def create_log_group(self, name: str) -> None:
        self.client("logs").create_log_group(logGroupName=name)

    def create_ecs_service(self, cluster: str, service: str) -> None:
        """An ECS cluster and service with no running task: a fleet the drainer can read. Its one
        container is named after the service, the drainer's default agent container name."""
        ecs = self.client("ecs")
        ecs.create_cluster(clusterName=cluster)
        task_definition = ecs.register_task_definition(
            family=service,
            containerDefinitions=[{"name": service, "image": "livekit-agent:local", "memory": 512}],
        )["taskDefinition"]["taskDefinitionArn"]
        ecs.create_service(
            cluster=cluster, serviceName=service, taskDefinition=task_definition, desiredCount=0
        )

    def resolve(self, function: FunctionArtifact, overrides: Mapping[str, str]) -> dict[str, str]:
        """The function's environment with references resolved and ``overrides`` (local endpoints)
        applied. An override must replace a variable the template sets: a missing one fails here."""
        missing = sorted(set(overrides) - set(function.environment))
        if missing:
            raise UnresolvableValueError(f"{function.function_name}: the template sets no {missing}")
        resolved = {}
        for name, value in function.environment.items():
            if name in overrides:
                resolved[name] = overrides[name]
            elif isinstance(value, str):
                resolved[name] = value
            elif isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in self.refs:
                resolved[name] = self.refs[value["Ref"]]
            else:
                raise UnresolvableValueError(
                    f"{function.function_name}: {name}={value!r} has no local stand-in"
                )
        return resolved
