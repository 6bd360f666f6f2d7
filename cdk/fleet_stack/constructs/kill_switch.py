"""The per-environment kill switch: an SSM parameter holding enforce / dry-run / off."""

from __future__ import annotations

from aws_cdk import aws_ssm as ssm
from constructs import Construct

from fleet_remediation.contract.naming import mode_parameter_name


class KillSwitch(Construct):
    """Operators flip it with `aws ssm put-parameter --overwrite`; a deploy only rewrites it when the
    environment's ``mode`` in cdk.json changes."""

    def __init__(self, scope: Construct, construct_id: str, *, env_name: str, initial_mode: str) -> None:
        super().__init__(scope, construct_id)
        # A plain string (not a token), so functions get a literal name they can validate.
        self.parameter_name = mode_parameter_name(env_name)
        self.parameter = ssm.StringParameter(
            self,
            "Mode",
            parameter_name=self.parameter_name,
            string_value=initial_mode,
            allowed_pattern="^(enforce|dry-run|off)$",
            description="LiveKit Fleet Remediation mode: enforce | dry-run | off (read within a minute)",
        )
