"""``FleetRemediation`` in a team's own stack: its props (name prefix, references, an existing topic),
the checks that fail synth naming the field, and the standalone stack as a thin user of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns

from livekit_fleet_remediation import AgentServiceResources, EnvironmentConfig, FleetRemediation
from livekit_fleet_remediation.config import ConfigError, load_environment
from livekit_fleet_remediation.stack import KEY_LOGICAL_ID
from tests.example_environments import REPO, example_context
from tests.feature_flags import recommended_flags
from tests.infra.conftest import Synthesized
from tests.resource_names import named_resources, retained_with_fixed_names

ACCOUNT, REGION = "111111111111", "ap-northeast-2"
CLUSTER, SERVICE = "ppi-livekit-staging", "ppi-livekit-agent"


def _config() -> EnvironmentConfig:
    return load_environment(example_context(), "staging")


def _stack(account: str | None = ACCOUNT, region: str | None = REGION) -> cdk.Stack:
    app = cdk.App(context={k: v for k, v in example_context().items() if k != "environments"})
    return cdk.Stack(app, "Team", env=cdk.Environment(account=account, region=region))


def _cluster(stack: cdk.Stack, name: str = CLUSTER) -> ecs.ICluster:
    return ecs.Cluster.from_cluster_arn(stack, "Cluster", f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{name}")


def _function(template: assertions.Template, slug: str) -> dict[str, Any]:
    (function,) = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"FunctionName": f"lkfr-team-{slug}"}}
    ).values()
    variables: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return variables


def test_tokens_from_the_same_app_reach_detection_and_the_functions() -> None:
    stack = _stack()
    log_group = logs.LogGroup(stack, "AgentLogs", retention=logs.RetentionDays.ONE_MONTH)
    service_name = cdk.CfnParameter(stack, "AgentServiceName").value_as_string
    cluster = _cluster(stack)
    service = ecs.FargateService.from_fargate_service_attributes(
        stack, "Service", cluster=cluster, service_name=service_name
    )
    agents = AgentServiceResources(name="agents", cluster=cluster, service=service, log_group=log_group)
    remediation = FleetRemediation(
        stack, "Remediation", name_prefix="team", config=_config(), agent_services=[agents]
    )
    template = assertions.Template.from_stack(stack)
    (log_group_id,) = template.find_resources("AWS::Logs::LogGroup", {"Properties": {"RetentionInDays": 30}})
    drainer = _function(template, "agents-worker-drainer")
    assert drainer["ECS_SERVICE"] == {"Ref": "AgentServiceName"}
    assert drainer["AGENT_LOG_GROUP"] == {"Ref": log_group_id}
    assert drainer["ECS_CLUSTER"] == CLUSTER
    assert {"Ref": "AgentServiceName"} in _function(template, "zombie-reaper")["AGENT_SERVICES"]["Fn::Join"][
        1
    ]
    filters = template.find_resources("AWS::Logs::MetricFilter")
    assert filters
    assert all(f["Properties"]["LogGroupName"] == {"Ref": log_group_id} for f in filters.values())
    assert remediation.config.agent_service.ecs_cluster == CLUSTER


@pytest.mark.parametrize(
    ("reference", "field"),
    [
        (lambda stack: {"cluster": _cluster(stack, "another-cluster")}, r"agent_services\[0\]\.ecs_cluster"),
        (
            lambda stack: {"log_group": logs.LogGroup.from_log_group_name(stack, "Logs", "/other/agent")},
            r"agent_services\[0\]\.agent_log_group",
        ),
    ],
)
def test_a_literal_reference_that_contradicts_the_config_fails_naming_the_field(
    reference: Callable[[cdk.Stack], dict[str, Any]], field: str
) -> None:
    stack = _stack()
    agents = AgentServiceResources(name="agents", **reference(stack))
    with pytest.raises(ConfigError, match=field):
        FleetRemediation(stack, "Remediation", name_prefix="team", config=_config(), agent_services=[agents])


def test_a_literal_reference_replacing_a_token_is_checked_like_the_config() -> None:
    stack = _stack()
    config = _config()
    created = logs.LogGroup(stack, "Created").log_group_name
    service = config.agent_service.model_copy(update={"agent_log_group": created})
    config = config.model_copy(update={"agent_services": [service]})
    agents = AgentServiceResources(
        name="agents", log_group=logs.LogGroup.from_log_group_name(stack, "Logs", "/" + "x" * 600)
    )
    with pytest.raises(
        ConfigError, match=r"agent_services\[0\]\.agent_log_group: String should have at most"
    ):
        FleetRemediation(stack, "Remediation", name_prefix="team", config=config, agent_services=[agents])


def test_a_reference_must_name_an_agent_service_of_the_config() -> None:
    stack = _stack()
    with pytest.raises(ConfigError, match=r"no agent service named 'tutors' .*\(have: agents\)"):
        FleetRemediation(
            stack,
            "Remediation",
            name_prefix="team",
            config=_config(),
            agent_services=[AgentServiceResources(name="tutors", cluster=_cluster(stack))],
        )


@pytest.mark.parametrize(
    ("account", "region", "message"),
    [("222222222222", REGION, "config.account is '111111111111'"), (ACCOUNT, "eu-west-1", "config.region")],
)
def test_the_config_must_deploy_where_the_enclosing_stack_does(
    account: str, region: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        FleetRemediation(_stack(account, region), "Remediation", name_prefix="team", config=_config())


def test_an_environment_agnostic_stack_takes_the_configs_region() -> None:
    stack = _stack(None, None)
    FleetRemediation(stack, "Remediation", name_prefix="team", config=_config())
    assert _function(assertions.Template.from_stack(stack), "zombie-reaper")["ENVIRONMENT_NAME"] == "team"


@pytest.mark.parametrize("prefix", ["Team", "team_a", "-team", "t" * 33, ""])
def test_the_name_prefix_is_checked(prefix: str) -> None:
    with pytest.raises(ConfigError, match="name_prefix"):
        FleetRemediation(_stack(), "Remediation", name_prefix=prefix, config=_config())


def test_an_existing_topic_by_reference_replaces_the_new_one() -> None:
    stack = _stack()
    arn = f"arn:aws:sns:{REGION}:{ACCOUNT}:oncall"
    topic = sns.Topic.from_topic_arn(stack, "Oncall", arn)
    remediation = FleetRemediation(
        stack, "Remediation", name_prefix="team", config=_config(), notification_topic=topic
    )
    template = assertions.Template.from_stack(stack)
    template.resource_count_is("AWS::SNS::Topic", 0)
    assert remediation.topic is topic
    assert _function(template, "zombie-reaper")["NOTIFICATION_TOPIC_ARN"] == arn
    alarm = template.find_resources("AWS::CloudWatch::CompositeAlarm")
    assert all(arn in a["Properties"]["AlarmActions"] for a in alarm.values())


def test_a_referenced_topic_that_contradicts_the_configs_fails() -> None:
    stack = _stack()
    config = _config().model_copy(
        update={
            "notifications": _config().notifications.model_copy(
                update={"topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:a"}
            )
        }
    )
    topic = sns.Topic.from_topic_arn(stack, "Oncall", f"arn:aws:sns:{REGION}:{ACCOUNT}:b")
    with pytest.raises(ConfigError, match=r"notifications\.topic_arn"):
        FleetRemediation(stack, "Remediation", name_prefix="team", config=config, notification_topic=topic)


def test_the_standalone_stack_keeps_the_logical_ids_of_its_resources(staging: Synthesized) -> None:
    resources = staging.template.to_json()["Resources"]
    assert resources[KEY_LOGICAL_ID]["Type"] == "AWS::KMS::Key"
    manifest = json.loads((staging.template_path.parent / "manifest.json").read_text())
    stack_tags = manifest["artifacts"][staging.stack.stack_name]["properties"]["tags"]
    assert stack_tags == {"livekit-fleet-remediation:environment": "staging"}
    functions = staging.template.find_resources("AWS::Lambda::Function")
    # The function constructs' ids start the functions' logical ids, as when the stack held them;
    # an agent service's own functions sit under its construct (Service-<name>).
    assert sorted(logical_id.split("Function")[0] for logical_id in functions) == [
        "ServiceagentsTtsReachResponder",
        "ServiceagentsWorkerDrainer",
        "ZombieReaper",
    ]


def test_two_instances_with_chat_channels_in_one_stack_name_nothing_alike() -> None:
    stack = _stack()
    prod = load_environment(example_context(), "prod").model_copy(
        update={"account": ACCOUNT, "region": REGION}
    )
    assert prod.notifications.chat is not None
    for prefix in ("blue", "green"):
        FleetRemediation(stack, prefix, name_prefix=prefix, config=prod)
    names = named_resources(assertions.Template.from_stack(stack).to_json())
    assert [name for name, count in Counter(names.values()).items() if count > 1] == []
    assert any(name.startswith("AWS::Chatbot::CustomAction lkfr-green-") for name in names.values())


def test_nothing_the_standalone_stacks_retain_has_a_fixed_name(synth: Callable[..., Synthesized]) -> None:
    for env_name in ("staging", "prod"):
        template = synth(env_name).template.to_json()
        assert retained_with_fixed_names(template) == []
    (ledger,) = (
        synth("staging")
        .template.find_resources("AWS::DynamoDB::Table", {"DeletionPolicy": "Retain"})
        .values()
    )
    assert "TableName" not in ledger["Properties"]


def test_the_standalone_stack_is_nag_clean_under_the_flags_cdk_init_writes(
    synth: Callable[..., Synthesized],
) -> None:
    context = {**recommended_flags(), "environments": example_context()["environments"]}
    synthesized = synth("prod", context)
    for found in (synthesized.annotations.find_error, synthesized.annotations.find_warning):
        assert found("*", assertions.Match.string_like_regexp("AwsSolutions-.*")) == []


def test_importing_the_package_does_not_load_the_cdk() -> None:
    code = "import sys, livekit_fleet_remediation as p; p.EnvironmentConfig; print('aws_cdk' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().lower()) is False


def test_the_standalone_app_without_a_configuration_file_says_what_to_pass(tmp_path: Path) -> None:
    environment = {name: value for name, value in os.environ.items() if name != "LKFR_CONFIG"}
    done = subprocess.run(
        [sys.executable, str(REPO / "cdk" / "app.py"), "staging", str(tmp_path / "out")],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "no configuration file environments.json" in done.stderr
    assert "-c config=PATH" in done.stderr
    assert "examples/standalone/environments.json shows the shape" in done.stderr
