"""The kill switch: the environment's SSM parameter (enforce / dry-run / off) and, under it, one
per function. A function's effective mode is the stricter of its own and the environment's."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from fleet_remediation.contract.naming import (
    FunctionId,
    FunctionName,
    function_mode_parameter_name,
    mode_parameter_name,
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

    def grant_read(self, function: FunctionId, grantee: iam.IGrantable) -> None:
        """Both switches a function reads."""
        self.parameter.grant_read(grantee)
        self.function_parameter(function).grant_read(grantee)
