"""The dashboard's per-worker views as saved Logs Insights queries (``AWS::Logs::QueryDefinition``,
free until run): nothing but the agents' logs can break a signal down by task without a metric
series per task, and a widget would scan them on every load. A text widget names them and says
what a run costs."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.agent_service import AgentServiceRemediation


def add_per_worker_queries(
    scope: Construct, env_name: str, service: AgentServiceRemediation, view: EnvironmentConfig
) -> cloudwatch.TextWidget:
    """Saves the service's per-worker queries under ``scope``; the text widget that names them."""
    group = view.agent_service.agent_log_group
    catalog = view.detection.catalog()
    # Counts from the agent package's summaries and from per-response lines alike.
    reach_over_time = "\n| ".join(
        [f"filter {catalog.tts_selector()}", f"stats {catalog.tts_sums()} by bin(5m), @logStream"]
    )
    queries = [
        *service.detection.per_worker_queries(),
        (
            "slow VAD warnings per minute, per worker",
            catalog.slow_vad.insights_query("stats count(*) as warnings by bin(1m), @logStream"),
        ),
        ("TTS reach per worker over time (5 min)", reach_over_time),
    ]
    names = []
    for index, (title, query) in enumerate(queries):
        name = f"lkfr/{env_name}/{service.name}/{title}"
        logs.CfnQueryDefinition(
            scope,
            f"{service.name}PerWorkerQuery{index}",
            name=name,
            query_string=query,
            log_group_names=[group],
        )
        names.append(name)
    listed = "\n".join(f"- `{name}`" for name in names)
    return cloudwatch.TextWidget(
        markdown=f"### {service.name}: per worker (saved Logs Insights queries)\n{listed}\n\n"
        "Run one from CloudWatch → Logs Insights → Saved queries over the time range you need: "
        f"each run scans `{group}` over that range ($0.005 a GB in us-east-1; "
        "`lkfr cost` prints the GB an hour of it holds) and takes one of the account's "
        "concurrent Logs Insights queries, which the functions' looks share.",
        width=24,
        height=4,
    )
