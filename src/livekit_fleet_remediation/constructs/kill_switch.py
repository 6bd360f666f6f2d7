"""The kill switch: the environment's SSM parameter (enforce / dry-run / off) and, under it, one
per function and one per agent service. A function's effective mode is the strictest of those it
reads: the environment's, its own and, for a service's responder or drainer, the service's."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from fleet_remediation.contract.naming import (
    FunctionId,
    FunctionName,
    function_mode_parameter_name,
    mode_parameter_name,
    service_mode_parameter_name,
)

ALLOWED_PATTERN = "^(enforce|dry-run|off)$"


class KillSwitch(Construct):
    """Operators flip a switch with `aws ssm put-parameter --overwrite`; a deploy only rewrites a
    parameter when its value in the template changes (the environment's ``mode`` in cdk.json)."""

    def __init__(self, scope: Construct, construct_id: str, *, env_name: str, initial_mode: str) -> None:
        super().__init__(scope, construct_id)
        self.env_name = env_name
        # Plain strings (not tokens), so functions get literal names they can validate.
        self.parameter_name = mode_parameter_name(env_name)
        self.parameter = ssm.StringParameter(
            self,
            "Mode",
            parameter_name=self.parameter_name,
            string_value=initial_mode,
            allowed_pattern=ALLOWED_PATTERN,
            description="LiveKit Fleet Remediation mode: enforce | dry-run | off (read within seconds)",
        )
        # Each function's own switch starts at "enforce": the environment's switch governs until an
        # operator lowers one function.
        self.function_parameters: dict[str, ssm.StringParameter] = {}
        for function in FunctionName:
            self.function_parameter(function)
        self.service_parameters: dict[str, ssm.StringParameter] = {}

    def function_parameter(self, function: FunctionId) -> ssm.StringParameter:
        """A function's own switch, made the first time a function asks for it."""
        if function.value not in self.function_parameters:
            self.function_parameters[function.value] = ssm.StringParameter(
                self,
                f"{function.slug.title().replace('-', '')}Mode",
                parameter_name=function_mode_parameter_name(self.env_name, function),
                string_value="enforce",
                allowed_pattern=ALLOWED_PATTERN,
                description=f"{function.value}'s own mode under {self.parameter_name} (the stricter wins)",
            )
        return self.function_parameters[function.value]

    def function_parameter_name(self, function: FunctionId) -> str:
        return function_mode_parameter_name(self.env_name, function)

    def service_parameter(self, service: str) -> ssm.StringParameter:
        """An agent service's own switch (its responder and drainer read it), made when first asked."""
        if service not in self.service_parameters:
            self.service_parameters[service] = ssm.StringParameter(
                self,
                f"Service-{service}-Mode",
                parameter_name=service_mode_parameter_name(self.env_name, service),
                string_value="enforce",
                allowed_pattern=ALLOWED_PATTERN,
                description=f"Agent service {service}'s own mode under {self.parameter_name} "
                "(the stricter wins)",
            )
        return self.service_parameters[service]

    def service_parameter_name(self, service: str) -> str:
        return service_mode_parameter_name(self.env_name, service)

    def grant_read(self, function: FunctionId, grantee: iam.IGrantable, service: str | None = None) -> None:
        """The switches a function reads: the environment's, its own, and its agent service's."""
        self.parameter.grant_read(grantee)
        self.function_parameter(function).grant_read(grantee)
        if service is not None:
            self.service_parameter(service).grant_read(grantee)
