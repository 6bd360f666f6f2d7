"""A team's own CDK app with LiveKit Fleet Remediation inside its stack: one instance per agent
service, each on existing resources by reference. `cdk synth` here, with the packages installed."""

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from cdk_nag import AwsSolutionsChecks

from livekit_fleet_remediation import AgentServiceResources, EnvironmentConfig, FleetRemediation

ACCOUNT, REGION = "123456789012", "eu-west-1"


def build(outdir: str | None = None, context: dict[str, Any] | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir, context=context)
    stack = cdk.Stack(app, "VoiceAgents", env=cdk.Environment(account=ACCOUNT, region=REGION))
    cluster = ecs.Cluster.from_cluster_arn(stack, "Agents", f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/agents")
    for prefix in ("tutor", "support"):
        service = ecs.FargateService.from_fargate_service_attributes(
            stack, f"{prefix}-service", cluster=cluster, service_name=f"{prefix}-agent"
        )
        log_group = logs.LogGroup.from_log_group_name(stack, f"{prefix}-logs", f"/agents/{prefix}")
        agents = AgentServiceResources(name="agents", cluster=cluster, service=service, log_group=log_group)
        config = EnvironmentConfig(
            account=ACCOUNT,
            region=REGION,
            agent_services=[agents.agent_service()],
            livekit_url=f"https://livekit.{prefix}.example.com",
            livekit_secret_name=f"livekit/{prefix}/api-credentials",
            runbook_base_url="https://github.com/example/livekit-fleet-remediation/blob/main",
            notifications={"emails": [f"oncall-{prefix}@example.com"]},
        )
        FleetRemediation(
            stack, f"Remediation-{prefix}", name_prefix=prefix, config=config, agent_services=[agents]
        )
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app


if __name__ == "__main__":
    build().synth()
