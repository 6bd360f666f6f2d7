"""A team's own CDK app with LiveKit Fleet Remediation inside its stack, on existing resources by
reference: the "calls" instance covers two agent services (inbound and outbound calls, each its own
ECS service and log group, each with its own detection, responder and drainer, one reaper, kill
switch and dashboard between them); the "tutor" instance, beside it in the same stack, covers one.
`cdk synth` here, with the packages installed."""

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs

from livekit_fleet_remediation import AgentServiceResources, EnvironmentConfig, FleetRemediation
from livekit_fleet_remediation.nag import apply_aws_solutions_checks

ACCOUNT, REGION = "123456789012", "eu-west-1"
# Each instance's name prefix and the agent services it covers.
INSTANCES = {"calls": ("inbound", "outbound"), "tutor": ("agents",)}


def _services(stack: cdk.Stack, cluster: ecs.ICluster, prefix: str) -> list[AgentServiceResources]:
    """Each agent service of ``prefix`` by reference: its ECS service and its agents' log group."""
    return [
        AgentServiceResources(
            name=name,
            cluster=cluster,
            service=ecs.FargateService.from_fargate_service_attributes(
                stack, f"{prefix}-{name}-service", cluster=cluster, service_name=f"{prefix}-{name}-agent"
            ),
            log_group=logs.LogGroup.from_log_group_name(
                stack, f"{prefix}-{name}-logs", f"/agents/{prefix}/{name}"
            ),
        )
        for name in INSTANCES[prefix]
    ]


def build(outdir: str | None = None, context: dict[str, Any] | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir, context=context)
    stack = cdk.Stack(app, "VoiceAgents", env=cdk.Environment(account=ACCOUNT, region=REGION))
    cluster = ecs.Cluster.from_cluster_arn(stack, "Agents", f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/agents")
    for prefix in INSTANCES:
        services = _services(stack, cluster, prefix)
        config = EnvironmentConfig(
            account=ACCOUNT,
            region=REGION,
            agent_services=[service.agent_service() for service in services],
            livekit_url=f"https://livekit.{prefix}.example.com",
            livekit_secret_name=f"livekit/{prefix}/api-credentials",
            runbook_base_url="https://docs.example.com/fleet-remediation",
            notifications={"emails": [f"oncall-{prefix}@example.com"]},
        )
        FleetRemediation(
            stack, f"Remediation-{prefix}", name_prefix=prefix, config=config, agent_services=services
        )
    # cdk-nag 2: cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True)); cdk-nag 3:
    # cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True)). This does either.
    apply_aws_solutions_checks(app)
    return app


if __name__ == "__main__":
    build().synth()
