"""The worker drainer's section of an environment in cdk.json (validated at synth)."""

from __future__ import annotations

from pydantic import Field, model_validator

from fleet_remediation.config import StrictModel
from fleet_remediation.drainer_policy import DrainerPolicy

# Kept free by the function for the steps it runs after its reads (see executor.STEP_BUDGET_SECONDS).
STEP_BUDGET_SECONDS = 8
REPORT_MARGIN_SECONDS = 3


class DrainerVpcConfig(StrictModel):
    """Run the drainer inside the agents' VPC so it can read each task's ``/worker`` endpoint."""

    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]+$")
    subnet_ids: tuple[str, ...] = Field(min_length=1)
    security_group_ids: tuple[str, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _ids_look_like_ids(self) -> DrainerVpcConfig:
        for index, subnet in enumerate(self.subnet_ids):
            if not subnet.startswith("subnet-"):
                raise ValueError(f"subnet_ids[{index}] {subnet!r} is not a subnet id")
        for index, group in enumerate(self.security_group_ids):
            if not group.startswith("sg-"):
                raise ValueError(f"security_group_ids[{index}] {group!r} is not a security group id")
        return self


class DrainerConfig(StrictModel):
    schedule_minutes: int = Field(default=1, ge=1, le=60, description="Reconcile tick.")
    timeout_seconds: int = Field(default=60, ge=20, le=900, description="Lambda timeout.")
    livekit_request_timeout_seconds: float = Field(default=5.0, gt=0, le=30)
    ecs_request_timeout_seconds: float = Field(default=5.0, gt=0, le=30)
    insights_timeout_seconds: float = Field(
        default=15.0, gt=0, le=300, description="Per Logs Insights query."
    )
    agent_log_stream_prefix: str = Field(
        default="agent", min_length=1, description="awslogs-stream-prefix of the agent container."
    )
    agent_container_name: str | None = Field(
        default=None, description="The agent container's name (default: the ECS service name)."
    )
    vpc: DrainerVpcConfig | None = None
    policy: DrainerPolicy = DrainerPolicy()

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> DrainerConfig:
        # Two Insights queries (statistics, then job sightings), the steps, and the report.
        needed = 2 * self.insights_timeout_seconds + STEP_BUDGET_SECONDS + REPORT_MARGIN_SECONDS
        if needed >= self.timeout_seconds:
            raise ValueError(
                f"insights_timeout_seconds ({self.insights_timeout_seconds}) x 2 + {STEP_BUDGET_SECONDS} s "
                f"of steps + {REPORT_MARGIN_SECONDS} s must be below timeout_seconds ({self.timeout_seconds})"
            )
        return self
